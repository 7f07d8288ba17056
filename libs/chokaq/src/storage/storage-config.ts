import type { PoolConfig } from 'pg';
import type { DataSource } from 'typeorm';
import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import type {
  ArchivePartitioning,
  TransientRetryOptions,
} from '../interfaces/storage-options.interface';

/** What a dialect implementation is constructed with: the storage options resolved by `createJobStorage`. */
export interface SqlStorageConfig {
  /**
   * The TypeORM `DataSource` the storage runs on: the application's (borrowed), or one ChokaQ
   * opened (SQLite, SQL Server). Undefined for a PostgreSQL storage ChokaQ opened itself, which
   * runs on a `pg` pool of its own ({@link pgPool}) without TypeORM.
   */
  dataSource?: DataSource;
  /** PostgreSQL without a borrowed `DataSource`: the options of the pool ChokaQ opens. */
  pgPool?: PoolConfig;
  /**
   * True when ChokaQ opened the connection itself (no borrowed `DataSource`) and must close it on
   * `close()`; the application's writes then never share ChokaQ's transactions.
   */
  ownsDataSource: boolean;
  /** Validated schema name (PostgreSQL, SQL Server) or table prefix (SQLite). */
  schema: string;
  payloadMaxBytes: number;
  transientRetry: TransientRetryOptions;
  /** PostgreSQL NOTIFY/LISTEN. */
  notify: boolean;
  /** PostgreSQL: first wait before re-establishing a lost LISTEN connection. */
  notifyReconnectMs: number;
  /** PostgreSQL named prepared statements for the hot path. */
  preparedStatements: boolean;
  /** SQL Server: the schema bootstrap batch's request timeout, ms (0: none). */
  schemaTimeoutMs: number;
  /** PostgreSQL, SQL Server: the Archive and the DLQ partitioned by finish time (null: not). */
  partitioning: ArchivePartitioning | null;
  /** SQLite busy_timeout. */
  busyTimeoutMs: number;
  /** SQLite: `PRAGMA data_version` poll of workers' cross-process wake-ups (0: off). */
  dataVersionPollMs: number;
  /** The logger of a context (the dialect's class name), e.g. Nest's `Logger` in a Nest app. */
  logger: (context: string) => ChokaQLogger;
}
