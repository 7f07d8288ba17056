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
import { ChokaQStorageUnavailableError, ChokaQValidationError } from '../errors';
import { toError } from '../common/error-text';
import { logEvent } from '../common/log-events';
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
export function pgPoolConfigFor(options: PostgresStorageOptions, readOnly = false): PoolConfig {
  return {
    connectionString: options.url,
    host: options.host,
    port: options.port,
    user: options.username,
    password: options.password,
    database: options.database,
    max: options.poolSize ?? STORAGE_DEFAULTS.poolSize,
    application_name: readOnly ? 'chokaq-reads' : 'chokaq',
    // A read replica's sessions refuse writes whatever server they reach (a primary named by
    // mistake included): https://www.postgresql.org/docs/15/runtime-config-client.html
    options: readOnly ? '-c jit=off -c default_transaction_read_only=on' : '-c jit=off',
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
export function createJobStorage(
  options: StorageOptions = { type: 'sqlite' },
  { logger = (context) => new StreamLogger(context) }: CreateStorageOptions = {},
): Promise<JobStorage> {
  return openStorage(options, logger, false);
}

/** Default pool of a read replica: the dashboard-grade reads run a few at a time. */
const READ_REPLICA_POOL_SIZE = 4;

/**
 * Opens the hot standby of `storage.readReplica` for the dashboard-grade reads (see
 * `PostgresReadReplicaOptions`), or resolves undefined when there is none. Its sessions are
 * read-only, it never creates or migrates the schema (the primary's arrives by replication) and
 * never listens. PostgreSQL only: a read replica of another dialect is refused
 * (`ChokaQValidationError`), as is one whose primary is a borrowed DataSource of another type.
 */
export async function openReadReplica(
  options: StorageOptions = { type: 'sqlite' },
  { logger = (context) => new StreamLogger(context) }: CreateStorageOptions = {},
): Promise<JobStorage | undefined> {
  const replica = 'readReplica' in options ? options.readReplica : undefined;
  if (replica === undefined) return undefined;
  const dialect = 'dataSource' in options ? dialectOf(options.dataSource) : options.type;
  if (dialect !== 'postgres') {
    throw new ChokaQValidationError([
      {
        path: 'storage.readReplica',
        message: `is for PostgreSQL storage only (this storage is ${dialect ?? 'unknown'})`,
        value: '[read replica]',
      },
    ]);
  }
  return openStorage(
    {
      type: 'postgres',
      ...replica,
      poolSize: replica.poolSize ?? READ_REPLICA_POOL_SIZE,
      schema: options.schema,
      payloadMaxBytes: options.payloadMaxBytes,
      transientRetry: options.transientRetry,
      autoCreateSchema: false,
      notify: false,
      preparedStatements: 'preparedStatements' in options ? options.preparedStatements : undefined,
    },
    logger,
    true,
  );
}

async function openStorage(
  options: StorageOptions,
  logger: (context: string) => ChokaQLogger,
  readOnly: boolean,
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
      dataSource === undefined
        ? pgPoolConfigFor(options as PostgresStorageOptions, readOnly)
        : undefined,
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
    partitioning: ('partitioning' in options ? options.partitioning : undefined) ?? null,
    logger,
  };
  if (config.partitioning !== null && dialect === 'sqlite') {
    throw new ChokaQValidationError([
      {
        path: 'storage.partitioning',
        message: 'is for PostgreSQL and SQL Server storage only (this storage is sqlite)',
        value: config.partitioning,
      },
    ]);
  }
  if (dataSource !== undefined && !dataSource.isInitialized) await dataSource.initialize();
  const storage = await dialectStorage(dialect, config);
  if (readOnly) {
    // A standby that is down must not keep the application (its workers) from starting: the
    // dashboard reads fail, each with its own error, until it answers.
    await storage.prepare().catch((error: unknown) => {
      if (!(error instanceof ChokaQStorageUnavailableError)) {
        return storage.close().then(
          () => Promise.reject(error),
          () => Promise.reject(error),
        );
      }
      logEvent(
        logger('ChokaQ'),
        'ReadReplicaUnavailable',
        `The read replica did not answer (${toError(error).message}); the application starts, ` +
          'and the dashboard reads fail until it answers',
        { error: toError(error).message },
      );
    });
    return storage;
  }
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
