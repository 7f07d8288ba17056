SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT q.Name AS Queue, q.IsPaused, q.IsActive, q.MaxWorkers,
  ISNULL(p.Pending, 0) AS Pending, ISNULL(a.Fetched, 0) AS Fetched, ISNULL(a.Processing, 0) AS Processing,
  ISNULL(w.Waiting, 0) AS Waiting,
  ISNULL(s.SucceededTotal, 0) AS SucceededTotal, ISNULL(s.FailedTotal, 0) AS FailedTotal,
  ISNULL(s.CancelledTotal, 0) AS CancelledTotal, ISNULL(s.RetriedTotal, 0) AS RetriedTotal,
  ISNULL(s.DeferredTotal, 0) AS DeferredTotal,
  ISNULL(s.ResurrectedTotal, 0) AS ResurrectedTotal, CONVERT(varchar(33), s.LastActivityUtc, 126) + 'Z' AS LastActivityUtc
FROM [chokaq].[Queues] AS q WITH (NOLOCK)
LEFT JOIN (
  SELECT x.Queue, COUNT_BIG(*) AS Pending FROM [chokaq].[JobsHot] AS x WITH (NOLOCK) WHERE x.Status = 0 GROUP BY x.Queue
) AS p ON p.Queue = q.Name
LEFT JOIN (
  SELECT y.Queue,
    SUM(CASE WHEN y.Status = 1 THEN 1 ELSE 0 END) AS Fetched,
    SUM(CASE WHEN y.Status = 2 THEN 1 ELSE 0 END) AS Processing
  FROM [chokaq].[JobsHot] AS y WITH (NOLOCK) WHERE y.Status IN (1, 2) GROUP BY y.Queue
) AS a ON a.Queue = q.Name
LEFT JOIN (
  SELECT z.Queue, COUNT_BIG(*) AS Waiting FROM [chokaq].[JobsHot] AS z WITH (NOLOCK) WHERE z.Status = 7 GROUP BY z.Queue
) AS w ON w.Queue = q.Name
LEFT JOIN [chokaq].[StatsSummary] AS s WITH (NOLOCK) ON s.Queue = q.Name
ORDER BY q.Name;
