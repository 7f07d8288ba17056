SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @bucket datetime2(0) = CAST(DATEADD(SECOND, -DATEPART(SECOND, @now), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now)) AS datetime2(0));
DECLARE @Runnable TABLE (Queue varchar(255) NOT NULL PRIMARY KEY, AllTypes bit NOT NULL, Budget int NULL, RateMax int NULL, RateAllow int NULL, Slots int NULL, Grouped bit NOT NULL, GroupBudget int NULL);
DECLARE @Types TABLE (Queue varchar(255) NOT NULL, Type nvarchar(255) NOT NULL, MinVersion int NOT NULL, MaxVersion int NOT NULL, PRIMARY KEY (Queue, Type));
DECLARE @Budgeted TABLE (Queue varchar(255) NOT NULL PRIMARY KEY);
DECLARE @Candidates TABLE (Queue varchar(255) NOT NULL, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL, Id varchar(36) NOT NULL, PRIMARY KEY (Queue, Priority DESC, DueAtUtc, Id));
DECLARE @Picked TABLE (Id varchar(36) NOT NULL PRIMARY KEY, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL);
DECLARE @Claimed TABLE (Id varchar(36) NULL, Queue varchar(255) NULL, Type nvarchar(255) NULL, Payload nvarchar(max) NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255) NULL, Priority int NULL, Status tinyint NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, LeaseId varchar(36) NULL, HeartbeatUtc datetime2(3) NULL, ScheduledAtUtc datetime2(3) NULL, DueAtUtc datetime2(3) NULL, CreatedAtUtc datetime2(3) NULL, EnqueuedAtUtc datetime2(3) NULL, StartedAtUtc datetime2(3) NULL, LastUpdatedUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, LastModifiedBy nvarchar(100) NULL, LastError nvarchar(max) NULL, CancelRequestedUtc datetime2(3) NULL, Progress float NULL, ProgressNote nvarchar(500) NULL, TraceContext varchar(2048) NULL, PayloadVersion int NULL, GroupKey nvarchar(255) COLLATE Latin1_General_100_BIN2 NULL, BatchId varchar(36) NULL, WaitingOn int NULL, HasDependents bit NULL);
INSERT INTO @Types (Queue, Type, MinVersion, MaxVersion)
SELECT x.Queue, x.Type, MIN(x.MinVersion), MAX(x.MaxVersion) FROM OPENJSON(@4) WITH (Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', MinVersion int '$.minVersion', MaxVersion int '$.maxVersion') AS x
WHERE x.Queue IS NOT NULL AND x.Type IS NOT NULL AND x.MinVersion IS NOT NULL AND x.MaxVersion IS NOT NULL
GROUP BY x.Queue, x.Type;
INSERT INTO @Runnable (Queue, AllTypes, Budget, RateMax, Grouped)
SELECT q.Name, CAST(MAX(r.AllTypes) AS bit), q.MaxWorkers, q.RateLimitMax, CAST(CASE WHEN (q.GroupConcurrency IS NOT NULL OR q.GroupRateMax IS NOT NULL) THEN 1 ELSE 0 END AS bit)
FROM (SELECT a.Queue AS Queue, 1 AS AllTypes FROM OPENJSON(@3) WITH (Queue varchar(255) '$') AS a
      UNION ALL SELECT y.Queue, 0 FROM @Types AS y) AS r
INNER LOOP JOIN [chokaq].[Queues] AS q WITH (FORCESEEK) ON q.Name = r.Queue
WHERE q.IsPaused = 0 AND q.IsActive = 1 AND q.GroupConcurrency IS NULL AND q.GroupRateMax IS NULL
GROUP BY q.Name, q.MaxWorkers, q.RateLimitMax, q.GroupConcurrency, q.GroupRateMax;
INSERT INTO @Budgeted (Queue) SELECT r.Queue FROM @Runnable AS r WHERE r.Budget IS NOT NULL OR r.RateMax IS NOT NULL OR r.Grouped = 1;
BEGIN TRAN;
-- Serialise claims on budgeted, rate-limited and grouped queues: U locks on their Queues rows
-- only, by key, in name order, held to the end of the transaction; the limits are re-read under
-- the lock, and which of them are grouped.
UPDATE r SET r.Budget = q.MaxWorkers, r.RateMax = q.RateLimitMax, r.Grouped = CASE WHEN (q.GroupConcurrency IS NOT NULL OR q.GroupRateMax IS NOT NULL) THEN 1 ELSE 0 END
FROM @Budgeted AS b
INNER LOOP JOIN [chokaq].[Queues] AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = b.Queue
INNER JOIN @Runnable AS r ON r.Queue = b.Queue;
-- The clock read after the locks: the start time of the rows started here, and the instant
-- the rate allowance is computed at (later than the previous claimer of the queue, which
-- committed before our lock was granted).
SET @now = SYSUTCDATETIME();
SET @bucket = CAST(DATEADD(SECOND, -DATEPART(SECOND, @now), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now)) AS datetime2(0));
-- A queue budgeted, rate limited or grouped since the unlocked read holds no lock here: no slots
-- this round.
UPDATE r SET r.Budget = 0, r.RateMax = NULL
FROM @Runnable AS r INNER LOOP JOIN [chokaq].[Queues] AS q WITH (READCOMMITTEDLOCK, FORCESEEK) ON q.Name = r.Queue
WHERE (q.MaxWorkers IS NOT NULL OR q.RateLimitMax IS NOT NULL OR q.GroupConcurrency IS NOT NULL OR q.GroupRateMax IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM @Budgeted AS b WHERE b.Queue = r.Queue);
-- Rate allowance of each locked rate-limited queue at @now (the rule of storage/shared/rate-window.ts).
UPDATE r SET r.RateAllow = CASE WHEN q.RateLimitMax - (CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart))
  THEN CASE WHEN q.RateWindowLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RateWindowCount, 0) ELSE 0 END
  ELSE ISNULL(q.RateWindowCount, 0)
       + CASE WHEN q.RatePrevLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RatePrevCount, 0) ELSE 0 END
