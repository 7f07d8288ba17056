SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @cutoff datetime2(3) = DATEADD(MILLISECOND, -CAST(@1 % 1000 AS int), DATEADD(SECOND, -CAST(@1 / 1000 AS int), @now));
DECLARE @Gone TABLE (Id varchar(36) NOT NULL PRIMARY KEY, HasDependents bit NULL, WaitingOn int NULL);
BEGIN TRAN;
WITH Expired AS (
  SELECT TOP (@0) x.Id, x.FinishedAtUtc, x.HasDependents, x.WaitingOn FROM [chokaq].[JobsArchive] AS x WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
  WHERE x.FinishedAtUtc < @cutoff AND (x.FinishedAtUtc < CONVERT(datetime2(3), @2, 126) OR x.FinishedAtUtc >= CONVERT(datetime2(3), @3, 126))
  ORDER BY x.FinishedAtUtc
)
DELETE FROM Expired OUTPUT deleted.Id, deleted.HasDependents, deleted.WaitingOn INTO @Gone (Id, HasDependents, WaitingOn);
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
