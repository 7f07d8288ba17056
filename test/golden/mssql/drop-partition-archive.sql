SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @partition int = @0;
DECLARE @from datetime2(3) = CONVERT(datetime2(3), @1, 126);
DECLARE @to datetime2(3) = CONVERT(datetime2(3), @2, 126);
DECLARE @cutoff datetime2(3) = DATEADD(MILLISECOND, -CAST(@3 % 1000 AS int), DATEADD(SECOND, -CAST(@3 / 1000 AS int), @now));
DECLARE @lockResult int;
DECLARE @found int = 0;
DECLARE @truncate nvarchar(400);
DECLARE @Gone TABLE (Id varchar(36) NOT NULL PRIMARY KEY, HasDependents bit NULL, WaitingOn int NULL);
BEGIN TRAN;
BEGIN TRY
  EXEC @lockResult = sp_getapplock @Resource = N'chokaq:partitions:chokaq', @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 1000;
  IF @lockResult < 0
    THROW 51001, 'ChokaQ: another process is changing the partitions of schema [chokaq]; the next maintenance pass tries again.', 1;
  SET LOCK_TIMEOUT 1000;
  SELECT @found = COUNT(*) FROM sys.partition_functions AS pf
  INNER JOIN sys.partition_range_values AS lo ON lo.function_id = pf.function_id AND lo.boundary_id = @partition - 1
  INNER JOIN sys.partition_range_values AS hi ON hi.function_id = pf.function_id AND hi.boundary_id = @partition
  WHERE pf.name = N'PF_chokaq_JobsArchive' AND CAST(lo.value AS datetime2(3)) = @from AND CAST(hi.value AS datetime2(3)) = @to AND @to <= @cutoff;
  IF @found = 1
  BEGIN
    INSERT INTO @Gone (Id, HasDependents, WaitingOn)
    SELECT x.Id, x.HasDependents, x.WaitingOn FROM [chokaq].[JobsArchive] AS x
    WHERE x.FinishedAtUtc >= @from AND x.FinishedAtUtc < @to;
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
    SET @truncate = N'TRUNCATE TABLE [chokaq].[JobsArchive] WITH (PARTITIONS (' + CAST(@partition AS nvarchar(10)) + N'));';
    EXEC sys.sp_executesql @truncate;
    EXEC sys.sp_executesql N'ALTER PARTITION FUNCTION [PF_chokaq_JobsArchive]() MERGE RANGE (@b);', N'@b datetime2(3)', @b = @from;
  END;
  COMMIT;
END TRY
BEGIN CATCH
  IF XACT_STATE() <> 0 ROLLBACK;
  IF ERROR_NUMBER() = 1222
    THROW 51001, 'ChokaQ: a partition change waited 1000 ms for a table lock; the next maintenance pass tries again.', 1;
  THROW;
END CATCH;
SELECT @found AS Removed, COUNT_BIG(*) AS Affected FROM @Gone;
