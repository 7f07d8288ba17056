/**
 * The schema ledger and its advisory lock, the session statements of ChokaQ's own transactions,
 * and the server's clock and version.
 */

/** Reads the applied migration versions, or nothing when the ledger does not exist yet (no lock). */
export const selectAppliedVersions = (s: string): string => `
SELECT version FROM ${s}.schema_migrations ORDER BY version`;

/**
 * Whether a table of the schema exists now (`to_regclass`: NULL until it does; no lock): the
 * ledger before the schema was created, a partition a maintenance change is about to make or drop.
 * $1 = quoted schema-qualified name.
 */
export const SELECT_TABLE_EXISTS = `SELECT to_regclass($1) IS NOT NULL AS exists`;

/** Binds {@link SELECT_TABLE_EXISTS}: $1 the table `table` of the quoted schema `s`. */
export function selectTableExistsParams(s: string, table: string): unknown[] {
  return [`${s}.${table}`];
}

/**
 * Serialises schema bootstrap across processes: a transaction-scoped advisory lock keyed by the
 * schema name, released by COMMIT/ROLLBACK (never leaks when a process dies). $1 = schema name.
 */
export const LOCK_SCHEMA = `SELECT pg_advisory_xact_lock(hashtextextended('chokaq.schema:' || $1, 0))`;

/** Binds {@link LOCK_SCHEMA}: $1 the schema name (unquoted). */
export function lockSchemaParams(schemaName: string): unknown[] {
  return [schemaName];
}

/**
 * The job-id columns (`$2`, as `table.column`) of the schema `$1` (unquoted) whose collation is not
 * byte-wise "C", from the catalog (no lock), for `convertKeysToBinary`: none on a new install, whose
 * version 23 gave them "C", all of them on an install that held jobs then. A partition's columns
 * are not listed: they follow their parent's.
 */
export const SELECT_JOB_ID_COLUMNS_NOT_BYTE_WISE = `
SELECT c.relname AS table_name, a.attname AS column_name
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation
WHERE n.nspname = $1 AND (c.relname || '.' || a.attname) = ANY ($2::text[])
  AND NOT a.attisdropped AND co.collname <> 'C'
ORDER BY 1, 2`;

/** Binds {@link SELECT_JOB_ID_COLUMNS_NOT_BYTE_WISE}: $1 the schema name, $2 the columns. */
export function selectJobIdColumnsNotByteWiseParams(
  schemaName: string,
  columns: ReadonlyArray<readonly [table: string, column: string]>,
): unknown[] {
  return [schemaName, columns.map(([table, column]) => `${table}.${column}`)];
}

/** Records one applied migration. $1 version, $2 description. */
export const recordMigration = (s: string): string => `
INSERT INTO ${s}.schema_migrations (version, description, applied_at_utc)
VALUES ($1, $2, now())
ON CONFLICT (version) DO NOTHING`;

/** Binds {@link recordMigration}: $1 the version, $2 its description. */
export function recordMigrationParams(version: number, description: string): unknown[] {
  return [version, description];
}

/** Opens a transaction of ChokaQ's own (one round trip; see `withConnection`). */
export const BEGIN_READ_COMMITTED = 'START TRANSACTION ISOLATION LEVEL READ COMMITTED';

/**
 * `SET LOCAL statement_timeout` of a transactional handler's transaction, as a parameter ($1, the
 * milliseconds as text): every statement of the run, the archive move included, is cancelled by
 * the server after the run's execution timeout, so a handler stuck in a statement cannot hold its
 * connection (and the row locks it took) for longer. Ends with the transaction.
 */
export const SET_LOCAL_STATEMENT_TIMEOUT = "SELECT set_config('statement_timeout', $1, true)";

/** The database clock. */
export const SELECT_NOW = `SELECT clock_timestamp() AS now`;

/** Server version, checked once by `prepare()`. */
export const SELECT_SERVER_VERSION = `SELECT current_setting('server_version_num')::int AS version`;
