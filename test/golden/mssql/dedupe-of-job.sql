SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT k.[Key], k.Mode, k.States, k.WindowMs, CONVERT(varchar(33), k.WindowStartedUtc, 126) + 'Z' AS WindowStartedUtc, CONVERT(varchar(33), k.WindowEndsUtc, 126) + 'Z' AS WindowEndsUtc FROM [chokaq].[DedupeKeys] AS k WHERE k.JobId = CAST(@0 AS varchar(36));
