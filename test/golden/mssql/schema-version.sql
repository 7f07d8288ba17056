SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
IF OBJECT_ID(N'[chokaq].[SchemaMigrations]', N'U') IS NULL
  SELECT CAST(NULL AS int) AS Version;
ELSE
  SELECT MAX(Version) AS Version FROM [chokaq].[SchemaMigrations];
