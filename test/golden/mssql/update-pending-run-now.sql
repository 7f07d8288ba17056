SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @Changed TABLE (Id varchar(36) NOT NULL);
UPDATE h SET h.ScheduledAtUtc = NULL, h.DueAtUtc = h.EnqueuedAtUtc, h.LastUpdatedUtc = @now, h.LastModifiedBy = ISNULL(@1, h.LastModifiedBy)
OUTPUT inserted.Id INTO @Changed (Id)
FROM [chokaq].[JobsHot] AS h
WHERE h.Id = CAST(@0 AS varchar(36)) AND h.Status = 0;
SELECT c.Id FROM @Changed AS c;
