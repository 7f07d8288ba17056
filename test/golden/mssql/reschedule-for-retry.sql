SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @bucket datetime2(0) = CAST(DATEADD(SECOND, -DATEPART(SECOND, @now), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now)) AS datetime2(0));
DECLARE @due datetime2(3) = DATEADD(MILLISECOND, CAST(@3 % 1000 AS int), DATEADD(SECOND, CAST(@3 / 1000 AS int), @now));
DECLARE @Retried TABLE (Id varchar(36) NOT NULL, Queue varchar(255) NOT NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, LeaseId varchar(36) NULL, StartedAtUtc datetime2(3) NULL);
BEGIN TRAN;
UPDATE h SET h.Status = 0, h.WorkerId = NULL, h.LeaseId = NULL, h.HeartbeatUtc = NULL,
  h.ScheduledAtUtc = @due, h.DueAtUtc = @due, h.HeldSinceUtc = NULL, h.LastError = @4, h.LastUpdatedUtc = @now
OUTPUT inserted.Id, inserted.Queue, deleted.AttemptCount, deleted.WorkerId, deleted.LeaseId, deleted.StartedAtUtc INTO @Retried (Id, Queue, AttemptCount, WorkerId, LeaseId, StartedAtUtc)
FROM [chokaq].[JobsHot] AS h
WHERE h.Id = CAST(@0 AS varchar(36)) AND h.WorkerId = @1 AND h.LeaseId = CAST(@2 AS varchar(36)) AND h.Status = 2;
INSERT INTO [chokaq].[JobAttempts] (JobId, Seq, Attempt, WorkerId, LeaseId, StartedAtUtc, FinishedAtUtc, Outcome, Error, DurationMs)
SELECT a.Id, ISNULL((SELECT MAX(x.Seq) FROM [chokaq].[JobAttempts] AS x WHERE x.JobId = a.Id), 0) + 1,
  a.AttemptCount, a.WorkerId, a.LeaseId, a.StartedAtUtc, @now, a.Outcome, LEFT(a.Error, 4000),
  CASE WHEN a.StartedAtUtc IS NULL THEN NULL WHEN a.StartedAtUtc < @now THEN DATEDIFF_BIG(MILLISECOND, a.StartedAtUtc, @now) ELSE 0 END
FROM (SELECT r.Id, r.AttemptCount, r.WorkerId, r.LeaseId, r.StartedAtUtc, 'retried' AS Outcome, @4 AS Error FROM @Retried AS r) AS a;
DECLARE @StatsDelta TABLE (Queue varchar(255) NOT NULL PRIMARY KEY, RetriedTotal bigint NOT NULL);
INSERT INTO @StatsDelta (Queue, RetriedTotal)
SELECT g.Queue, SUM(CAST(1 AS bigint)) FROM @Retried AS g GROUP BY g.Queue;
INSERT INTO [chokaq].[StatsSummary] (Queue)
SELECT d.Queue FROM @StatsDelta AS d
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = d.Queue);
UPDATE st SET st.RetriedTotal = st.RetriedTotal + d.RetriedTotal, st.LastActivityUtc = @now
FROM @StatsDelta AS d
INNER LOOP JOIN [chokaq].[StatsSummary] AS st ON st.Queue = d.Queue;
DECLARE @BucketDelta TABLE (Queue varchar(255) NOT NULL, Outcome tinyint NOT NULL, FailureReason smallint NOT NULL, N bigint NOT NULL, DurationCount bigint NOT NULL, TotalDurationMs bigint NOT NULL, MaxDurationMs bigint NOT NULL, PRIMARY KEY (Queue, Outcome, FailureReason));
INSERT INTO @BucketDelta (Queue, Outcome, FailureReason, N, DurationCount, TotalDurationMs, MaxDurationMs)
SELECT g.Queue, g.Outcome, g.FailureReason, COUNT_BIG(*), COUNT_BIG(g.DurationMs), ISNULL(SUM(g.DurationMs), 0), ISNULL(MAX(g.DurationMs), 0)
FROM (SELECT r.Queue, CAST(3 AS tinyint) AS Outcome, CAST(-1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs FROM @Retried AS r) AS g GROUP BY g.Queue, g.Outcome, g.FailureReason;
INSERT INTO [chokaq].[MetricBuckets] (BucketUtc, Queue, Outcome, FailureReason)
SELECT @bucket, d.Queue, d.Outcome, d.FailureReason FROM @BucketDelta AS d
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[MetricBuckets] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason);
UPDATE x SET x.CompletedCount = x.CompletedCount + d.N, x.DurationCount = x.DurationCount + d.DurationCount,
  x.TotalDurationMs = x.TotalDurationMs + d.TotalDurationMs,
  x.MaxDurationMs = CASE WHEN d.MaxDurationMs > x.MaxDurationMs THEN d.MaxDurationMs ELSE x.MaxDurationMs END
FROM @BucketDelta AS d
INNER LOOP JOIN [chokaq].[MetricBuckets] AS x ON x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason;
COMMIT;
SELECT COUNT_BIG(*) AS Affected FROM @Retried;
