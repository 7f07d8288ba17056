SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
UPDATE h SET h.Progress = @3, h.ProgressNote = @4
FROM [chokaq].[JobsHot] AS h
WHERE h.Id = CAST(@0 AS varchar(36)) AND h.WorkerId = @1 AND h.LeaseId = CAST(@2 AS varchar(36)) AND h.Status = 2;
SELECT @@ROWCOUNT AS Affected;
