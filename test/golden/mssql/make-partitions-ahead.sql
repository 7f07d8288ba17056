SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @lockResult int;
DECLARE @b datetime2(3);
DECLARE @Bounds TABLE (Boundary datetime2(3) NOT NULL PRIMARY KEY);
DECLARE @Made TABLE (Boundary datetime2(3) NOT NULL);
INSERT INTO @Bounds (Boundary) SELECT DISTINCT CONVERT(datetime2(3), j.At, 126) FROM OPENJSON(@0) WITH (At varchar(23) '$') AS j;
BEGIN TRAN;
BEGIN TRY
  EXEC @lockResult = sp_getapplock @Resource = N'chokaq:partitions:chokaq', @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 1000;
  IF @lockResult < 0
    THROW 51001, 'ChokaQ: another process is changing the partitions of schema [chokaq]; the next maintenance pass tries again.', 1;
  SET LOCK_TIMEOUT 1000;
  IF EXISTS (SELECT 1 FROM sys.indexes AS c INNER JOIN sys.partition_schemes AS ps ON ps.data_space_id = c.data_space_id WHERE c.object_id = OBJECT_ID(N'[chokaq].[JobsArchive]') AND c.index_id IN (0, 1) AND ps.name = N'PS_chokaq_JobsArchive')
  BEGIN
    SET @b = (SELECT MIN(n.Boundary) FROM @Bounds AS n WHERE n.Boundary > (SELECT MAX(CAST(v.value AS datetime2(3))) FROM sys.partition_range_values AS v INNER JOIN sys.partition_functions AS f ON f.function_id = v.function_id WHERE f.name = N'PF_chokaq_JobsArchive'));
    WHILE @b IS NOT NULL
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM [chokaq].[JobsArchive] AS x WHERE x.FinishedAtUtc >= @b)
      BEGIN
        ALTER PARTITION SCHEME [PS_chokaq_JobsArchive] NEXT USED [PRIMARY];
        EXEC sys.sp_executesql N'ALTER PARTITION FUNCTION [PF_chokaq_JobsArchive]() SPLIT RANGE (@b);', N'@b datetime2(3)', @b = @b;
        INSERT INTO @Made (Boundary) VALUES (@b);
      END;
      SET @b = (SELECT MIN(n.Boundary) FROM @Bounds AS n WHERE n.Boundary > @b);
    END;
  END;
  COMMIT;
END TRY
BEGIN CATCH
  IF XACT_STATE() <> 0 ROLLBACK;
  IF ERROR_NUMBER() = 1222
    THROW 51001, 'ChokaQ: a partition change waited 1000 ms for a table lock; the next maintenance pass tries again.', 1;
  THROW;
END CATCH;
SELECT CONVERT(varchar(33), m.Boundary, 126) + 'Z' AS Boundary FROM @Made AS m ORDER BY m.Boundary;
