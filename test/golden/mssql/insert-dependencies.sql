SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @Edges TABLE (DependsOn varchar(36) NOT NULL, JobId varchar(36) NOT NULL, OnFailure tinyint NOT NULL, State tinyint NOT NULL, NeedsCheck bit NOT NULL, PRIMARY KEY (DependsOn, JobId));
DECLARE @Waits TABLE (Id varchar(36) NOT NULL PRIMARY KEY, N int NOT NULL);
INSERT INTO @Edges (DependsOn, JobId, OnFailure, State, NeedsCheck)
SELECT e.DependsOn, e.JobId, e.OnFailure, e.State, e.NeedsCheck FROM OPENJSON(@0) WITH (DependsOn varchar(36) '$.dependsOn', JobId varchar(36) '$.jobId', OnFailure tinyint '$.onFailure', State tinyint '$.state', NeedsCheck bit '$.needsCheck') AS e;
INSERT INTO @Waits (Id, N)
SELECT w.Id, w.N FROM OPENJSON(@1) WITH (Id varchar(36) '$.id', N int '$.n') AS w;
INSERT INTO [chokaq].[JobDependencies] (DependsOn, JobId, OnFailure, State, NeedsCheck, CreatedAtUtc, SettledAtUtc)
SELECT e.DependsOn, e.JobId, e.OnFailure, e.State, e.NeedsCheck, @now, CASE WHEN e.State <> 0 THEN @now END
FROM @Edges AS e
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[JobDependencies] AS x WHERE x.DependsOn = e.DependsOn AND x.JobId = e.JobId);
UPDATE h SET h.WaitingOn = w.N, h.Status = CASE WHEN w.N = 0 THEN 0 ELSE 7 END, h.LastUpdatedUtc = @now
FROM @Waits AS w
INNER LOOP JOIN [chokaq].[JobsHot] AS h ON h.Id = w.Id
WHERE h.Status = 7;
