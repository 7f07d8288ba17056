import type { PoolConfig } from 'pg';
import type { DataSource, DataSourceOptions } from 'typeorm';
import {
  DEFAULT_MSSQL_REQUEST_TIMEOUT_MS,
  DEFAULT_SQLITE_FILE,
  DEFAULT_TRANSIENT_RETRY,
  STORAGE_DEFAULTS,
  storageSchema,
} from '../config/storage-defaults';
import { StreamLogger } from '../common/stream-logger';
import { ChokaQValidationError } from '../errors';
import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import type { StorageDialect } from '../interfaces/job.interface';
import type {
  MssqlStorageOptions,
  PostgresStorageOptions,
  SqliteStorageOptions,
  StorageOptions,
} from '../interfaces/storage-options.interface';
import { SCHEMA_NAME } from '../validation/limits';
import { DEFAULT_PAYLOAD_MAX_BYTES } from '../validation/validate-job';
import type { JobStorage } from './job-storage';
import type { SqlStorageConfig } from './storage-config';
import { ValidatedJobStorage } from './validated-job-storage';

/** The dialect behind a TypeORM `DataSource`, or undefined when ChokaQ does not speak it. */
export function dialectOf(dataSource: DataSource): StorageDialect | undefined {
  switch (dataSource.options.type) {
    case 'better-sqlite3':
      return 'sqlite';
    case 'postgres':
      return 'postgres';
    case 'mssql':
      return 'mssql';
    default:
      return undefined;
  }
}

/**
 * Builds the `DataSourceOptions` ChokaQ uses when it opens its own SQLite or SQL Server
 * connection (PostgreSQL opens a `pg` pool instead: {@link pgPoolConfigFor}).
 * @internal exported for its unit test.
 */
export function dataSourceOptionsFor(
  options: SqliteStorageOptions | MssqlStorageOptions,
): DataSourceOptions {
  switch (options.type) {
    case 'sqlite':
      return { type: 'better-sqlite3', database: options.database ?? DEFAULT_SQLITE_FILE };
    case 'mssql':
      return {
        type: 'mssql',
        url: options.url,
        host: options.host,
        port: options.port,
        username: options.username,
        password: options.password,
        database: options.database,
        pool: { max: options.poolSize ?? STORAGE_DEFAULTS.poolSize },
        requestTimeout: options.requestTimeoutMs ?? DEFAULT_MSSQL_REQUEST_TIMEOUT_MS,
        options: { encrypt: true, ...(options.options ?? {}) },
      } as DataSourceOptions;
  }
}

/**
 * The options of the `pg` pool ChokaQ opens for PostgreSQL storage options (no TypeORM). As with
 * TypeORM's driver before it, the fields of `url` win over `host`, `port` and the rest.
 *
 * Its sessions start with `jit = off` (a startup option, so no statement is spent on it): every
 * statement ChokaQ sends is short and index-driven, but the planner estimates the claim's cost
 * from the backlog, and past about a million Pending rows that estimate crossed PostgreSQL's
 * `jit_above_cost` (100,000 by default), so each claim spent about 40 ms compiling expressions it
 * then ran in a fraction of a millisecond (bench/RESULTS.md, "Scale"). An `options` parameter in
 * `url` replaces this one. See https://www.postgresql.org/docs/15/jit-decision.html and
 * https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNECT-OPTIONS.
 * @internal exported for its unit test.
 */
export function pgPoolConfigFor(options: PostgresStorageOptions): PoolConfig {
  return {
    connectionString: options.url,
    host: options.host,
    port: options.port,
    user: options.username,
    password: options.password,
    database: options.database,
    max: options.poolSize ?? STORAGE_DEFAULTS.poolSize,
    application_name: 'chokaq',
    options: '-c jit=off',
  };
}

/** How {@link createJobStorage} logs. */
export interface CreateStorageOptions {
  /**
   * The logger of each context (the dialect's class name, such as `PostgresJobStorage`): the
   * module passes Nest's `Logger`; without it, lines go to stdout and stderr ({@link StreamLogger}).
   */
  logger?: (context: string) => ChokaQLogger;
}

/**
 * Opens (or borrows) a `DataSource`, constructs the dialect's storage behind the one validating
 * edge ({@link ValidatedJobStorage}), applies connection settings (refusing a server older than
 * ChokaQ supports, `ChokaQUnsupportedServerError`) and, unless `autoCreateSchema` is false, creates
 * or migrates the schema.
 */
