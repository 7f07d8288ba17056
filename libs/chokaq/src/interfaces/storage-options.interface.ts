import type { DataSource } from 'typeorm';

/**
 * Bounds of the transient-error retry every storage call goes through. The wait before retry `n`
 * (from 1) is random in `[c / 2, c]` with `c = min(maxDelayMs, baseDelayMs × 2^(n−1))`, so a call
 * that keeps failing gives up after at least the sum of the halves and at most the sum of the
 * ceilings (`transientRetryBudgetMs`), plus the time the attempts themselves take.
 */
export interface TransientRetryOptions {
  /** Attempts including the first. Default 8. */
  maxAttempts?: number;
  /** Ceiling of the first wait (it is at least half of it). Default 50 ms. */
  baseDelayMs?: number;
  /** Largest ceiling of any wait. Default 2,000 ms. */
  maxDelayMs?: number;
}

/** Options every dialect shares. @publicApi */
export interface CommonStorageOptions {
  /**
   * PostgreSQL / SQL Server: the schema holding ChokaQ's tables (default `chokaq`).
   * SQLite: the table-name prefix (default `chokaq_`). Validated as a plain identifier.
   */
  schema?: string;
  /** Create or migrate the schema at startup. Default true for SQLite, true for the servers too (set false when a DBA applies `npx chokaq schema` by hand). */
  autoCreateSchema?: boolean;
  /** Largest payload in UTF-8 bytes of JSON. Default 1,000,000. */
  payloadMaxBytes?: number;
  /** Bounds of the transient-error retry. */
  transientRetry?: TransientRetryOptions;
}

/** The embedded default: a SQLite file (`chokaq.db` in the working directory) or `:memory:`. @publicApi */
export interface SqliteStorageOptions extends CommonStorageOptions {
  type: 'sqlite';
  /** File path, or `:memory:` for an in-memory database. Default `chokaq.db`. */
  database?: string;
  /** SQLite `busy_timeout` in ms; kept short because better-sqlite3 blocks the event loop while it waits. Default 50. */
  busyTimeoutMs?: number;
  /**
   * How often a worker reads `PRAGMA data_version` to notice commits of other processes, as the
   * fallback of its watch on the WAL file (which wakes it within milliseconds where the platform
   * reports file changes); an enqueue elsewhere starts within at most about this long, not
   * `worker.pollIntervalMs`. 0 turns both off. Default 50.
   */
  dataVersionPollMs?: number;
}

/** Where a PostgreSQL server is and who ChokaQ connects as. @publicApi */
export interface PostgresConnectionOptions {
  /** Connection URL, e.g. `postgres://user:pass@host:5432/db`; its fields win over the others. */
  url?: string;
  host?: string;
  port?: number;
  username?: string;
  password?: string;
  database?: string;
}

/**
 * A hot standby of the PostgreSQL primary (a streaming replica, or the read-only endpoint of a
 * managed service), for the dashboard-grade reads: the Deck's snapshot and lists, the `/metrics`
 * queue gauges, the CLI's stats and lists, and `ChokaQAdmin`'s lists, counts and statistics.
 * Workers, producers, every action, a read of one job or batch (what an operator is about to act
 * on) and the preview behind a confirmation token read the primary. Its sessions are read-only
 * (`default_transaction_read_only`), so nothing is ever written through it. It holds the
 * primary's schema (the same `schema`); a read on it lags the primary by the replication delay,
 * which the Deck shows. @publicApi
 */
export interface PostgresReadReplicaOptions extends PostgresConnectionOptions {
  /** Pool size. Default 4 (the dashboard reads run a few at a time). */
  poolSize?: number;
}

/**
 * The Archive and the DLQ as partitions by their finish time (PostgreSQL: native declarative
 * partitions; SQL Server: a partition function and scheme). Retention then removes whole
 * partitions instead of deleting rows, and the maintenance loop makes partitions ahead. Opt-in;
 * what it changes and guarantees: docs/storage.md, "A partitioned Archive". @publicApi
 */
export interface ArchivePartitioning {
  /**
   * The time one partition covers, in UTC: a day, an ISO week (from Monday) or a calendar month.
   * A row stays at least its retention and at most its retention plus one period.
   */
  period: 'day' | 'week' | 'month';
}

