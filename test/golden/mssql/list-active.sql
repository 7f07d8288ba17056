SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT TOP (@0) j.Id, j.Queue, j.Type, j.Status, j.AttemptCount, j.Priority, j.Tags, CONVERT(varchar(33), j.CreatedAtUtc, 126) + 'Z' AS CreatedAtUtc, CONVERT(varchar(33), j.EnqueuedAtUtc, 126) + 'Z' AS EnqueuedAtUtc, CONVERT(varchar(33), j.ScheduledAtUtc, 126) + 'Z' AS ScheduledAtUtc, CONVERT(varchar(33), j.StartedAtUtc, 126) + 'Z' AS StartedAtUtc, j.WorkerId, j.Progress, CONVERT(varchar(33), j.HeldSinceUtc, 126) + 'Z' AS HeldSinceUtc, CAST(LEFT(j.LastError, 200) AS nvarchar(200)) AS ErrorPrefix, DATALENGTH(j.Payload) AS PayloadBytes
FROM [chokaq].[JobsHot] AS j WHERE j.Queue = CAST(@1 AS varchar(255))
ORDER BY j.EnqueuedAtUtc DESC, j.Id DESC;
