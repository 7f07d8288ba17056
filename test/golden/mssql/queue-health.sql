SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @bucket datetime2(0) = CAST(DATEADD(SECOND, -DATEPART(SECOND, @now), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now)) AS datetime2(0));
SELECT q.Name AS Queue, q.MaxWorkers,
  ISNULL(d.DuePending, 0) AS DuePending, ISNULL(d.DueLagSumMs, 0) AS DueLagSumMs, ISNULL(d.MaxLagMs, 0) AS MaxLagMs,
  ISNULL(h.HeldPending, 0) AS HeldPending, ISNULL(h.HeldLagSumMs, 0) AS HeldLagSumMs,
  ISNULL(h.HeldMaxLagMs, 0) AS HeldMaxLagMs, CONVERT(varchar(33), h.HeldUntilUtc, 126) + 'Z' AS HeldUntilUtc,
  ISNULL(a.Active, 0) AS Active,
  ISNULL(l.LagCount, 0) AS LagCount, ISNULL(l.LagSumMs, 0) AS LagSumMs, ISNULL(l.LagMaxMs, 0) AS LagMaxMs
FROM [chokaq].[Queues] AS q WITH (NOLOCK)
LEFT JOIN (
  SELECT x.Queue, COUNT_BIG(*) AS DuePending, SUM(CAST(DATEDIFF_BIG(MILLISECOND, x.DueAtUtc, @now) AS float)) AS DueLagSumMs, MAX(DATEDIFF_BIG(MILLISECOND, x.DueAtUtc, @now)) AS MaxLagMs
  FROM [chokaq].[JobsHot] AS x WITH (NOLOCK)
  WHERE x.Status = 0 AND x.DueAtUtc <= @now
  GROUP BY x.Queue
) AS d ON d.Queue = q.Name
LEFT JOIN (
  SELECT z.Queue, COUNT_BIG(*) AS HeldPending, SUM(CAST(DATEDIFF_BIG(MILLISECOND, z.HeldSinceUtc, @now) AS float)) AS HeldLagSumMs, MAX(DATEDIFF_BIG(MILLISECOND, z.HeldSinceUtc, @now)) AS HeldMaxLagMs, MIN(z.DueAtUtc) AS HeldUntilUtc
  FROM [chokaq].[JobsHot] AS z WITH (NOLOCK)
  WHERE z.Status = 0 AND z.HeldSinceUtc IS NOT NULL AND z.DueAtUtc > @now
  GROUP BY z.Queue
) AS h ON h.Queue = q.Name
LEFT JOIN (
  SELECT y.Queue, COUNT_BIG(*) AS Active FROM [chokaq].[JobsHot] AS y WITH (NOLOCK) WHERE y.Status IN (1, 2) GROUP BY y.Queue
) AS a ON a.Queue = q.Name
LEFT JOIN (
  SELECT b.Queue, SUM(b.LagCount) AS LagCount, SUM(b.LagSumMs) AS LagSumMs, MAX(b.LagMaxMs) AS LagMaxMs
  FROM [chokaq].[MetricBuckets] AS b WITH (NOLOCK)
  WHERE b.Outcome = 4 AND b.BucketUtc >= DATEADD(MINUTE, -5, @bucket)
  GROUP BY b.Queue
) AS l ON l.Queue = q.Name
ORDER BY q.Name;
