SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT k.Slot, b.Outcome,
  SUM(b.CompletedCount) AS CompletedCount, SUM(b.DurationCount) AS DurationCount,
  SUM(b.TotalDurationMs) AS TotalDurationMs, SUM(b.LagCount) AS LagCount,
  SUM(b.LagSumMs) AS LagSumMs, MAX(b.LagMaxMs) AS LagMaxMs
FROM [chokaq].[MetricBuckets] AS b WITH (NOLOCK)
CROSS APPLY (SELECT DATEDIFF_BIG(MILLISECOND, CONVERT(datetime2(3), @0, 126), b.BucketUtc) / @2 AS Slot) AS k
WHERE b.BucketUtc >= CONVERT(datetime2(3), @0, 126) AND b.BucketUtc < CONVERT(datetime2(3), @1, 126) AND b.Queue = CAST(@3 AS varchar(255))
GROUP BY k.Slot, b.Outcome;
