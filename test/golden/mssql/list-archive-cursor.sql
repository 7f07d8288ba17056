SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT TOP (@0) j.Id, j.Queue, j.Type, j.AttemptCount, j.Priority, j.Tags, CONVERT(varchar(33), j.CreatedAtUtc, 126) + 'Z' AS CreatedAtUtc, CONVERT(varchar(33), j.EnqueuedAtUtc, 126) + 'Z' AS EnqueuedAtUtc, CONVERT(varchar(33), j.ScheduledAtUtc, 126) + 'Z' AS ScheduledAtUtc, CONVERT(varchar(33), j.StartedAtUtc, 126) + 'Z' AS StartedAtUtc, CONVERT(varchar(33), j.FinishedAtUtc, 126) + 'Z' AS FinishedAtUtc, j.DurationMs, j.WorkerId, j.Progress, CAST(LEFT(j.LastError, 200) AS nvarchar(200)) AS ErrorPrefix, DATALENGTH(j.Payload) AS PayloadBytes
FROM [chokaq].[JobsArchive] AS j WHERE j.Queue = CAST(@1 AS varchar(255)) AND j.FinishedAtUtc >= CONVERT(datetime2(3), @2, 126) AND (j.FinishedAtUtc > CONVERT(datetime2(3), @2, 126) OR (j.FinishedAtUtc = CONVERT(datetime2(3), @2, 126) AND j.Id > CAST(@3 AS varchar(36))))
ORDER BY j.FinishedAtUtc ASC, j.Id ASC;
