SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
UPDATE [chokaq].[RecurringJobs] SET LastSlotUtc = CONVERT(datetime2(3), @1, 126), NextSlotUtc = CONVERT(datetime2(3), @2, 126), LastJobId = COALESCE(CAST(@3 AS varchar(36)), LastJobId), LastUpdatedUtc = SYSUTCDATETIME()
WHERE Name = @0 AND NextSlotUtc = CONVERT(datetime2(3), @1, 126);
SELECT @@ROWCOUNT AS Affected;
