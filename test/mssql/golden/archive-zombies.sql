SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @bucket datetime2(0) = CAST(DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now) AS datetime2(0));
DECLARE @Moved TABLE (Id varchar(36) NULL, Queue varchar(255) NULL, Type nvarchar(255) NULL, Payload nvarchar(max) NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255) NULL, Priority int NULL, Status tinyint NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, LeaseId varchar(36) NULL, HeartbeatUtc datetime2(3) NULL, ScheduledAtUtc datetime2(3) NULL, DueAtUtc datetime2(3) NULL, CreatedAtUtc datetime2(3) NULL, EnqueuedAtUtc datetime2(3) NULL, StartedAtUtc datetime2(3) NULL, LastUpdatedUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, LastModifiedBy nvarchar(100) NULL, LastError nvarchar(max) NULL, CancelRequestedUtc datetime2(3) NULL, Progress float NULL);
DECLARE @Rules TABLE (Queue varchar(255) NOT NULL, Type nvarchar(255) NULL, Retry bit NOT NULL);
DECLARE @Zombies TABLE (Id varchar(36) NOT NULL PRIMARY KEY, Retry bit NOT NULL);
DECLARE @Retried TABLE (Id varchar(36) NOT NULL, Queue varchar(255) NOT NULL);
INSERT INTO @Rules (Queue, Type, Retry)
SELECT x.Queue, x.Type, x.Retry FROM OPENJSON(@2) WITH (Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', Retry bit '$.retry') AS x
WHERE x.Queue IS NOT NULL AND x.Retry IS NOT NULL;
BEGIN TRAN;
INSERT INTO @Zombies (Id, Retry)
SELECT TOP (@1) z.Id, CASE WHEN q.RetryZombies = 1 OR ISNULL(e.Retry, w.Retry) = 1 THEN 1 ELSE 0 END
FROM [chokaq].[JobsHot] AS z WITH (UPDLOCK, READPAST, ROWLOCK)
LEFT JOIN [chokaq].[Queues] AS q ON q.Name = z.Queue
LEFT JOIN @Rules AS e ON e.Queue = z.Queue AND e.Type = z.Type
LEFT JOIN @Rules AS w ON w.Queue = z.Queue AND w.Type IS NULL
WHERE z.Status = 2
  AND DATEDIFF_BIG(MILLISECOND, z.HeartbeatUtc, @now) > ISNULL(CAST(q.ZombieTimeoutSeconds AS bigint) * 1000, @0)
ORDER BY z.HeartbeatUtc;
UPDATE h SET h.Status = 0, h.WorkerId = NULL, h.LeaseId = NULL, h.HeartbeatUtc = NULL,
  h.ScheduledAtUtc = NULL, h.DueAtUtc = @now, h.LastError = N'Zombie: the heartbeat expired while the job was Processing.', h.LastUpdatedUtc = @now
OUTPUT inserted.Id, inserted.Queue INTO @Retried (Id, Queue)
FROM [chokaq].[JobsHot] AS h INNER JOIN @Zombies AS z ON z.Id = h.Id AND z.Retry = 1
WHERE h.Status = 2;
INSERT INTO [chokaq].[StatsSummary] (Queue)
SELECT DISTINCT m.Queue FROM @Retried AS m
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = m.Queue);
UPDATE st SET st.RetriedTotal = st.RetriedTotal + m.N, st.LastActivityUtc = @now
FROM [chokaq].[StatsSummary] AS st
INNER JOIN (SELECT g.Queue, COUNT_BIG(*) AS N FROM @Retried AS g GROUP BY g.Queue) AS m ON m.Queue = st.Queue;
DELETE h
OUTPUT deleted.* INTO @Moved
FROM [chokaq].[JobsHot] AS h INNER JOIN @Zombies AS z ON z.Id = h.Id AND z.Retry = 0
WHERE h.Status = 2;
INSERT INTO [chokaq].[JobsDLQ] (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, ScheduledAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, Progress, FailureReason, ErrorDetails, FailedAtUtc, DurationMs)
SELECT m.Id, m.Queue, m.Type, m.Payload, m.Tags, m.IdempotencyKey, m.Priority, 6, m.AttemptCount, m.WorkerId, m.ScheduledAtUtc, m.CreatedAtUtc, m.EnqueuedAtUtc, m.StartedAtUtc, @now, m.CreatedBy, ISNULL(NULL, m.LastModifiedBy), m.LastError, m.Progress, 2, N'Zombie: the heartbeat expired while the job was Processing.', @now, NULL
FROM @Moved AS m;
INSERT INTO [chokaq].[StatsSummary] (Queue)
SELECT DISTINCT m.Queue FROM @Moved AS m
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = m.Queue);
UPDATE st SET st.FailedTotal = st.FailedTotal + m.N, st.LastActivityUtc = @now
FROM [chokaq].[StatsSummary] AS st
INNER JOIN (SELECT g.Queue, COUNT_BIG(*) AS N FROM @Moved AS g GROUP BY g.Queue) AS m ON m.Queue = st.Queue;
INSERT INTO [chokaq].[MetricBuckets] (BucketUtc, Queue, Outcome, FailureReason)
SELECT @bucket, m.Queue, m.Outcome, m.FailureReason FROM (SELECT g.Queue, g.Outcome, g.FailureReason, COUNT_BIG(*) AS N, COUNT_BIG(g.DurationMs) AS DurationCount, ISNULL(SUM(g.DurationMs), 0) AS TotalDurationMs, ISNULL(MAX(g.DurationMs), 0) AS MaxDurationMs FROM (SELECT mv.Queue, CAST(1 AS tinyint) AS Outcome, CAST(2 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs FROM @Moved AS mv) AS g GROUP BY g.Queue, g.Outcome, g.FailureReason) AS m
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[MetricBuckets] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.BucketUtc = @bucket AND x.Queue = m.Queue AND x.Outcome = m.Outcome AND x.FailureReason = m.FailureReason);
UPDATE x SET x.CompletedCount = x.CompletedCount + m.N, x.DurationCount = x.DurationCount + m.DurationCount,
  x.TotalDurationMs = x.TotalDurationMs + m.TotalDurationMs,
  x.MaxDurationMs = CASE WHEN m.MaxDurationMs > x.MaxDurationMs THEN m.MaxDurationMs ELSE x.MaxDurationMs END
FROM [chokaq].[MetricBuckets] AS x
INNER JOIN (SELECT g.Queue, g.Outcome, g.FailureReason, COUNT_BIG(*) AS N, COUNT_BIG(g.DurationMs) AS DurationCount, ISNULL(SUM(g.DurationMs), 0) AS TotalDurationMs, ISNULL(MAX(g.DurationMs), 0) AS MaxDurationMs FROM (SELECT mv.Queue, CAST(1 AS tinyint) AS Outcome, CAST(2 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs FROM @Moved AS mv) AS g GROUP BY g.Queue, g.Outcome, g.FailureReason) AS m ON x.BucketUtc = @bucket AND x.Queue = m.Queue AND x.Outcome = m.Outcome AND x.FailureReason = m.FailureReason;
COMMIT;
SELECT mv.Id, 0 AS Kind FROM @Moved AS mv
UNION ALL
SELECT r.Id, 1 AS Kind FROM @Retried AS r;