END) > 0 THEN q.RateLimitMax - (CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart))
  THEN CASE WHEN q.RateWindowLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RateWindowCount, 0) ELSE 0 END
  ELSE ISNULL(q.RateWindowCount, 0)
       + CASE WHEN q.RatePrevLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RatePrevCount, 0) ELSE 0 END
END) ELSE 0 END
FROM @Runnable AS r
INNER LOOP JOIN [chokaq].[Queues] AS q WITH (READCOMMITTEDLOCK, FORCESEEK) ON q.Name = r.Queue
WHERE r.RateMax IS NOT NULL AND q.RateLimitMax IS NOT NULL;
WITH Active AS (
  SELECT h.Queue, COUNT_BIG(*) AS Busy
  FROM [chokaq].[JobsHot] AS h WITH (READCOMMITTEDLOCK)
  WHERE h.Status IN (1, 2) AND h.Queue IN (SELECT b.Queue FROM @Budgeted AS b)
  GROUP BY h.Queue
)
UPDATE r SET r.Slots =
  CASE WHEN r.Budget IS NULL THEN @2
       WHEN r.Budget - ISNULL(a.Busy, 0) <= 0 THEN 0
       WHEN r.Budget - ISNULL(a.Busy, 0) < @2 THEN r.Budget - ISNULL(a.Busy, 0)
       ELSE @2 END
FROM @Runnable AS r LEFT JOIN Active AS a ON a.Queue = r.Queue;
-- A grouped queue is claimed group by group (below): the ordinary claim takes none of its rows.
UPDATE r SET r.Slots = 0 FROM @Runnable AS r WHERE r.Grouped = 1;
-- A rate-limited queue: at most its allowance, and only when every claimed row starts (never
-- buffered Fetched, so a start is the claim that counted it); a queue limited since the
-- unlocked read was given Budget 0 above.
UPDATE r SET r.Slots =
  CASE WHEN r.RateMax IS NULL THEN r.Slots
       WHEN @5 < @2 OR r.RateAllow IS NULL THEN 0
       WHEN r.RateAllow < r.Slots THEN r.RateAllow
       ELSE r.Slots END
FROM @Runnable AS r;
-- Candidates without update locks: a seek per queue-wide queue, and per exact (queue, type).
INSERT INTO @Candidates (Queue, Priority, DueAtUtc, Id)
SELECT m.Queue, c.Priority, c.DueAtUtc, c.Id
FROM @Runnable AS m
  CROSS APPLY (
    SELECT TOP (2 * m.Slots) h.Priority, h.DueAtUtc, h.Id
    FROM [chokaq].[JobsHot] AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
    WHERE h.Queue = m.Queue AND h.Status = 0 AND h.DueAtUtc <= @now
    ORDER BY h.Priority DESC, h.DueAtUtc, h.Id
  ) AS c
