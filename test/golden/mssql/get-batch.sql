SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT b.Id, CONVERT(varchar(33), b.CreatedAtUtc, 126) + 'Z' AS CreatedAtUtc, b.CreatedBy, b.Total, b.Succeeded, b.Failed, b.Fired, CONVERT(varchar(33), b.SettledAtUtc, 126) + 'Z' AS SettledAtUtc, c.Kind, c.JobId, c.Queue, c.Type
FROM [chokaq].[Batches] AS b
LEFT JOIN [chokaq].[BatchCallbacks] AS c ON c.BatchId = b.Id
WHERE b.Id = CAST(@0 AS varchar(36))
ORDER BY c.Kind;