export async function createJobStorage(
  options: StorageOptions = { type: 'sqlite' },
  { logger = (context) => new StreamLogger(context) }: CreateStorageOptions = {},
): Promise<JobStorage> {
  const borrowed = 'dataSource' in options ? options.dataSource : undefined;
  // TypeORM is loaded only for a DataSource ChokaQ opens itself (SQLite, SQL Server).
  const dataSource =
    borrowed ??
    ((options as { type?: string }).type === 'postgres'
      ? undefined
      : new (await import('typeorm')).DataSource(dataSourceOptionsFor(options as never)));
  const dialect = dataSource === undefined ? 'postgres' : dialectOf(dataSource);
  if (!dialect) {
    throw new ChokaQValidationError([
      {
        path: 'storage.dataSource',
        message: "must be a DataSource of type 'better-sqlite3', 'postgres' or 'mssql'",
        value: dataSource!.options.type,
      },
    ]);
  }
  const schema = storageSchema(options, dialect);
  if (!SCHEMA_NAME.test(schema)) {
    throw new ChokaQValidationError([
      { path: 'storage.schema', message: `must match ${SCHEMA_NAME.source}`, value: schema },
    ]);
  }
  const config: SqlStorageConfig = {
    dataSource,
    pgPool:
      dataSource === undefined ? pgPoolConfigFor(options as PostgresStorageOptions) : undefined,
    ownsDataSource: !borrowed,
    schema,
    payloadMaxBytes: options.payloadMaxBytes ?? DEFAULT_PAYLOAD_MAX_BYTES,
    transientRetry: { ...DEFAULT_TRANSIENT_RETRY, ...(options.transientRetry ?? {}) },
    notify: ('notify' in options ? options.notify : undefined) ?? STORAGE_DEFAULTS.notify,
    notifyReconnectMs:
      ('notifyReconnectMs' in options ? options.notifyReconnectMs : undefined) ??
      STORAGE_DEFAULTS.notifyReconnectMs,
    preparedStatements:
      ('preparedStatements' in options ? options.preparedStatements : undefined) ??
      STORAGE_DEFAULTS.preparedStatements,
    schemaTimeoutMs:
      ('schemaTimeoutMs' in options ? options.schemaTimeoutMs : undefined) ??
      STORAGE_DEFAULTS.schemaTimeoutMs,
    busyTimeoutMs:
      ('busyTimeoutMs' in options ? options.busyTimeoutMs : undefined) ??
      STORAGE_DEFAULTS.busyTimeoutMs,
    dataVersionPollMs:
      ('dataVersionPollMs' in options ? options.dataVersionPollMs : undefined) ??
      STORAGE_DEFAULTS.dataVersionPollMs,
    logger,
  };
  if (dataSource !== undefined && !dataSource.isInitialized) await dataSource.initialize();
  const storage = await dialectStorage(dialect, config);
  try {
    await storage.prepare();
    if (options.autoCreateSchema ?? true) await storage.ensureSchema();
  } catch (error) {
    if (!borrowed) await storage.close().catch(() => undefined);
    throw error;
  }
  return storage;
}

/**
 * A dialect's two halves over one connection behind the validating edge: the store (writes and
 * lifecycle) and the queries (reads), each called by name. Only the dialect in use is loaded.
 */
async function dialectStorage(
  dialect: StorageDialect,
  config: SqlStorageConfig,
): Promise<ValidatedJobStorage> {
  switch (dialect) {
    case 'sqlite': {
      const { SqliteConnection, SqliteJobQueries, SqliteJobStore } = await import('./sqlite');
      const connection = new SqliteConnection(config);
      const store = new SqliteJobStore(connection);
      return new ValidatedJobStorage(store, new SqliteJobQueries(connection), config);
    }
    case 'postgres': {
      const { PostgresConnection, PostgresJobQueries, PostgresJobStore } =
        await import('./postgres');
      const connection = new PostgresConnection(config);
      const store = new PostgresJobStore(connection);
      return new ValidatedJobStorage(store, new PostgresJobQueries(connection), config);
    }
    case 'mssql': {
      const { MssqlConnection, MssqlJobQueries, MssqlJobStore } = await import('./mssql');
      const connection = new MssqlConnection(config);
      const store = new MssqlJobStore(connection);
      return new ValidatedJobStorage(store, new MssqlJobQueries(connection), config);
    }
  }
}
