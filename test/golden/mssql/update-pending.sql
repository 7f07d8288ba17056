SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @Changed TABLE (Id varchar(36) NOT NULL);
UPDATE h SET h.Payload = @1, h.PayloadVersion = @2, h.Tags = @3, h.Priority = @4, h.ScheduledAtUtc = CONVERT(datetime2(3), @5, 126), h.DueAtUtc = CONVERT(datetime2(3), @5, 126), h.LastUpdatedUtc = @now, h.LastModifiedBy = ISNULL(@6, h.LastModifiedBy)
OUTPUT inserted.Id INTO @Changed (Id)
FROM [chokaq].[JobsHot] AS h
WHERE h.Id = CAST(@0 AS varchar(36)) AND h.Status = 0 AND h.Queue = CAST(@7 AS varchar(255)) AND h.Type = @8;
SELECT c.Id FROM @Changed AS c;
