SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @bucket datetime2(0) = CAST(DATEADD(SECOND, -DATEPART(SECOND, @now), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now)) AS datetime2(0));
DECLARE @Moved TABLE (Id varchar(36) NULL, Queue varchar(255) NULL, Type nvarchar(255) NULL, Payload nvarchar(max) NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255) NULL, Priority int NULL, Status tinyint NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, LeaseId varchar(36) NULL, HeartbeatUtc datetime2(3) NULL, ScheduledAtUtc datetime2(3) NULL, DueAtUtc datetime2(3) NULL, CreatedAtUtc datetime2(3) NULL, EnqueuedAtUtc datetime2(3) NULL, StartedAtUtc datetime2(3) NULL, LastUpdatedUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, LastModifiedBy nvarchar(100) NULL, LastError nvarchar(max) NULL, CancelRequestedUtc datetime2(3) NULL, Progress float NULL, ProgressNote nvarchar(500) NULL, TraceContext varchar(2048) NULL, PayloadVersion int NULL, GroupKey nvarchar(255) COLLATE Latin1_General_100_BIN2 NULL, BatchId varchar(36) NULL, WaitingOn int NULL, HasDependents bit NULL);
BEGIN TRAN;
DELETE h
OUTPUT deleted.Id, deleted.Queue, deleted.Type, deleted.Payload, deleted.Tags, deleted.IdempotencyKey, deleted.Priority, deleted.Status, deleted.AttemptCount, deleted.WorkerId, deleted.LeaseId, deleted.HeartbeatUtc, deleted.ScheduledAtUtc, deleted.DueAtUtc, deleted.CreatedAtUtc, deleted.EnqueuedAtUtc, deleted.StartedAtUtc, deleted.LastUpdatedUtc, deleted.CreatedBy, deleted.LastModifiedBy, deleted.LastError, deleted.CancelRequestedUtc, deleted.Progress, deleted.ProgressNote, deleted.TraceContext, deleted.PayloadVersion, deleted.GroupKey, deleted.BatchId, deleted.WaitingOn, deleted.HasDependents INTO @Moved (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, LeaseId, HeartbeatUtc, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, CancelRequestedUtc, Progress, ProgressNote, TraceContext, PayloadVersion, GroupKey, BatchId, WaitingOn, HasDependents)
FROM [chokaq].[JobsHot] AS h
WHERE h.Id = CAST(@0 AS varchar(36)) AND h.WorkerId = @1 AND h.LeaseId = CAST(@2 AS varchar(36)) AND h.Status IN (1, 2);
INSERT INTO [chokaq].[JobsDLQ] (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, ScheduledAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, Progress, ProgressNote, TraceContext, PayloadVersion, GroupKey, BatchId, WaitingOn, HasDependents, FailureReason, ErrorDetails, FailedAtUtc, DurationMs)
SELECT m.Id, m.Queue, m.Type, m.Payload, m.Tags, m.IdempotencyKey, m.Priority, CASE WHEN @3 IN (1, 12) THEN 5 WHEN @3 IN (2) THEN 6 ELSE 4 END, m.AttemptCount, m.WorkerId, m.ScheduledAtUtc, m.CreatedAtUtc, m.EnqueuedAtUtc, m.StartedAtUtc, @now, m.CreatedBy, ISNULL(@5, m.LastModifiedBy), m.LastError, m.Progress, m.ProgressNote, m.TraceContext, m.PayloadVersion, m.GroupKey, m.BatchId, m.WaitingOn, m.HasDependents, @3, @4, @now, @6
FROM @Moved AS m;
INSERT INTO [chokaq].[JobAttempts] (JobId, Seq, Attempt, WorkerId, LeaseId, StartedAtUtc, FinishedAtUtc, Outcome, Error, DurationMs)
SELECT a.Id, ISNULL((SELECT MAX(x.Seq) FROM [chokaq].[JobAttempts] AS x WHERE x.JobId = a.Id), 0) + 1,
  a.AttemptCount, a.WorkerId, a.LeaseId, a.StartedAtUtc, @now, a.Outcome, LEFT(a.Error, 4000),
  CASE WHEN a.StartedAtUtc IS NULL THEN NULL WHEN a.StartedAtUtc < @now THEN DATEDIFF_BIG(MILLISECOND, a.StartedAtUtc, @now) ELSE 0 END
