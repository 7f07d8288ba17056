SET NOCOUNT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @Callbacks TABLE (BatchId varchar(36) NULL, Kind smallint NULL, JobId varchar(36) NULL, Queue varchar(255) NULL, Type nvarchar(255) NULL, Payload nvarchar(max) NULL, Tags nvarchar(max) NULL, Priority int NULL, CreatedBy nvarchar(100) NULL, TraceContext varchar(2048) NULL, PayloadVersion int NULL, GroupKey nvarchar(255) COLLATE Latin1_General_100_BIN2 NULL);
DECLARE @NewQueues TABLE (Queue varchar(255) NOT NULL PRIMARY KEY);
INSERT INTO [chokaq].[Batches] (Id, CreatedAtUtc, CreatedBy, Total) VALUES (CAST(@0 AS varchar(36)), @now, @1, @2);
INSERT INTO @Callbacks (BatchId, Kind, JobId, Queue, Type, Payload, Tags, Priority, CreatedBy, TraceContext, PayloadVersion, GroupKey)
SELECT CAST(@0 AS varchar(36)), j.Kind, j.JobId, j.Queue, j.Type, j.Payload, j.Tags, j.Priority, j.CreatedBy, j.TraceContext, j.PayloadVersion, j.GroupKey
FROM OPENJSON(@3) WITH (Kind smallint '$.kind', JobId varchar(36) '$.id', Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', Payload nvarchar(max) '$.payload', Tags nvarchar(max) '$.tags', Priority int '$.priority', CreatedBy nvarchar(100) '$.createdBy', TraceContext varchar(2048) '$.traceContext', PayloadVersion int '$.payloadVersion', GroupKey nvarchar(255) '$.group') AS j;
INSERT INTO [chokaq].[BatchCallbacks] (BatchId, Kind, JobId, Queue, Type, Payload, Tags, Priority, CreatedBy, TraceContext, PayloadVersion, GroupKey)
SELECT c.BatchId, c.Kind, c.JobId, c.Queue, c.Type, c.Payload, c.Tags, c.Priority, c.CreatedBy, c.TraceContext, c.PayloadVersion, c.GroupKey
FROM @Callbacks AS c;
INSERT INTO @NewQueues (Queue) SELECT DISTINCT n.Queue FROM @Callbacks AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[Queues] AS q WHERE q.Name = n.Queue)
   OR NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS s WHERE s.Queue = n.Queue);
INSERT INTO [chokaq].[Queues] (Name) SELECT n.Queue FROM @NewQueues AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[Queues] AS q WITH (UPDLOCK, HOLDLOCK) WHERE q.Name = n.Queue);
INSERT INTO [chokaq].[StatsSummary] (Queue) SELECT n.Queue FROM @NewQueues AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS s WITH (UPDLOCK, HOLDLOCK) WHERE s.Queue = n.Queue);
