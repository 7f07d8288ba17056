SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @Moved TABLE (Id varchar(36) NULL, Queue varchar(255) NULL, Type nvarchar(255) NULL, Payload nvarchar(max) NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255) NULL, Priority int NULL, Status tinyint NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, ScheduledAtUtc datetime2(3) NULL, CreatedAtUtc datetime2(3) NULL, EnqueuedAtUtc datetime2(3) NULL, StartedAtUtc datetime2(3) NULL, LastUpdatedUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, LastModifiedBy nvarchar(100) NULL, LastError nvarchar(max) NULL, Progress float NULL, ProgressNote nvarchar(500) NULL, TraceContext varchar(2048) NULL, PayloadVersion int NULL, GroupKey nvarchar(255) COLLATE Latin1_General_100_BIN2 NULL, BatchId varchar(36) NULL, WaitingOn int NULL, HasDependents bit NULL, FailureReason smallint NULL, ErrorDetails nvarchar(max) NULL, FailedAtUtc datetime2(3) NULL, DurationMs bigint NULL);
DECLARE @Ids TABLE (Id varchar(36) NOT NULL PRIMARY KEY);
BEGIN TRAN;
INSERT INTO @Ids (Id) SELECT TOP (@0) d.Id FROM [chokaq].[JobsDLQ] AS d WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK) ORDER BY d.FailedAtUtc, d.Id;
DELETE d
OUTPUT deleted.Id, deleted.Queue, deleted.Type, deleted.Payload, deleted.Tags, deleted.IdempotencyKey, deleted.Priority, deleted.Status, deleted.AttemptCount, deleted.WorkerId, deleted.ScheduledAtUtc, deleted.CreatedAtUtc, deleted.EnqueuedAtUtc, deleted.StartedAtUtc, deleted.LastUpdatedUtc, deleted.CreatedBy, deleted.LastModifiedBy, deleted.LastError, deleted.Progress, deleted.ProgressNote, deleted.TraceContext, deleted.PayloadVersion, deleted.GroupKey, deleted.BatchId, deleted.WaitingOn, deleted.HasDependents, deleted.FailureReason, deleted.ErrorDetails, deleted.FailedAtUtc, deleted.DurationMs INTO @Moved (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, ScheduledAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, Progress, ProgressNote, TraceContext, PayloadVersion, GroupKey, BatchId, WaitingOn, HasDependents, FailureReason, ErrorDetails, FailedAtUtc, DurationMs)
FROM @Ids AS i
INNER LOOP JOIN [chokaq].[JobsDLQ] AS d WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON d.Id = i.Id;
INSERT INTO [chokaq].[JobsHot] (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, LeaseId, HeartbeatUtc, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, CancelRequestedUtc, Progress, ProgressNote, TraceContext, PayloadVersion, GroupKey, BatchId, WaitingOn, HasDependents)
SELECT m.Id, m.Queue, m.Type, m.Payload, m.Tags, NULL, m.Priority, 0, 0, NULL, NULL, NULL, NULL, @now, m.CreatedAtUtc, @now, NULL, @now, m.CreatedBy, ISNULL(@1, m.LastModifiedBy), ISNULL(m.ErrorDetails, m.LastError), NULL, NULL, NULL, m.TraceContext, ISNULL(m.PayloadVersion, 1), ISNULL(m.GroupKey, CASE WHEN EXISTS (SELECT 1 FROM [chokaq].[Queues] AS gq WHERE gq.Name = m.Queue AND (gq.GroupConcurrency IS NOT NULL OR gq.GroupRateMax IS NOT NULL)) THEN N'' END), m.BatchId, m.WaitingOn, ISNULL(m.HasDependents, 0)
FROM @Moved AS m;
DECLARE @BatchReopened TABLE (BatchId varchar(36) NOT NULL PRIMARY KEY, N int NOT NULL);
INSERT INTO @BatchReopened (BatchId, N)
SELECT mv.BatchId, COUNT(*) FROM @Moved AS mv
WHERE mv.BatchId IS NOT NULL AND NOT EXISTS (SELECT 1 FROM [chokaq].[BatchCallbacks] AS x WHERE x.JobId = mv.Id)
GROUP BY mv.BatchId;
UPDATE b SET b.Failed = b.Failed - d.N, b.SettledAtUtc = NULL
FROM @BatchReopened AS d
INNER LOOP JOIN [chokaq].[Batches] AS b ON b.Id = d.BatchId;
DECLARE @NewQueues TABLE (Queue varchar(255) NOT NULL PRIMARY KEY);
INSERT INTO @NewQueues (Queue) SELECT DISTINCT n.Queue FROM @Moved AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[Queues] AS q WHERE q.Name = n.Queue)
   OR NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS s WHERE s.Queue = n.Queue);
INSERT INTO [chokaq].[Queues] (Name) SELECT n.Queue FROM @NewQueues AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[Queues] AS q WITH (UPDLOCK, HOLDLOCK) WHERE q.Name = n.Queue);
INSERT INTO [chokaq].[StatsSummary] (Queue) SELECT n.Queue FROM @NewQueues AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS s WITH (UPDLOCK, HOLDLOCK) WHERE s.Queue = n.Queue);
DECLARE @StatsDelta TABLE (Queue varchar(255) NOT NULL PRIMARY KEY, ResurrectedTotal bigint NOT NULL);
INSERT INTO @StatsDelta (Queue, ResurrectedTotal)
SELECT g.Queue, SUM(CAST(1 AS bigint)) FROM @Moved AS g GROUP BY g.Queue;
INSERT INTO [chokaq].[StatsSummary] (Queue)
SELECT d.Queue FROM @StatsDelta AS d
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = d.Queue);
UPDATE st SET st.ResurrectedTotal = st.ResurrectedTotal + d.ResurrectedTotal, st.LastActivityUtc = @now
FROM @StatsDelta AS d
INNER LOOP JOIN [chokaq].[StatsSummary] AS st ON st.Queue = d.Queue;
COMMIT;
SELECT mv.Id FROM @Moved AS mv;
