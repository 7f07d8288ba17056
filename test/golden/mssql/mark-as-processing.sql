SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @bucket datetime2(0) = CAST(DATEADD(SECOND, -DATEPART(SECOND, @now), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now)) AS datetime2(0));
DECLARE @Started TABLE (Id varchar(36) NOT NULL, Queue varchar(255) NOT NULL, DueAtUtc datetime2(3) NOT NULL);
BEGIN TRAN;
UPDATE h SET h.Status = 2, h.AttemptCount = h.AttemptCount + 1, h.StartedAtUtc = @now, h.HeartbeatUtc = @now, h.LastUpdatedUtc = @now
OUTPUT inserted.Id, inserted.Queue, inserted.DueAtUtc INTO @Started (Id, Queue, DueAtUtc)
FROM [chokaq].[JobsHot] AS h
INNER JOIN OPENJSON(@0) WITH (Id varchar(36) '$.id', WorkerId nvarchar(255) '$.workerId', LeaseId varchar(36) '$.leaseId') AS l ON l.Id = h.Id AND l.WorkerId = h.WorkerId AND l.LeaseId = h.LeaseId
WHERE h.Status = 1;
IF EXISTS (SELECT 1 FROM @Started)
BEGIN
DECLARE @BucketDelta TABLE (Queue varchar(255) NOT NULL, Outcome tinyint NOT NULL, FailureReason smallint NOT NULL, N bigint NOT NULL, DurationCount bigint NOT NULL, TotalDurationMs bigint NOT NULL, MaxDurationMs bigint NOT NULL, LagCount bigint NOT NULL, LagSumMs bigint NOT NULL, LagMaxMs bigint NOT NULL, PRIMARY KEY (Queue, Outcome, FailureReason));
INSERT INTO @BucketDelta (Queue, Outcome, FailureReason, N, DurationCount, TotalDurationMs, MaxDurationMs, LagCount, LagSumMs, LagMaxMs)
SELECT g.Queue, g.Outcome, g.FailureReason, COUNT_BIG(*), COUNT_BIG(g.DurationMs), ISNULL(SUM(g.DurationMs), 0), ISNULL(MAX(g.DurationMs), 0), COUNT_BIG(g.LagMs), ISNULL(SUM(g.LagMs), 0), ISNULL(MAX(g.LagMs), 0)
FROM (SELECT s.Queue, CAST(4 AS tinyint) AS Outcome, CAST(-1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs, CASE WHEN s.DueAtUtc < @now THEN DATEDIFF_BIG(MILLISECOND, s.DueAtUtc, @now) ELSE 0 END AS LagMs FROM @Started AS s) AS g GROUP BY g.Queue, g.Outcome, g.FailureReason;
INSERT INTO [chokaq].[MetricBuckets] (BucketUtc, Queue, Outcome, FailureReason)
SELECT @bucket, d.Queue, d.Outcome, d.FailureReason FROM @BucketDelta AS d
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[MetricBuckets] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason);
UPDATE x SET x.CompletedCount = x.CompletedCount + d.N, x.DurationCount = x.DurationCount + d.DurationCount,
  x.TotalDurationMs = x.TotalDurationMs + d.TotalDurationMs,
  x.MaxDurationMs = CASE WHEN d.MaxDurationMs > x.MaxDurationMs THEN d.MaxDurationMs ELSE x.MaxDurationMs END,
  x.LagCount = x.LagCount + d.LagCount, x.LagSumMs = x.LagSumMs + d.LagSumMs,
  x.LagMaxMs = CASE WHEN d.LagMaxMs > x.LagMaxMs THEN d.LagMaxMs ELSE x.LagMaxMs END
FROM @BucketDelta AS d
INNER LOOP JOIN [chokaq].[MetricBuckets] AS x ON x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason;
END;
COMMIT;
SELECT s.Id FROM @Started AS s
UNION ALL
SELECT h.Id FROM [chokaq].[JobsHot] AS h
INNER JOIN OPENJSON(@0) WITH (Id varchar(36) '$.id', WorkerId nvarchar(255) '$.workerId', LeaseId varchar(36) '$.leaseId') AS l ON l.Id = h.Id AND l.WorkerId = h.WorkerId AND l.LeaseId = h.LeaseId
WHERE h.Status = 2 AND h.Id NOT IN (SELECT Id FROM @Started);
