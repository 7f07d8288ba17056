SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @In TABLE (Ord int NOT NULL PRIMARY KEY, Id varchar(36) NOT NULL, Queue varchar(255) NOT NULL, Type nvarchar(255) NOT NULL, Payload nvarchar(max) NOT NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255) NULL, Priority int NOT NULL, ScheduledAtUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, TraceContext varchar(2048) NULL, PayloadVersion int NOT NULL, GroupKey nvarchar(255) COLLATE Latin1_General_100_BIN2 NULL, BatchId varchar(36) NULL, Holder varchar(36) NULL);
DECLARE @Created TABLE (Id varchar(36) NOT NULL PRIMARY KEY);
DECLARE @NewQueues TABLE (Queue varchar(255) NOT NULL PRIMARY KEY);
INSERT INTO @In (Ord, Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, ScheduledAtUtc, CreatedBy, TraceContext, PayloadVersion, GroupKey, BatchId)
SELECT CAST(a.[key] AS int), j.Id, j.Queue, j.Type, j.Payload, j.Tags, j.IdempotencyKey, j.Priority,
  CASE WHEN j.DelayMs IS NOT NULL THEN DATEADD(MILLISECOND, CAST(j.DelayMs % 1000 AS int), DATEADD(SECOND, CAST(j.DelayMs / 1000 AS int), @now)) ELSE CONVERT(datetime2(3), j.RunAt, 126) END, j.CreatedBy, j.TraceContext, ISNULL(j.PayloadVersion, 1), j.GroupKey, j.BatchId
FROM OPENJSON(@0) AS a
CROSS APPLY OPENJSON(a.value) WITH (Id varchar(36) '$.id', Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', Payload nvarchar(max) '$.payload', Tags nvarchar(max) '$.tags', IdempotencyKey nvarchar(255) '$.key', Priority int '$.priority', DelayMs bigint '$.delayMs', RunAt varchar(23) '$.runAt', CreatedBy nvarchar(100) '$.createdBy', TraceContext varchar(2048) '$.traceContext', PayloadVersion int '$.payloadVersion', GroupKey nvarchar(255) '$.group', BatchId varchar(36) '$.batchId') AS j;
-- An id repeated inside the chunk: later copies return the first copy.
UPDATE i SET i.Holder = i.Id FROM @In AS i WHERE EXISTS (SELECT 1 FROM @In AS e WHERE e.Id = i.Id AND e.Ord < i.Ord);
-- An id already stored (any pillar), e.g. a retry after an ambiguous commit: it reports its own
-- id, never the holder of its key (its job may have finished and freed the key for another).
UPDATE i SET i.Holder = i.Id FROM @In AS i
WHERE i.Holder IS NULL AND (EXISTS (SELECT 1 FROM [chokaq].[JobsHot] AS h WHERE h.Id = i.Id)
  OR EXISTS (SELECT 1 FROM [chokaq].[JobsArchive] AS a WHERE a.Id = i.Id) OR EXISTS (SELECT 1 FROM [chokaq].[JobsDLQ] AS d WHERE d.Id = i.Id));
BEGIN TRAN;
INSERT INTO @NewQueues (Queue) SELECT DISTINCT n.Queue FROM @In AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[Queues] AS q WHERE q.Name = n.Queue)
   OR NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS s WHERE s.Queue = n.Queue);
INSERT INTO [chokaq].[Queues] (Name) SELECT n.Queue FROM @NewQueues AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[Queues] AS q WITH (UPDLOCK, HOLDLOCK) WHERE q.Name = n.Queue);
INSERT INTO [chokaq].[StatsSummary] (Queue) SELECT n.Queue FROM @NewQueues AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS s WITH (UPDLOCK, HOLDLOCK) WHERE s.Queue = n.Queue);
INSERT INTO [chokaq].[JobsHot] (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, LastUpdatedUtc, CreatedBy, TraceContext, PayloadVersion, BatchId, GroupKey)
OUTPUT inserted.Id INTO @Created (Id)
SELECT i.Id, i.Queue, i.Type, i.Payload, i.Tags, i.IdempotencyKey, i.Priority, 7, 0, i.ScheduledAtUtc, ISNULL(i.ScheduledAtUtc, @now), @now, @now, @now, i.CreatedBy, i.TraceContext, i.PayloadVersion, i.BatchId,
  ISNULL(i.GroupKey, CASE WHEN EXISTS (SELECT 1 FROM [chokaq].[Queues] AS gq WHERE gq.Name = i.Queue AND (gq.GroupConcurrency IS NOT NULL OR gq.GroupRateMax IS NOT NULL)) THEN N'' END)
FROM @In AS i
WHERE i.Holder IS NULL
  AND NOT EXISTS (SELECT 1 FROM [chokaq].[JobsHot] AS h WHERE h.Id = i.Id)
  AND NOT EXISTS (SELECT 1 FROM [chokaq].[JobsArchive] AS a WHERE a.Id = i.Id)
  AND NOT EXISTS (SELECT 1 FROM [chokaq].[JobsDLQ] AS d WHERE d.Id = i.Id);
COMMIT;
SELECT i.Ord, COALESCE(i.Holder, i.Id) AS Id, CASE WHEN c.Id IS NOT NULL AND i.Holder IS NULL THEN 1 ELSE 0 END AS Created
FROM @In AS i LEFT JOIN @Created AS c ON c.Id = i.Id
ORDER BY i.Ord;
