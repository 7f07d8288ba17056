/** Prepare, the schema bootstrap under `sp_getapplock`, the schema status, and the database clock. */
import { MssqlStatement, ParamList } from '../mssql-params';
import { mssqlBinaryKeysScript, mssqlSchemaDdl, qualify } from '../mssql.schema';
import { isoText } from './fragments';

/**
 * The database's compatibility level (OPENJSON needs 130+), checked by `prepare()`, and the
 * collation of `JobsHot.Queue` (NULL while the table does not exist), which tells whether the
 * install's key columns are binary (`BINARY_KEY_COLLATION`).
 */
export function prepare(schema: string): MssqlStatement {
  const hot = qualify(schema, 'hot');
  return new ParamList().statement(
    `SELECT CAST(compatibility_level AS int) AS CompatibilityLevel, name AS DatabaseName, (SELECT c.collation_name FROM sys.columns AS c WHERE c.object_id = OBJECT_ID(N'${hot}', N'U') AND c.name = N'Queue') AS KeyCollation FROM sys.databases WHERE name = DB_NAME();`,
  );
}

/** The full DDL (see `mssqlSchemaDdl`), as a statement without parameters. */
export function ensureSchema(schema: string): MssqlStatement {
  return new ParamList().statement(mssqlSchemaDdl(schema));
}

/** The conversion of an install's key columns to the binary collation (see `mssqlBinaryKeysScript`). */
export function convertKeysToBinary(schema: string): MssqlStatement {
  return new ParamList().statement(mssqlBinaryKeysScript(schema));
}

/**
 * The versions the schema's ledger records, for `schemaStatus`: none while the ledger does not
 * exist yet. A plain READ COMMITTED read without a lock hint, outside the bootstrap's applock, so
 * it never waits for a migration in progress beyond that transaction's row locks. The SELECT from
 * the ledger compiles while the table is missing (deferred name resolution:
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/create-procedure-transact-sql#deferred-name-resolution)
 * and the `OBJECT_ID` test keeps it from running then
 * (https://learn.microsoft.com/en-us/sql/t-sql/functions/object-id-transact-sql). The versions go
 * through a table variable so the batch always returns its one result set.
 */
export function schemaStatus(schema: string): MssqlStatement {
  const ledger = qualify(schema, 'migrations');
  return new ParamList().statement(
    [
      `SET NOCOUNT ON;`,
      `DECLARE @Versions TABLE (Version int NOT NULL);`,
      `IF OBJECT_ID(N'${ledger}', N'U') IS NOT NULL`,
      `  INSERT INTO @Versions (Version) SELECT Version FROM ${ledger};`,
      `SELECT Version FROM @Versions ORDER BY Version;`,
    ].join('\n'),
  );
}

/** The database clock, as ISO text. */
export function now(): MssqlStatement {
  return new ParamList().statement(
    `SELECT ${isoText('CAST(SYSUTCDATETIME() AS datetime2(3))')} AS NowUtc;`,
  );
}
