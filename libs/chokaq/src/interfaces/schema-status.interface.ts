import type { StorageDialect } from './job.interface';

/** One version of a dialect's schema, as its migration ledger records it. @publicApi */
export interface SchemaVersionInfo {
  version: number;
  description: string;
}

/**
 * Where a database's ChokaQ schema stands against this release (`JobStore.schemaStatus`): read
 * from the migration ledger without a lock, so it is cheap and never blocks a starting worker.
 * `ensureSchema()` applies exactly {@link pending}, under the schema lock.
 *
 * @publicApi
 */
export interface SchemaStatus {
  dialect: StorageDialect;
  /** The schema name (PostgreSQL, SQL Server) or the table prefix (SQLite). */
  schema: string;
  /** The newest version the ledger records; 0 when the database has no ChokaQ schema yet. */
  currentVersion: number;
  /** The newest version this release knows: what `ensureSchema()` migrates to. */
  latestVersion: number;
  /** The versions `ensureSchema()` would apply now, oldest first; empty when the schema is current. */
  pending: SchemaVersionInfo[];
  /**
   * The SQL `ensureSchema()` would run now, as one script under the same lock (PostgreSQL's
   * advisory lock, SQL Server's `sp_getapplock`, SQLite's `BEGIN IMMEDIATE`); empty when the
   * schema is current. SQL Server's is its whole idempotent script, which skips what exists.
   */
  script: string;
}
