import { DataSource, DataSourceOptions } from 'typeorm';
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
import type { StorageOptions } from '../interfaces/storage-options.interface';
import { SCHEMA_NAME } from '../validation/limits';
import { DEFAULT_PAYLOAD_MAX_BYTES } from '../validation/validate-job';
import { JobStorage } from './job-storage';
import { MssqlConnection } from './mssql/mssql.connection';
import { MssqlJobQueries } from './mssql/mssql-job-queries';
import { MssqlJobStore } from './mssql/mssql-job-store';
import { PostgresConnection } from './postgres/postgres.connection';
import { PostgresJobQueries } from './postgres/postgres-job-queries';
import { PostgresJobStore } from './postgres/postgres-job-store';
import { SqliteConnection } from './sqlite/sqlite.connection';
import { SqliteJobQueries } from './sqlite/sqlite-job-queries';
import { SqliteJobStore } from './sqlite/sqlite-job-store';
import { SqlStorageConfig } from './storage-config';
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
 * Builds the `DataSourceOptions` ChokaQ uses when it opens its own connection.
 * @internal exported for its unit test.
 */
export function dataSourceOptionsFor(
  options: Exclude<StorageOptions, { dataSource: DataSource }>,
): DataSourceOptions {
  switch (options.type) {
    case 'sqlite':
      return { type: 'better-sqlite3', database: options.database ?? DEFAULT_SQLITE_FILE };
    case 'postgres':
      return {
        type: 'postgres',
        url: options.url,
        host: options.host,
        port: options.port,
        username: options.username,
        password: options.password,
        database: options.database,
        poolSize: options.poolSize ?? STORAGE_DEFAULTS.poolSize,
        applicationName: 'chokaq',
      };
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
  const dataSource = borrowed ?? new DataSource(dataSourceOptionsFor(options as never));
  const dialect = dialectOf(dataSource);
  if (!dialect) {
    throw new ChokaQValidationError([
      {
        path: 'storage.dataSource',
        message: "must be a DataSource of type 'better-sqlite3', 'postgres' or 'mssql'",
        value: dataSource.options.type,
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
  if (!dataSource.isInitialized) await dataSource.initialize();
  const storage: JobStorage = dialectStorage(dialect, config);
  try {
    await storage.prepare();
    if (options.autoCreateSchema ?? true) await storage.ensureSchema();
  } catch (error) {
    if (!borrowed) await dataSource.destroy().catch(() => undefined);
    throw error;
  }
  return storage;
}

/**
 * A dialect's two halves over one connection behind the validating edge: the store (writes and
 * lifecycle) and the queries (reads), each called by name.
 */
function dialectStorage(dialect: StorageDialect, config: SqlStorageConfig): ValidatedJobStorage {
  switch (dialect) {
    case 'sqlite': {
      const connection = new SqliteConnection(config);
      const store = new SqliteJobStore(connection);
      return new ValidatedJobStorage(store, new SqliteJobQueries(connection), config);
    }
    case 'postgres': {
      const connection = new PostgresConnection(config);
      const store = new PostgresJobStore(connection);
      return new ValidatedJobStorage(store, new PostgresJobQueries(connection), config);
    }
    case 'mssql': {
      const connection = new MssqlConnection(config);
      const store = new MssqlJobStore(connection);
      return new ValidatedJobStorage(store, new MssqlJobQueries(connection), config);
    }
  }
}
