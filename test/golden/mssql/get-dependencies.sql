SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT x.Dir, x.JobId, x.DependsOn, x.OnFailure, x.State,
  CASE WHEN EXISTS (SELECT 1 FROM [chokaq].[JobsHot] AS h WHERE h.Id = x.DependsOn) THEN 'hot'
       WHEN EXISTS (SELECT 1 FROM [chokaq].[JobsArchive] AS a WHERE a.Id = x.DependsOn) THEN 'archive'
       WHEN EXISTS (SELECT 1 FROM [chokaq].[JobsDLQ] AS d WHERE d.Id = x.DependsOn) THEN 'dlq'
       ELSE 'removed' END AS Pillar
FROM (
  SELECT 'on' AS Dir, e.JobId, e.DependsOn, e.OnFailure, e.State FROM [chokaq].[JobDependencies] AS e WHERE e.JobId = CAST(@0 AS varchar(36))
  UNION ALL
  SELECT b.Dir, b.JobId, b.DependsOn, b.OnFailure, b.State FROM (
    SELECT TOP (1001) 'by' AS Dir, e.JobId, e.DependsOn, e.OnFailure, e.State FROM [chokaq].[JobDependencies] AS e
    WHERE e.DependsOn = CAST(@0 AS varchar(36)) ORDER BY e.JobId
  ) AS b
) AS x
ORDER BY x.Dir DESC, x.DependsOn, x.JobId;
