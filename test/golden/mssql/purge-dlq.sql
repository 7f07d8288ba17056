SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @Gone TABLE (Id varchar(36) NOT NULL PRIMARY KEY, HasDependents bit NULL, WaitingOn int NULL);
BEGIN TRAN;
DELETE d OUTPUT deleted.Id, deleted.HasDependents, deleted.WaitingOn INTO @Gone (Id, HasDependents, WaitingOn)
FROM [chokaq].[JobsDLQ] AS d WHERE d.Id IN (SELECT j.Id FROM OPENJSON(@0) WITH (Id varchar(36) '$') AS j);
DELETE x FROM [chokaq].[JobAttempts] AS x INNER JOIN @Gone AS g ON g.Id = x.JobId;
IF EXISTS (SELECT 1 FROM @Gone AS g WHERE g.HasDependents = 1 OR g.WaitingOn IS NOT NULL)
BEGIN
UPDATE e SET e.State = 4, e.NeedsCheck = 1, e.SettledAtUtc = @now
FROM @Gone AS g
INNER LOOP JOIN [chokaq].[JobDependencies] AS e ON e.DependsOn = g.Id
WHERE g.HasDependents = 1 AND e.State = 0
  AND NOT EXISTS (SELECT 1 FROM @Gone AS x WHERE x.Id = e.JobId AND x.WaitingOn IS NOT NULL);
DELETE e
FROM @Gone AS g
INNER LOOP JOIN [chokaq].[JobDependencies] AS e ON e.JobId = g.Id
WHERE g.WaitingOn IS NOT NULL;
END;
COMMIT;
SELECT COUNT_BIG(*) AS Affected FROM @Gone;
