SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
-- ChokaQ for NestJS: SQL Server schema [chokaq], JobsDLQ partitioned by FailedAtUtc.
-- storage.partitioning: the table partitioned by its time column (RANGE RIGHT, one partition per
-- period) on a function and scheme of its own, if it is not yet. Every index is rebuilt aligned,
-- which TRUNCATE TABLE ... WITH (PARTITIONS (n)) requires; the primary key becomes (Id, <time>), as
-- a unique index of a partitioned table must hold the partitioning column. An offline rebuild of
-- the whole table: its writers wait until it commits.
SET NOCOUNT ON;
SET XACT_ABORT ON;
-- Filtered indexes need these (sqlcmd starts with QUOTED_IDENTIFIER OFF).
SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
DECLARE @lockResult int;
DECLARE @b datetime2(3);
DECLARE @Converted bit = 0;
DECLARE @KeptRows bit = 0;
DECLARE @Bounds TABLE (Boundary datetime2(3) NOT NULL PRIMARY KEY);
DECLARE @Made TABLE (Boundary datetime2(3) NOT NULL);
INSERT INTO @Bounds (Boundary) SELECT DISTINCT CONVERT(datetime2(3), j.At, 126) FROM OPENJSON(@0) WITH (At varchar(23) '$') AS j;
BEGIN TRAN;
EXEC @lockResult = sp_getapplock @Resource = N'chokaq:schema:chokaq', @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 60000;
IF @lockResult < 0
BEGIN
  THROW 51000, 'ChokaQ: could not take the schema bootstrap lock within 60 s (another process is migrating the schema).', 1;
END;
SET LOCK_TIMEOUT 5000;
IF NOT EXISTS (SELECT 1 FROM sys.indexes AS c INNER JOIN sys.partition_schemes AS ps ON ps.data_space_id = c.data_space_id WHERE c.object_id = OBJECT_ID(N'[chokaq].[JobsDLQ]') AND c.index_id IN (0, 1) AND ps.name = N'PS_chokaq_JobsDLQ')
BEGIN
  SET @Converted = 1;
  IF EXISTS (SELECT 1 FROM [chokaq].[JobsDLQ]) SET @KeptRows = 1;
  SET @b = (SELECT MIN(n.Boundary) FROM @Bounds AS n);
  IF NOT EXISTS (SELECT 1 FROM sys.partition_functions WHERE name = N'PF_chokaq_JobsDLQ')
    EXEC sys.sp_executesql N'CREATE PARTITION FUNCTION [PF_chokaq_JobsDLQ] (datetime2(3)) AS RANGE RIGHT FOR VALUES (@b);', N'@b datetime2(3)', @b = @b;
  IF NOT EXISTS (SELECT 1 FROM sys.partition_schemes WHERE name = N'PS_chokaq_JobsDLQ')
    EXEC(N'CREATE PARTITION SCHEME [PS_chokaq_JobsDLQ] AS PARTITION [PF_chokaq_JobsDLQ] ALL TO ([PRIMARY]);');
  SET @b = (SELECT MIN(n.Boundary) FROM @Bounds AS n WHERE n.Boundary > (SELECT MAX(CAST(v.value AS datetime2(3))) FROM sys.partition_range_values AS v INNER JOIN sys.partition_functions AS f ON f.function_id = v.function_id WHERE f.name = N'PF_chokaq_JobsDLQ'));
  WHILE @b IS NOT NULL
  BEGIN
    ALTER PARTITION SCHEME [PS_chokaq_JobsDLQ] NEXT USED [PRIMARY];
    EXEC sys.sp_executesql N'ALTER PARTITION FUNCTION [PF_chokaq_JobsDLQ]() SPLIT RANGE (@b);', N'@b datetime2(3)', @b = @b;
    INSERT INTO @Made (Boundary) VALUES (@b);
    SET @b = (SELECT MIN(n.Boundary) FROM @Bounds AS n WHERE n.Boundary > @b);
  END;
  DROP INDEX IF EXISTS [IX_JobsDLQ_FailedAtUtc] ON [chokaq].[JobsDLQ];
  DROP INDEX IF EXISTS [IX_JobsDLQ_Queue] ON [chokaq].[JobsDLQ];
  DROP INDEX IF EXISTS [IX_JobsDLQ_Reason] ON [chokaq].[JobsDLQ];
  DROP INDEX IF EXISTS [IX_JobsDLQ_Type] ON [chokaq].[JobsDLQ];
  DROP INDEX IF EXISTS [IX_JobsDLQ_Batch] ON [chokaq].[JobsDLQ];
  ALTER TABLE [chokaq].[JobsDLQ] DROP CONSTRAINT [PK_JobsDLQ];
  EXEC(N'ALTER TABLE [chokaq].[JobsDLQ] ADD CONSTRAINT [PK_JobsDLQ] PRIMARY KEY CLUSTERED (Id, FailedAtUtc) WITH (DATA_COMPRESSION = PAGE) ON [PS_chokaq_JobsDLQ] (FailedAtUtc);');
  EXEC(N'CREATE NONCLUSTERED INDEX [IX_JobsDLQ_FailedAtUtc] ON [chokaq].[JobsDLQ] (FailedAtUtc) WITH (DATA_COMPRESSION = PAGE) ON [PS_chokaq_JobsDLQ] (FailedAtUtc);');
  EXEC(N'CREATE NONCLUSTERED INDEX [IX_JobsDLQ_Queue] ON [chokaq].[JobsDLQ] (Queue, FailedAtUtc) WITH (DATA_COMPRESSION = PAGE) ON [PS_chokaq_JobsDLQ] (FailedAtUtc);');
  EXEC(N'CREATE NONCLUSTERED INDEX [IX_JobsDLQ_Reason] ON [chokaq].[JobsDLQ] (FailureReason, FailedAtUtc) WITH (DATA_COMPRESSION = PAGE) ON [PS_chokaq_JobsDLQ] (FailedAtUtc);');
  EXEC(N'CREATE NONCLUSTERED INDEX [IX_JobsDLQ_Type] ON [chokaq].[JobsDLQ] (Type, FailedAtUtc) WITH (DATA_COMPRESSION = PAGE) ON [PS_chokaq_JobsDLQ] (FailedAtUtc);');
  EXEC(N'CREATE NONCLUSTERED INDEX [IX_JobsDLQ_Batch] ON [chokaq].[JobsDLQ] (BatchId) WHERE BatchId IS NOT NULL WITH (DATA_COMPRESSION = PAGE) ON [PS_chokaq_JobsDLQ] (FailedAtUtc);');
END;
COMMIT;
SELECT @Converted AS Converted, @KeptRows AS KeptRows;
