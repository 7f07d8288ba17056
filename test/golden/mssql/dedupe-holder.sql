SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
SELECT k.JobId, CASE WHEN k.WindowEndsUtc > @now THEN 1 ELSE 0 END AS InWindow, h.Status AS HotStatus,
  CASE WHEN EXISTS (SELECT 1 FROM [chokaq].[JobsArchive] AS a WHERE a.Id = k.JobId AND a.FinishedAtUtc > DATEADD(MILLISECOND, -CAST(@1 % 1000 AS int), DATEADD(SECOND, -CAST(@1 / 1000 AS int), @now))) THEN 1 ELSE 0 END AS FinishedWithinWindow
FROM [chokaq].[DedupeKeys] AS k WITH (UPDLOCK, HOLDLOCK)
LEFT JOIN [chokaq].[JobsHot] AS h ON h.Id = k.JobId
WHERE k.[Key] = @0;