FROM (SELECT mv.Id, mv.AttemptCount, mv.WorkerId, mv.LeaseId, mv.StartedAtUtc, CASE @3 WHEN 7 THEN 'timeout' WHEN 1 THEN 'cancelled' WHEN 2 THEN 'zombie' ELSE 'failed' END AS Outcome, @4 AS Error FROM @Moved AS mv WHERE mv.Status = 2) AS a;
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
DECLARE @StatsDelta TABLE (Queue varchar(255) NOT NULL PRIMARY KEY, FailedTotal bigint NOT NULL, CancelledTotal bigint NOT NULL);
INSERT INTO @StatsDelta (Queue, FailedTotal, CancelledTotal)
SELECT g.Queue, SUM(CAST(CASE WHEN @3 IN (1, 12) THEN 0 ELSE 1 END AS bigint)), SUM(CAST(CASE WHEN @3 IN (1, 12) THEN 1 ELSE 0 END AS bigint)) FROM @Moved AS g GROUP BY g.Queue;
INSERT INTO [chokaq].[StatsSummary] (Queue)
SELECT d.Queue FROM @StatsDelta AS d
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = d.Queue);
UPDATE st SET st.FailedTotal = st.FailedTotal + d.FailedTotal, st.CancelledTotal = st.CancelledTotal + d.CancelledTotal, st.LastActivityUtc = @now
FROM @StatsDelta AS d
INNER LOOP JOIN [chokaq].[StatsSummary] AS st ON st.Queue = d.Queue;
DECLARE @BucketDelta TABLE (Queue varchar(255) NOT NULL, Outcome tinyint NOT NULL, FailureReason smallint NOT NULL, N bigint NOT NULL, DurationCount bigint NOT NULL, TotalDurationMs bigint NOT NULL, MaxDurationMs bigint NOT NULL, PRIMARY KEY (Queue, Outcome, FailureReason));
INSERT INTO @BucketDelta (Queue, Outcome, FailureReason, N, DurationCount, TotalDurationMs, MaxDurationMs)
SELECT g.Queue, g.Outcome, g.FailureReason, COUNT_BIG(*), COUNT_BIG(g.DurationMs), ISNULL(SUM(g.DurationMs), 0), ISNULL(MAX(g.DurationMs), 0)
FROM (SELECT mv.Queue, CAST(CASE WHEN @3 IN (1, 12) THEN 2 ELSE 1 END AS tinyint) AS Outcome, CAST(@3 AS smallint) AS FailureReason, @6 AS DurationMs FROM @Moved AS mv) AS g GROUP BY g.Queue, g.Outcome, g.FailureReason;
INSERT INTO [chokaq].[MetricBuckets] (BucketUtc, Queue, Outcome, FailureReason)
SELECT @bucket, d.Queue, d.Outcome, d.FailureReason FROM @BucketDelta AS d
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[MetricBuckets] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason);
UPDATE x SET x.CompletedCount = x.CompletedCount + d.N, x.DurationCount = x.DurationCount + d.DurationCount,
  x.TotalDurationMs = x.TotalDurationMs + d.TotalDurationMs,
  x.MaxDurationMs = CASE WHEN d.MaxDurationMs > x.MaxDurationMs THEN d.MaxDurationMs ELSE x.MaxDurationMs END
FROM @BucketDelta AS d
INNER LOOP JOIN [chokaq].[MetricBuckets] AS x ON x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason;
COMMIT;
SELECT COUNT_BIG(*) AS Affected FROM @Moved;
