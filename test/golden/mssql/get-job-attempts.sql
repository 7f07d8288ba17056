SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT a.JobId, a.Seq, a.Attempt, a.WorkerId, a.LeaseId, CONVERT(varchar(33), a.StartedAtUtc, 126) + 'Z' AS StartedAtUtc, CONVERT(varchar(33), a.FinishedAtUtc, 126) + 'Z' AS FinishedAtUtc, a.Outcome, a.Error, a.DurationMs FROM [chokaq].[JobAttempts] AS a WHERE a.JobId = CAST(@0 AS varchar(36)) ORDER BY a.Seq;
