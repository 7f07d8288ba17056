SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
UPDATE k SET k.JobId = CAST(@1 AS varchar(36)), k.Mode = @2, k.States = @3, k.WindowMs = @4,
  k.WindowStartedUtc = @now, k.WindowEndsUtc = CASE WHEN @2 = 3 THEN NULL ELSE DATEADD(MILLISECOND, CAST(@4 % 1000 AS int), DATEADD(SECOND, CAST(@4 / 1000 AS int), @now)) END
FROM [chokaq].[DedupeKeys] AS k
WHERE k.[Key] = @0;
