import type { StorageDialect } from '../interfaces/job.interface';
import type {
  ArchivePartitioning,
  StorageOptions,
  TransientRetryOptions,
} from '../interfaces/storage-options.interface';

/*
 * The defaults of the storage options, in one file that loads neither TypeORM nor a driver:
 * `createJobStorage` applies them, `resolveChokaQOptions` fills in the same SQLite file, and the
 * `chokaq schema` CLI prints the DDL of the same default schema.
 */

/** Default schema of the server dialects. */
export const DEFAULT_SCHEMA = 'chokaq';

/** Default table prefix on SQLite. */
export const DEFAULT_SQLITE_PREFIX = 'chokaq_';

/**
 * The schema (SQLite: the table prefix) a storage of `dialect` opened with `options` works in: the
 * one rule `createJobStorage` and the worker's startup line share.
 */
export function storageSchema(options: StorageOptions, dialect: StorageDialect): string {
  return options.schema ?? (dialect === 'sqlite' ? DEFAULT_SQLITE_PREFIX : DEFAULT_SCHEMA);
}

/** The periods `storage.partitioning` accepts: what the options check and the CLI's `--partitioning` take. */
export const PARTITION_PERIODS: readonly ArchivePartitioning['period'][] = ['day', 'week', 'month'];

/** Default SQLite file. */
export const DEFAULT_SQLITE_FILE = 'chokaq.db';

/**
 * Default `requestTimeout` of the SQL Server DataSource ChokaQ opens: above the 60 s wait for the
 * schema bootstrap applock (`mssql.schema.ts`) plus the DDL itself; `mssql` defaults to 15 s.
 */
export const DEFAULT_MSSQL_REQUEST_TIMEOUT_MS = 90_000;

/** Defaults of the dialect settings of `StorageOptions` that have one. */
export const STORAGE_DEFAULTS = {
  /** PostgreSQL and SQL Server pool size. */
  poolSize: 10,
  /** PostgreSQL `NOTIFY` on enqueue and `LISTEN` in workers. */
  notify: true,
  /** PostgreSQL: first wait before re-establishing a lost `LISTEN` connection. */
  notifyReconnectMs: 1_000,
  /** PostgreSQL named prepared statements for the hot path. */
  preparedStatements: true,
  /** SQL Server: the schema bootstrap batch's request timeout (0: none). */
  schemaTimeoutMs: 0,
  /** SQLite `busy_timeout`. */
  busyTimeoutMs: 50,
  /** SQLite `PRAGMA data_version` poll. */
  dataVersionPollMs: 50,
} as const;

/**
 * Default transient retry bounds: 8 attempts, the 7 waits between them at least 2,575 ms and at
 * most 5,150 ms in all, before `ChokaQStorageUnavailableError`. Chosen so that a lock or failover
 * of about 2.5 s (a SQLite file held by another process, a PostgreSQL primary restarting) is
 * ridden out without the caller seeing an error, while a dead database is reported within seconds.
 */
export const DEFAULT_TRANSIENT_RETRY: Required<TransientRetryOptions> = {
  maxAttempts: 8,
  baseDelayMs: 50,
  maxDelayMs: 2_000,
};
