SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @bucket datetime2(0) = CAST(DATEADD(SECOND, -DATEPART(SECOND, @now), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now)) AS datetime2(0));
DECLARE @Moved TABLE (Id varchar(36) NULL, Queue varchar(255) NULL, Type nvarchar(255) NULL, Payload nvarchar(max) NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255) NULL, Priority int NULL, Status tinyint NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, LeaseId varchar(36) NULL, HeartbeatUtc datetime2(3) NULL, ScheduledAtUtc datetime2(3) NULL, DueAtUtc datetime2(3) NULL, CreatedAtUtc datetime2(3) NULL, EnqueuedAtUtc datetime2(3) NULL, StartedAtUtc datetime2(3) NULL, LastUpdatedUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, LastModifiedBy nvarchar(100) NULL, LastError nvarchar(max) NULL, CancelRequestedUtc datetime2(3) NULL, Progress float NULL, ProgressNote nvarchar(500) NULL, TraceContext varchar(2048) NULL, PayloadVersion int NULL, GroupKey nvarchar(255) COLLATE Latin1_General_100_BIN2 NULL, BatchId varchar(36) NULL, WaitingOn int NULL, HasDependents bit NULL);
DECLARE @Rules TABLE (Queue varchar(255) NOT NULL, Type nvarchar(255) NULL, Retry bit NOT NULL);
DECLARE @Zombies TABLE (Id varchar(36) NOT NULL PRIMARY KEY, Retry bit NOT NULL, TimeoutMs bigint NOT NULL, Locked bit NOT NULL);
DECLARE @Retried TABLE (Id varchar(36) NULL, Queue varchar(255) NULL, Type nvarchar(255) NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255) NULL, Priority int NULL, Status tinyint NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, LeaseId varchar(36) NULL, HeartbeatUtc datetime2(3) NULL, ScheduledAtUtc datetime2(3) NULL, CreatedAtUtc datetime2(3) NULL, EnqueuedAtUtc datetime2(3) NULL, StartedAtUtc datetime2(3) NULL, LastUpdatedUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, LastModifiedBy nvarchar(100) NULL, LastError nvarchar(max) NULL, CancelRequestedUtc datetime2(3) NULL, Progress float NULL, ProgressNote nvarchar(500) NULL, TraceContext varchar(2048) NULL, PayloadVersion int NULL, GroupKey nvarchar(255) COLLATE Latin1_General_100_BIN2 NULL, BatchId varchar(36) NULL, WaitingOn int NULL, HasDependents bit NULL);
INSERT INTO @Rules (Queue, Type, Retry)
SELECT x.Queue, x.Type, x.Retry FROM OPENJSON(@2) WITH (Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', Retry bit '$.retry') AS x
WHERE x.Queue IS NOT NULL AND x.Retry IS NOT NULL;
-- The shortest timeout of any queue bounds the index seek: newer heartbeats are not read.
DECLARE @shortest bigint = (SELECT MIN(x.Ms) FROM (SELECT @0 AS Ms UNION ALL SELECT CAST(q.ZombieTimeoutSeconds AS bigint) * 1000 FROM [chokaq].[Queues] AS q WHERE q.ZombieTimeoutSeconds IS NOT NULL) AS x);
DECLARE @cutoff datetime2(3) = DATEADD(MILLISECOND, -CAST(@shortest % 1000 AS int), DATEADD(SECOND, -CAST(@shortest / 1000 AS int), @now));
-- Candidates without update locks.
INSERT INTO @Zombies (Id, Retry, TimeoutMs, Locked)
SELECT TOP (@1) z.Id, CASE WHEN q.RetryZombies = 1 OR ISNULL(e.Retry, w.Retry) = 1 THEN 1 ELSE 0 END, ISNULL(CAST(q.ZombieTimeoutSeconds AS bigint) * 1000, @0), 0
FROM [chokaq].[JobsHot] AS z WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
LEFT JOIN [chokaq].[Queues] AS q ON q.Name = z.Queue
LEFT JOIN @Rules AS e ON e.Queue = z.Queue AND e.Type = z.Type
LEFT JOIN @Rules AS w ON w.Queue = z.Queue AND w.Type IS NULL
WHERE z.Status = 2 AND z.HeartbeatUtc < @cutoff
  AND DATEDIFF_BIG(MILLISECOND, z.HeartbeatUtc, @now) > ISNULL(CAST(q.ZombieTimeoutSeconds AS bigint) * 1000, @0)
ORDER BY z.HeartbeatUtc;
BEGIN TRAN;
-- Lock them by key (clustered Id first), re-checking under the lock.
UPDATE z SET z.Locked = 1
FROM @Zombies AS z
INNER LOOP JOIN [chokaq].[JobsHot] AS h WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON h.Id = z.Id
WHERE h.Status = 2 AND DATEDIFF_BIG(MILLISECOND, h.HeartbeatUtc, @now) > z.TimeoutMs;
UPDATE h SET h.Status = 0, h.WorkerId = NULL, h.LeaseId = NULL, h.HeartbeatUtc = NULL,
  h.ScheduledAtUtc = NULL, h.DueAtUtc = @now, h.HeldSinceUtc = NULL, h.LastError = @3, h.LastUpdatedUtc = @now
OUTPUT deleted.Id, deleted.Queue, deleted.Type, deleted.Tags, deleted.IdempotencyKey, deleted.Priority, deleted.Status, deleted.AttemptCount, deleted.WorkerId, deleted.LeaseId, deleted.HeartbeatUtc, deleted.ScheduledAtUtc, deleted.CreatedAtUtc, deleted.EnqueuedAtUtc, deleted.StartedAtUtc, deleted.LastUpdatedUtc, deleted.CreatedBy, deleted.LastModifiedBy, deleted.LastError, deleted.CancelRequestedUtc, deleted.Progress, deleted.ProgressNote, deleted.TraceContext, deleted.PayloadVersion, deleted.GroupKey, deleted.BatchId, deleted.WaitingOn, deleted.HasDependents INTO @Retried (Id, Queue, Type, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, LeaseId, HeartbeatUtc, ScheduledAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, CancelRequestedUtc, Progress, ProgressNote, TraceContext, PayloadVersion, GroupKey, BatchId, WaitingOn, HasDependents)
FROM [chokaq].[JobsHot] AS h INNER JOIN @Zombies AS z ON z.Id = h.Id AND z.Retry = 1 AND z.Locked = 1
WHERE h.Status = 2;
DELETE h
OUTPUT deleted.Id, deleted.Queue, deleted.Type, deleted.Payload, deleted.Tags, deleted.IdempotencyKey, deleted.Priority, deleted.Status, deleted.AttemptCount, deleted.WorkerId, deleted.LeaseId, deleted.HeartbeatUtc, deleted.ScheduledAtUtc, deleted.DueAtUtc, deleted.CreatedAtUtc, deleted.EnqueuedAtUtc, deleted.StartedAtUtc, deleted.LastUpdatedUtc, deleted.CreatedBy, deleted.LastModifiedBy, deleted.LastError, deleted.CancelRequestedUtc, deleted.Progress, deleted.ProgressNote, deleted.TraceContext, deleted.PayloadVersion, deleted.GroupKey, deleted.BatchId, deleted.WaitingOn, deleted.HasDependents INTO @Moved (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, LeaseId, HeartbeatUtc, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, CancelRequestedUtc, Progress, ProgressNote, TraceContext, PayloadVersion, GroupKey, BatchId, WaitingOn, HasDependents)
FROM [chokaq].[JobsHot] AS h INNER JOIN @Zombies AS z ON z.Id = h.Id AND z.Retry = 0 AND z.Locked = 1
WHERE h.Status = 2;
INSERT INTO [chokaq].[JobsDLQ] (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, ScheduledAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, Progress, ProgressNote, TraceContext, PayloadVersion, GroupKey, BatchId, WaitingOn, HasDependents, FailureReason, ErrorDetails, FailedAtUtc, DurationMs)
SELECT m.Id, m.Queue, m.Type, m.Payload, m.Tags, m.IdempotencyKey, m.Priority, 6, m.AttemptCount, m.WorkerId, m.ScheduledAtUtc, m.CreatedAtUtc, m.EnqueuedAtUtc, m.StartedAtUtc, @now, m.CreatedBy, ISNULL(NULL, m.LastModifiedBy), m.LastError, m.Progress, m.ProgressNote, m.TraceContext, m.PayloadVersion, m.GroupKey, m.BatchId, m.WaitingOn, m.HasDependents, 2, @3, @now, NULL
FROM @Moved AS m;
INSERT INTO [chokaq].[JobAttempts] (JobId, Seq, Attempt, WorkerId, LeaseId, StartedAtUtc, FinishedAtUtc, Outcome, Error, DurationMs)
SELECT a.Id, ISNULL((SELECT MAX(x.Seq) FROM [chokaq].[JobAttempts] AS x WHERE x.JobId = a.Id), 0) + 1,
  a.AttemptCount, a.WorkerId, a.LeaseId, a.StartedAtUtc, @now, a.Outcome, LEFT(a.Error, 4000),
  CASE WHEN a.StartedAtUtc IS NULL THEN NULL WHEN a.StartedAtUtc < @now THEN DATEDIFF_BIG(MILLISECOND, a.StartedAtUtc, @now) ELSE 0 END
FROM (SELECT r.Id, r.AttemptCount, r.WorkerId, r.LeaseId, r.StartedAtUtc, 'zombie' AS Outcome, @3 AS Error FROM @Retried AS r UNION ALL SELECT mv.Id, mv.AttemptCount, mv.WorkerId, mv.LeaseId, mv.StartedAtUtc, 'zombie', @3 FROM @Moved AS mv) AS a;
DECLARE @DepMoved TABLE (Id varchar(36) NOT NULL PRIMARY KEY);
DECLARE @DepSettled TABLE (JobId varchar(36) NOT NULL, State tinyint NOT NULL);
DECLARE @DepReleased TABLE (JobId varchar(36) NOT NULL PRIMARY KEY, N int NOT NULL);
INSERT INTO @DepMoved (Id) SELECT mv.Id FROM @Moved AS mv WHERE mv.HasDependents = 1;
IF EXISTS (SELECT 1 FROM @DepMoved)
BEGIN
UPDATE e SET e.State = CASE WHEN e.OnFailure = 1 THEN 2 ELSE 3 END, e.NeedsCheck = CASE WHEN e.OnFailure = 2 THEN 1 ELSE 0 END, e.SettledAtUtc = @now
OUTPUT inserted.JobId, inserted.State INTO @DepSettled (JobId, State)
FROM @DepMoved AS m
INNER LOOP JOIN [chokaq].[JobDependencies] AS e ON e.DependsOn = m.Id
WHERE e.State = 0 AND e.OnFailure <> 0;
INSERT INTO @DepReleased (JobId, N)
SELECT s.JobId, COUNT(*) FROM @DepSettled AS s WHERE s.State IN (1, 2) GROUP BY s.JobId;
UPDATE h SET h.WaitingOn = h.WaitingOn - d.N, h.Status = CASE WHEN h.WaitingOn - d.N = 0 THEN 0 ELSE 7 END,
  h.EnqueuedAtUtc = CASE WHEN h.WaitingOn - d.N = 0 THEN @now ELSE h.EnqueuedAtUtc END,
  h.DueAtUtc = CASE WHEN h.WaitingOn - d.N = 0 THEN ISNULL(h.ScheduledAtUtc, @now) ELSE h.DueAtUtc END,
  h.LastUpdatedUtc = @now
FROM @DepReleased AS d
INNER LOOP JOIN [chokaq].[JobsHot] AS h ON h.Id = d.JobId
WHERE h.Status = 7;
END;
DECLARE @BatchDelta TABLE (BatchId varchar(36) NOT NULL PRIMARY KEY, Succeeded int NOT NULL, Failed int NOT NULL);
INSERT INTO @BatchDelta (BatchId, Succeeded, Failed)
SELECT mv.BatchId, 0, COUNT(*) FROM @Moved AS mv
WHERE mv.BatchId IS NOT NULL AND NOT EXISTS (SELECT 1 FROM [chokaq].[BatchCallbacks] AS x WHERE x.JobId = mv.Id)
GROUP BY mv.BatchId;
DECLARE @BatchSettled TABLE (Id varchar(36) NOT NULL PRIMARY KEY, FiredBefore smallint NOT NULL, Fired smallint NOT NULL);
IF EXISTS (SELECT 1 FROM @BatchDelta)
BEGIN
UPDATE b SET b.Succeeded = b.Succeeded + d.Succeeded, b.Failed = b.Failed + d.Failed,
  b.SettledAtUtc = CASE WHEN b.Succeeded + d.Succeeded + b.Failed + d.Failed >= b.Total THEN @now END,
  b.Fired = b.Fired | CASE WHEN b.Succeeded + d.Succeeded + b.Failed + d.Failed >= b.Total THEN (1 | CASE WHEN b.Failed + d.Failed = 0 THEN 2 ELSE 4 END) ELSE 0 END
OUTPUT inserted.Id, deleted.Fired AS FiredBefore, inserted.Fired INTO @BatchSettled (Id, FiredBefore, Fired)
FROM @BatchDelta AS d
INNER LOOP JOIN [chokaq].[Batches] AS b ON b.Id = d.BatchId;
INSERT INTO [chokaq].[JobsHot] (Id, Queue, Type, Payload, Tags, Priority, Status, AttemptCount, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, LastUpdatedUtc, CreatedBy, TraceContext, PayloadVersion, BatchId, GroupKey)
SELECT c.JobId, c.Queue, c.Type, c.Payload, c.Tags, c.Priority, 0, 0, @now, @now, @now, @now, c.CreatedBy, c.TraceContext, c.PayloadVersion, c.BatchId,
  ISNULL(c.GroupKey, CASE WHEN EXISTS (SELECT 1 FROM [chokaq].[Queues] AS gq WHERE gq.Name = c.Queue AND (gq.GroupConcurrency IS NOT NULL OR gq.GroupRateMax IS NOT NULL)) THEN N'' END)
FROM @BatchSettled AS s
INNER JOIN [chokaq].[BatchCallbacks] AS c ON c.BatchId = s.Id AND (s.Fired & ~s.FiredBefore & c.Kind) <> 0;
END;
DECLARE @StatsDelta TABLE (Queue varchar(255) NOT NULL PRIMARY KEY, RetriedTotal bigint NOT NULL, FailedTotal bigint NOT NULL);
INSERT INTO @StatsDelta (Queue, RetriedTotal, FailedTotal)
SELECT g.Queue, SUM(CAST(g.Retried AS bigint)), SUM(CAST(g.Failed AS bigint)) FROM (SELECT r.Queue, 1 AS Retried, 0 AS Failed FROM @Retried AS r UNION ALL SELECT mv.Queue, 0, 1 FROM @Moved AS mv) AS g GROUP BY g.Queue;
INSERT INTO [chokaq].[StatsSummary] (Queue)
SELECT d.Queue FROM @StatsDelta AS d
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = d.Queue);
UPDATE st SET st.RetriedTotal = st.RetriedTotal + d.RetriedTotal, st.FailedTotal = st.FailedTotal + d.FailedTotal, st.LastActivityUtc = @now
FROM @StatsDelta AS d
INNER LOOP JOIN [chokaq].[StatsSummary] AS st ON st.Queue = d.Queue;
DECLARE @BucketDelta TABLE (Queue varchar(255) NOT NULL, Outcome tinyint NOT NULL, FailureReason smallint NOT NULL, N bigint NOT NULL, DurationCount bigint NOT NULL, TotalDurationMs bigint NOT NULL, MaxDurationMs bigint NOT NULL, PRIMARY KEY (Queue, Outcome, FailureReason));
INSERT INTO @BucketDelta (Queue, Outcome, FailureReason, N, DurationCount, TotalDurationMs, MaxDurationMs)
SELECT g.Queue, g.Outcome, g.FailureReason, COUNT_BIG(*), COUNT_BIG(g.DurationMs), ISNULL(SUM(g.DurationMs), 0), ISNULL(MAX(g.DurationMs), 0)
FROM (SELECT mv.Queue, CAST(1 AS tinyint) AS Outcome, CAST(2 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs FROM @Moved AS mv UNION ALL SELECT r.Queue, CAST(3 AS tinyint), CAST(2 AS smallint), CAST(NULL AS bigint) FROM @Retried AS r) AS g GROUP BY g.Queue, g.Outcome, g.FailureReason;
INSERT INTO [chokaq].[MetricBuckets] (BucketUtc, Queue, Outcome, FailureReason)
SELECT @bucket, d.Queue, d.Outcome, d.FailureReason FROM @BucketDelta AS d
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[MetricBuckets] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason);
UPDATE x SET x.CompletedCount = x.CompletedCount + d.N, x.DurationCount = x.DurationCount + d.DurationCount,
  x.TotalDurationMs = x.TotalDurationMs + d.TotalDurationMs,
  x.MaxDurationMs = CASE WHEN d.MaxDurationMs > x.MaxDurationMs THEN d.MaxDurationMs ELSE x.MaxDurationMs END
