SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT
  (SELECT ISNULL(SUM(s.SucceededTotal), 0) FROM [chokaq].[StatsSummary] AS s WITH (NOLOCK)) AS SucceededTotal,
  (SELECT ISNULL(SUM(s.FailedTotal), 0) FROM [chokaq].[StatsSummary] AS s WITH (NOLOCK)) AS FailedTotal,
  (SELECT ISNULL(SUM(s.CancelledTotal), 0) FROM [chokaq].[StatsSummary] AS s WITH (NOLOCK)) AS CancelledTotal,
  (SELECT ISNULL(SUM(s.RetriedTotal), 0) FROM [chokaq].[StatsSummary] AS s WITH (NOLOCK)) AS RetriedTotal,
  (SELECT ISNULL(SUM(s.DeferredTotal), 0) FROM [chokaq].[StatsSummary] AS s WITH (NOLOCK)) AS DeferredTotal,
  (SELECT ISNULL(SUM(s.ResurrectedTotal), 0) FROM [chokaq].[StatsSummary] AS s WITH (NOLOCK)) AS ResurrectedTotal,
  (SELECT COUNT_BIG(*) FROM [chokaq].[JobsHot] AS c WITH (NOLOCK) WHERE c.Status = 0) AS Pending,
  (SELECT COUNT_BIG(*) FROM [chokaq].[JobsHot] AS c WITH (NOLOCK) WHERE c.Status = 1) AS Fetched,
  (SELECT COUNT_BIG(*) FROM [chokaq].[JobsHot] AS c WITH (NOLOCK) WHERE c.Status = 2) AS Processing,
  (SELECT COUNT_BIG(*) FROM [chokaq].[JobsHot] AS c WITH (NOLOCK) WHERE c.Status = 7) AS Waiting,
  (SELECT ISNULL(SUM(CAST(p.rows AS bigint)), 0) FROM sys.partitions AS p WHERE p.object_id = OBJECT_ID(N'[chokaq].[JobsArchive]') AND p.index_id IN (0, 1)) AS Archived,
  (SELECT ISNULL(SUM(CAST(p.rows AS bigint)), 0) FROM sys.partitions AS p WHERE p.object_id = OBJECT_ID(N'[chokaq].[JobsDLQ]') AND p.index_id IN (0, 1)) AS Dlq;