WHERE m.AllTypes = 1 AND m.Slots > 0
UNION ALL
SELECT m.Queue, c.Priority, c.DueAtUtc, c.Id
FROM @Runnable AS m
  INNER JOIN @Types AS y ON y.Queue = m.Queue
  CROSS APPLY (
    SELECT TOP (2 * m.Slots) h.Priority, h.DueAtUtc, h.Id
    FROM [chokaq].[JobsHot] AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
    WHERE h.Queue = y.Queue AND h.Type = y.Type AND h.Status = 0 AND h.DueAtUtc <= @now AND h.PayloadVersion BETWEEN y.MinVersion AND y.MaxVersion
    ORDER BY h.Priority DESC, h.DueAtUtc, h.Id
  ) AS c
WHERE m.AllTypes = 0 AND m.Slots > 0;
-- Each queue locks no more than its share of the claim: its candidates among the best of all
-- queues, up to the limit (a U lock is held to COMMIT, and a claimer skips every row another holds).
UPDATE m SET m.Slots = CASE WHEN ISNULL(b.Share, 0) < m.Slots THEN ISNULL(b.Share, 0) ELSE m.Slots END
FROM @Runnable AS m
LEFT JOIN (
  SELECT x.Queue, COUNT(*) AS Share
  FROM (SELECT TOP (@2) c.Queue FROM @Candidates AS c ORDER BY c.Priority DESC, c.DueAtUtc, c.Id) AS x
  GROUP BY x.Queue
) AS b ON b.Queue = m.Queue
WHERE m.Slots > 0;
-- Each queue locks its best candidates by key (clustered Id), skipping rows others hold.
INSERT INTO @Picked (Id, Priority, DueAtUtc)
SELECT k.Id, k.Priority, k.DueAtUtc
FROM @Runnable AS m
CROSS APPLY (
  SELECT TOP (m.Slots) c.Id, c.Priority, c.DueAtUtc
  FROM @Candidates AS c
  INNER LOOP JOIN [chokaq].[JobsHot] AS h WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON h.Id = c.Id
  WHERE c.Queue = m.Queue AND h.Status = 0 AND h.DueAtUtc <= @now
  ORDER BY c.Priority DESC, c.DueAtUtc, c.Id
) AS k
WHERE m.Slots > 0;
WITH Batch AS (
  SELECT TOP (@2) b.Id, ROW_NUMBER() OVER (ORDER BY b.Priority DESC, b.DueAtUtc, b.Id) AS Rn
  FROM @Picked AS b ORDER BY b.Priority DESC, b.DueAtUtc, b.Id
)
UPDATE h SET h.Status = CASE WHEN k.Rn <= @5 THEN 2 ELSE 1 END,
  h.AttemptCount = CASE WHEN k.Rn <= @5 THEN h.AttemptCount + 1 ELSE h.AttemptCount END,
  h.StartedAtUtc = CASE WHEN k.Rn <= @5 THEN @now ELSE h.StartedAtUtc END,
  h.HeartbeatUtc = CASE WHEN k.Rn <= @5 THEN @now ELSE h.HeartbeatUtc END,
  h.WorkerId = @0, h.LeaseId = CAST(@1 AS varchar(36)), h.LastUpdatedUtc = @now