FROM @BucketDelta AS d
INNER LOOP JOIN [chokaq].[MetricBuckets] AS x ON x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason;
COMMIT;
SELECT 0 AS Kind, mv.Id, mv.Queue, mv.Type, mv.Tags, mv.IdempotencyKey, mv.Priority, mv.Status, mv.AttemptCount, mv.WorkerId, mv.LeaseId, CONVERT(varchar(33), mv.HeartbeatUtc, 126) + 'Z' AS HeartbeatUtc, CONVERT(varchar(33), mv.ScheduledAtUtc, 126) + 'Z' AS ScheduledAtUtc, CONVERT(varchar(33), mv.CreatedAtUtc, 126) + 'Z' AS CreatedAtUtc, CONVERT(varchar(33), mv.EnqueuedAtUtc, 126) + 'Z' AS EnqueuedAtUtc, CONVERT(varchar(33), mv.StartedAtUtc, 126) + 'Z' AS StartedAtUtc, CONVERT(varchar(33), mv.LastUpdatedUtc, 126) + 'Z' AS LastUpdatedUtc, mv.CreatedBy, mv.LastModifiedBy, mv.LastError, CONVERT(varchar(33), mv.CancelRequestedUtc, 126) + 'Z' AS CancelRequestedUtc, mv.Progress, mv.ProgressNote, mv.TraceContext, mv.PayloadVersion, mv.GroupKey, mv.BatchId, mv.WaitingOn, mv.HasDependents FROM @Moved AS mv
UNION ALL
SELECT 1 AS Kind, r.Id, r.Queue, r.Type, r.Tags, r.IdempotencyKey, r.Priority, r.Status, r.AttemptCount, r.WorkerId, r.LeaseId, CONVERT(varchar(33), r.HeartbeatUtc, 126) + 'Z' AS HeartbeatUtc, CONVERT(varchar(33), r.ScheduledAtUtc, 126) + 'Z' AS ScheduledAtUtc, CONVERT(varchar(33), r.CreatedAtUtc, 126) + 'Z' AS CreatedAtUtc, CONVERT(varchar(33), r.EnqueuedAtUtc, 126) + 'Z' AS EnqueuedAtUtc, CONVERT(varchar(33), r.StartedAtUtc, 126) + 'Z' AS StartedAtUtc, CONVERT(varchar(33), r.LastUpdatedUtc, 126) + 'Z' AS LastUpdatedUtc, r.CreatedBy, r.LastModifiedBy, r.LastError, CONVERT(varchar(33), r.CancelRequestedUtc, 126) + 'Z' AS CancelRequestedUtc, r.Progress, r.ProgressNote, r.TraceContext, r.PayloadVersion, r.GroupKey, r.BatchId, r.WaitingOn, r.HasDependents FROM @Retried AS r;
