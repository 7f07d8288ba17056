import type { DataSource } from 'typeorm';
import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import type { TransientRetryOptions } from '../interfaces/storage-options.interface';

/** What a dialect implementation is constructed with: the storage options resolved by `createJobStorage`. */
export interface SqlStorageConfig {
  dataSource: DataSource;
  /** True when ChokaQ created the DataSource and must destroy it on `close()`. */
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
  /** SQLite busy_timeout. */
  busyTimeoutMs: number;
  /** SQLite: `PRAGMA data_version` poll of workers' cross-process wake-ups (0: off). */
  dataVersionPollMs: number;
  /** The logger of a context (the dialect's class name), e.g. Nest's `Logger` in a Nest app. */
  logger: (context: string) => ChokaQLogger;
}