OUTPUT inserted.Id, inserted.Queue, inserted.Type, inserted.Payload, inserted.Tags, inserted.IdempotencyKey, inserted.Priority, inserted.Status, inserted.AttemptCount, inserted.WorkerId, inserted.LeaseId, inserted.HeartbeatUtc, inserted.ScheduledAtUtc, inserted.DueAtUtc, inserted.CreatedAtUtc, inserted.EnqueuedAtUtc, inserted.StartedAtUtc, inserted.LastUpdatedUtc, inserted.CreatedBy, inserted.LastModifiedBy, inserted.LastError, inserted.CancelRequestedUtc, inserted.Progress, inserted.ProgressNote, inserted.TraceContext, inserted.PayloadVersion, inserted.GroupKey, inserted.BatchId, inserted.WaitingOn, inserted.HasDependents INTO @Claimed (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, LeaseId, HeartbeatUtc, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, CancelRequestedUtc, Progress, ProgressNote, TraceContext, PayloadVersion, GroupKey, BatchId, WaitingOn, HasDependents)
FROM [chokaq].[JobsHot] AS h
INNER JOIN Batch AS k ON k.Id = h.Id
WHERE h.Status = 0;
-- Spend the started rows on their queues' rate windows (rows this transaction U-locked above),
-- the grouped queues' rows too.
WITH Spent AS (
  SELECT c.Queue, COUNT(*) AS N FROM @Claimed AS c
  WHERE c.Status = 2 AND c.Queue IN (SELECT r.Queue FROM @Runnable AS r WHERE r.RateMax IS NOT NULL)
  GROUP BY c.Queue
)
UPDATE q SET q.RatePrevCount = CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart)) THEN q.RateWindowCount ELSE q.RatePrevCount END,
  q.RatePrevLast = CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart)) THEN q.RateWindowLast ELSE q.RatePrevLast END,
  q.RateWindowCount = CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart)) THEN x.N ELSE q.RateWindowCount + x.N END,
  q.RateWindowStart = CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart)) THEN @now ELSE q.RateWindowStart END,
  q.RateWindowLast = @now
FROM Spent AS x
INNER LOOP JOIN [chokaq].[Queues] AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = x.Queue
WHERE q.RateLimitMax IS NOT NULL;
-- The rows started here count in the start bucket, with their lag, in this transaction.
IF @5 > 0 AND EXISTS (SELECT 1 FROM @Claimed AS c WHERE c.Status = 2)
BEGIN
DECLARE @BucketDelta TABLE (Queue varchar(255) NOT NULL, Outcome tinyint NOT NULL, FailureReason smallint NOT NULL, N bigint NOT NULL, DurationCount bigint NOT NULL, TotalDurationMs bigint NOT NULL, MaxDurationMs bigint NOT NULL, LagCount bigint NOT NULL, LagSumMs bigint NOT NULL, LagMaxMs bigint NOT NULL, PRIMARY KEY (Queue, Outcome, FailureReason));
INSERT INTO @BucketDelta (Queue, Outcome, FailureReason, N, DurationCount, TotalDurationMs, MaxDurationMs, LagCount, LagSumMs, LagMaxMs)
SELECT g.Queue, g.Outcome, g.FailureReason, COUNT_BIG(*), COUNT_BIG(g.DurationMs), ISNULL(SUM(g.DurationMs), 0), ISNULL(MAX(g.DurationMs), 0), COUNT_BIG(g.LagMs), ISNULL(SUM(g.LagMs), 0), ISNULL(MAX(g.LagMs), 0)
FROM (SELECT c.Queue, CAST(4 AS tinyint) AS Outcome, CAST(-1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs, CASE WHEN c.DueAtUtc < @now THEN DATEDIFF_BIG(MILLISECOND, c.DueAtUtc, @now) ELSE 0 END AS LagMs FROM @Claimed AS c WHERE c.Status = 2) AS g GROUP BY g.Queue, g.Outcome, g.FailureReason;
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
SELECT c.Id, c.Queue, c.Type, c.Payload, c.Tags, c.IdempotencyKey, c.Priority, c.Status, c.AttemptCount, c.WorkerId, c.LeaseId, CONVERT(varchar(33), c.HeartbeatUtc, 126) + 'Z' AS HeartbeatUtc, CONVERT(varchar(33), c.ScheduledAtUtc, 126) + 'Z' AS ScheduledAtUtc, CONVERT(varchar(33), c.CreatedAtUtc, 126) + 'Z' AS CreatedAtUtc, CONVERT(varchar(33), c.EnqueuedAtUtc, 126) + 'Z' AS EnqueuedAtUtc, CONVERT(varchar(33), c.StartedAtUtc, 126) + 'Z' AS StartedAtUtc, CONVERT(varchar(33), c.LastUpdatedUtc, 126) + 'Z' AS LastUpdatedUtc, c.CreatedBy, c.LastModifiedBy, c.LastError, CONVERT(varchar(33), c.CancelRequestedUtc, 126) + 'Z' AS CancelRequestedUtc, c.Progress, c.ProgressNote, c.TraceContext, c.PayloadVersion, c.GroupKey, c.BatchId, c.WaitingOn, c.HasDependents
FROM @Claimed AS c
ORDER BY c.Priority DESC, c.DueAtUtc, c.Id;
