SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @Done TABLE (DependsOn varchar(36) NOT NULL, JobId varchar(36) NOT NULL, PRIMARY KEY (DependsOn, JobId));
INSERT INTO @Done (DependsOn, JobId)
SELECT DISTINCT j.DependsOn, j.JobId FROM OPENJSON(@0) WITH (DependsOn varchar(36) '$.dependsOn', JobId varchar(36) '$.jobId') AS j
WHERE j.DependsOn IS NOT NULL AND j.JobId IS NOT NULL;
UPDATE e SET e.NeedsCheck = 0
FROM @Done AS d
INNER LOOP JOIN [chokaq].[JobDependencies] AS e ON e.DependsOn = d.DependsOn AND e.JobId = d.JobId;