/** PostgreSQL through `pg`. @publicApi */
export interface PostgresStorageOptions extends CommonStorageOptions, PostgresConnectionOptions {
  type: 'postgres';
  /** Pool size. Default 10. */
  poolSize?: number;
  /** Send `NOTIFY` on enqueue and `LISTEN` for it in workers. Default true; false behind PgBouncer transaction pooling. */
  notify?: boolean;
  /**
   * First wait in ms before re-establishing a lost `LISTEN` connection, doubled per failed attempt
   * up to 30 s. Workers poll meanwhile. Default 1,000.
   */
  notifyReconnectMs?: number;
  /**
   * Run the hot-path statements (claim, start, heartbeat, archive, retry, enqueue) as named
   * prepared statements, parsed and planned once per connection. Default true; false behind
   * PgBouncer transaction pooling older than 1.21 (it cannot follow prepared statements).
   */
  preparedStatements?: boolean;
  /** A hot standby for the dashboard-grade reads (none by default: they read the primary). */
  readReplica?: PostgresReadReplicaOptions;
  /** Partition the Archive and the DLQ by finish time (none by default). */
  partitioning?: ArchivePartitioning;
}

/** SQL Server / Azure SQL through `mssql`. @publicApi */
export interface MssqlStorageOptions extends CommonStorageOptions {
  type: 'mssql';
  /** Connection URL, e.g. `mssql://user:pass@host:1433/db?encrypt=true`. */
  url?: string;
  host?: string;
  port?: number;
  username?: string;
  password?: string;
  database?: string;
  /** Pool size. Default 10. */
  poolSize?: number;
  /** Driver options passed to `mssql` (`encrypt`, `trustServerCertificate`, …). */
  options?: Record<string, unknown>;
  /**
   * How long one statement may run before the driver cancels it (mssql `requestTimeout`; the
   * cancelled statement rolls back and is retried as a transient error). Default 90,000: ChokaQ's
   * batches wait for row locks without a limit of their own (`LOCK_TIMEOUT -1`), so this bounds
   * them, well above what a claim or a move takes on a busy server (the driver's own default is
   * 15 s). A borrowed `dataSource` keeps its own `requestTimeout`. The schema bootstrap has its
   * own, {@link schemaTimeoutMs}.
   */
  requestTimeoutMs?: number;
  /**
   * How long the schema bootstrap batch (`ensureSchema` at start, `chokaq migrate`) may run before
   * the driver cancels it, ms; 0, the default, is no limit. The batch commits one schema version at
   * a time, and its waits are bounded inside it (60 s for the bootstrap lock, a short lock timeout
   * with retry for each DDL statement), so what is left to bound is the work itself: an index built
   * or a column added on a large table, which a timeout would roll back (that version only) and the
   * retry would start again. Ordinary batches keep `requestTimeoutMs`.
   */
  schemaTimeoutMs?: number;
  /** Partition the Archive and the DLQ by finish time (none by default). */
  partitioning?: ArchivePartitioning;
}

/** Reuse the application's own TypeORM `DataSource` (its dialect is detected). ChokaQ never destroys it. @publicApi */
export interface DataSourceStorageOptions extends CommonStorageOptions {
  dataSource: DataSource;
  /** PostgreSQL only: see {@link PostgresStorageOptions.notify}. */
  notify?: boolean;
  /** PostgreSQL only: see {@link PostgresStorageOptions.notifyReconnectMs}. */
  notifyReconnectMs?: number;
  /** PostgreSQL only: see {@link PostgresStorageOptions.preparedStatements}. */
  preparedStatements?: boolean;
  /** SQL Server only: see {@link MssqlStorageOptions.schemaTimeoutMs}. */
  schemaTimeoutMs?: number;
  /** PostgreSQL only: see {@link PostgresStorageOptions.readReplica}. */
  readReplica?: PostgresReadReplicaOptions;
  /** PostgreSQL and SQL Server: see {@link PostgresStorageOptions.partitioning}. */
  partitioning?: ArchivePartitioning;
}

/** Where ChokaQ keeps its tables. @publicApi */
export type StorageOptions =
  SqliteStorageOptions | PostgresStorageOptions | MssqlStorageOptions | DataSourceStorageOptions;
