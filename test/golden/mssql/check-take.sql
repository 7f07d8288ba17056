SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @Candidates TABLE (DependsOn varchar(36) NOT NULL, JobId varchar(36) NOT NULL, CreatedAtUtc datetime2(3) NOT NULL, PRIMARY KEY (DependsOn, JobId));
DECLARE @Taken TABLE (DependsOn varchar(36) NOT NULL, JobId varchar(36) NOT NULL, State tinyint NOT NULL, CreatedAtUtc datetime2(3) NOT NULL, PRIMARY KEY (DependsOn, JobId));
INSERT INTO @Candidates (DependsOn, JobId, CreatedAtUtc)
SELECT TOP (@0) c.DependsOn, c.JobId, c.CreatedAtUtc FROM [chokaq].[JobDependencies] AS c WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
WHERE c.NeedsCheck = 1
ORDER BY c.CreatedAtUtc;
INSERT INTO @Taken (DependsOn, JobId, State, CreatedAtUtc)
SELECT e.DependsOn, e.JobId, e.State, c.CreatedAtUtc
FROM @Candidates AS c
INNER LOOP JOIN [chokaq].[JobDependencies] AS e WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON e.DependsOn = c.DependsOn AND e.JobId = c.JobId
WHERE e.NeedsCheck = 1;
SELECT k.JobId, k.DependsOn, k.State FROM @Taken AS k ORDER BY k.CreatedAtUtc, k.DependsOn, k.JobId;
