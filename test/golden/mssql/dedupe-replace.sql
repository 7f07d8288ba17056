SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @due datetime2(3) = DATEADD(MILLISECOND, CAST(@4 % 1000 AS int), DATEADD(SECOND, CAST(@4 / 1000 AS int), @now));
DECLARE @Replaced TABLE (Id varchar(36) NOT NULL);
UPDATE h SET h.Payload = @1, h.PayloadVersion = @2, h.TraceContext = CAST(@3 AS varchar(2048)),
  h.ScheduledAtUtc = @due, h.DueAtUtc = @due, h.LastUpdatedUtc = @now
OUTPUT inserted.Id INTO @Replaced (Id)
FROM [chokaq].[JobsHot] AS h
WHERE h.Id = CAST(@0 AS varchar(36)) AND h.Status = 0;
UPDATE k SET k.WindowStartedUtc = @now, k.WindowEndsUtc = @due
FROM [chokaq].[DedupeKeys] AS k
WHERE k.[Key] = @5 AND EXISTS (SELECT 1 FROM @Replaced);
SELECT r.Id FROM @Replaced AS r;
