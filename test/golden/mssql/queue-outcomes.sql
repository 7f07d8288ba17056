SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @bucket datetime2(0) = CAST(DATEADD(SECOND, -DATEPART(SECOND, @now), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now)) AS datetime2(0));
DECLARE @from datetime2(0) = DATEADD(MINUTE, -@0, @bucket);
SELECT q.Name AS Queue, @from AS FromUtc,
  ISNULL(o.Succeeded, 0) AS Succeeded, ISNULL(o.Failed, 0) AS Failed,
  ISNULL(o.Cancelled, 0) AS Cancelled, ISNULL(o.Retried, 0) AS Retried
FROM [chokaq].[Queues] AS q WITH (NOLOCK)
LEFT JOIN (
  SELECT b.Queue, SUM(CASE WHEN b.Outcome = 0 THEN b.CompletedCount ELSE 0 END) AS Succeeded, SUM(CASE WHEN b.Outcome = 1 THEN b.CompletedCount ELSE 0 END) AS Failed,
    SUM(CASE WHEN b.Outcome = 2 THEN b.CompletedCount ELSE 0 END) AS Cancelled, SUM(CASE WHEN b.Outcome = 3 THEN b.CompletedCount ELSE 0 END) AS Retried
  FROM [chokaq].[MetricBuckets] AS b WITH (NOLOCK)
  WHERE b.BucketUtc >= @from AND b.Outcome IN (0, 1, 2, 3)
  GROUP BY b.Queue
) AS o ON o.Queue = q.Name
ORDER BY q.Name;
