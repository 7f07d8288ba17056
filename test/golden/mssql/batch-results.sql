SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT TOP (@0) a.Id, a.Result FROM [chokaq].[JobsArchive] AS a
WHERE a.BatchId = CAST(@1 AS varchar(36)) AND a.BatchId IS NOT NULL AND a.Id > CAST(@2 AS varchar(36))
  AND NOT EXISTS (SELECT 1 FROM [chokaq].[BatchCallbacks] AS x WHERE x.JobId = a.Id)
ORDER BY a.Id;
