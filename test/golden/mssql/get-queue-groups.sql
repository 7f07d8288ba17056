SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT TOP (@1) x.GroupKey AS group_key, SUM(x.Pending) AS pending, SUM(x.Running) AS running
FROM (
  SELECT h.GroupKey, COUNT_BIG(*) AS Pending, CAST(0 AS bigint) AS Running FROM [chokaq].[JobsHot] AS h
  WHERE h.Queue = CAST(@0 AS varchar(255)) AND h.Status = 0 AND h.GroupKey IS NOT NULL GROUP BY h.GroupKey
  UNION ALL
  SELECT h.GroupKey, CAST(0 AS bigint), COUNT_BIG(*) FROM [chokaq].[JobsHot] AS h
  WHERE h.Queue = CAST(@0 AS varchar(255)) AND h.Status IN (1, 2) AND h.GroupKey IS NOT NULL GROUP BY h.GroupKey
) AS x
GROUP BY x.GroupKey
ORDER BY SUM(x.Running) DESC, SUM(x.Pending) DESC, x.GroupKey;
