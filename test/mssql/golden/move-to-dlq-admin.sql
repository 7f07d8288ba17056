SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @bucket datetime2(0) = CAST(DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now) AS datetime2(0));
DECLARE @Moved TABLE (Id varchar(36) NULL, Queue varchar(255) NULL, Type nvarchar(255) NULL, Payload nvarchar(max) NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255) NULL, Priority int NULL, Status tinyint NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, LeaseId varchar(36) NULL, HeartbeatUtc datetime2(3) NULL, ScheduledAtUtc datetime2(3) NULL, DueAtUtc datetime2(3) NULL, CreatedAtUtc datetime2(3) NULL, EnqueuedAtUtc datetime2(3) NULL, StartedAtUtc datetime2(3) NULL, LastUpdatedUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, LastModifiedBy nvarchar(100) NULL, LastError nvarchar(max) NULL, CancelRequestedUtc datetime2(3) NULL, Progress float NULL);
BEGIN TRAN;
DELETE h
OUTPUT deleted.* INTO @Moved
FROM [chokaq].[JobsHot] AS h
WHERE h.Id = CAST(@0 AS varchar(36));
INSERT INTO [chokaq].[JobsDLQ] (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, ScheduledAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, Progress, FailureReason, ErrorDetails, FailedAtUtc, DurationMs)
SELECT m.Id, m.Queue, m.Type, m.Payload, m.Tags, m.IdempotencyKey, m.Priority, CASE @1 WHEN 1 THEN 5 WHEN 2 THEN 6 ELSE 4 END, m.AttemptCount, m.WorkerId, m.ScheduledAtUtc, m.CreatedAtUtc, m.EnqueuedAtUtc, m.StartedAtUtc, @now, m.CreatedBy, ISNULL(@3, m.LastModifiedBy), m.LastError, m.Progress, @1, @2, @now, @4
FROM @Moved AS m;
INSERT INTO [chokaq].[StatsSummary] (Queue)
SELECT DISTINCT m.Queue FROM @Moved AS m
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = m.Queue);
UPDATE st SET st.FailedTotal = st.FailedTotal + CASE WHEN @1 = 1 THEN 0 ELSE m.N END, st.CancelledTotal = st.CancelledTotal + CASE WHEN @1 = 1 THEN m.N ELSE 0 END, st.LastActivityUtc = @now
FROM [chokaq].[StatsSummary] AS st
INNER JOIN (SELECT g.Queue, COUNT_BIG(*) AS N FROM @Moved AS g GROUP BY g.Queue) AS m ON m.Queue = st.Queue;
INSERT INTO [chokaq].[MetricBuckets] (BucketUtc, Queue, Outcome, FailureReason)
SELECT @bucket, m.Queue, m.Outcome, m.FailureReason FROM (SELECT g.Queue, g.Outcome, g.FailureReason, COUNT_BIG(*) AS N, COUNT_BIG(g.DurationMs) AS DurationCount, ISNULL(SUM(g.DurationMs), 0) AS TotalDurationMs, ISNULL(MAX(g.DurationMs), 0) AS MaxDurationMs FROM (SELECT mv.Queue, CAST(CASE WHEN @1 = 1 THEN 2 ELSE 1 END AS tinyint) AS Outcome, CAST(@1 AS smallint) AS FailureReason, @4 AS DurationMs FROM @Moved AS mv) AS g GROUP BY g.Queue, g.Outcome, g.FailureReason) AS m
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[MetricBuckets] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.BucketUtc = @bucket AND x.Queue = m.Queue AND x.Outcome = m.Outcome AND x.FailureReason = m.FailureReason);
UPDATE x SET x.CompletedCount = x.CompletedCount + m.N, x.DurationCount = x.DurationCount + m.DurationCount,
  x.TotalDurationMs = x.TotalDurationMs + m.TotalDurationMs,
  x.MaxDurationMs = CASE WHEN m.MaxDurationMs > x.MaxDurationMs THEN m.MaxDurationMs ELSE x.MaxDurationMs END
FROM [chokaq].[MetricBuckets] AS x
INNER JOIN (SELECT g.Queue, g.Outcome, g.FailureReason, COUNT_BIG(*) AS N, COUNT_BIG(g.DurationMs) AS DurationCount, ISNULL(SUM(g.DurationMs), 0) AS TotalDurationMs, ISNULL(MAX(g.DurationMs), 0) AS MaxDurationMs FROM (SELECT mv.Queue, CAST(CASE WHEN @1 = 1 THEN 2 ELSE 1 END AS tinyint) AS Outcome, CAST(@1 AS smallint) AS FailureReason, @4 AS DurationMs FROM @Moved AS mv) AS g GROUP BY g.Queue, g.Outcome, g.FailureReason) AS m ON x.BucketUtc = @bucket AND x.Queue = m.Queue AND x.Outcome = m.Outcome AND x.FailureReason = m.FailureReason;
COMMIT;
SELECT COUNT_BIG(*) AS Affected FROM @Moved;
