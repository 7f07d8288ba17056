import { DataSource, DataSourceOptions } from 'typeorm';
import { ChokaQValidationError } from '../errors';
import { JobStorage, StorageDialect } from './job-storage';
import { MssqlJobStorage } from './mssql/mssql-job-storage';
import { PostgresJobStorage } from './postgres/postgres-job-storage';
import { DEFAULT_PAYLOAD_MAX_BYTES } from './shared/validate-job';
import { DEFAULT_TRANSIENT_RETRY } from './shared/transient-retry';
import { SqliteJobStorage } from './sqlite/sqlite-job-storage';
import { SqlStorageConfig, StorageOptions } from './storage-options';

/** Default schema of the server dialects. */
export const DEFAULT_SCHEMA = 'chokaq';
/** Default table prefix on SQLite. */
export const DEFAULT_SQLITE_PREFIX = 'chokaq_';
/** Default SQLite file. */
export const DEFAULT_SQLITE_FILE = 'chokaq.db';
/**
 * Default `requestTimeout` of the SQL Server DataSource ChokaQ opens: above the 60 s wait for the
 * schema bootstrap applock (`mssql.schema.ts`) plus the DDL itself; `mssql` defaults to 15 s.
 */
export const DEFAULT_MSSQL_REQUEST_TIMEOUT_MS = 90_000;

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

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
        poolSize: options.poolSize ?? 10,
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
        pool: { max: options.poolSize ?? 10 },
        requestTimeout: options.requestTimeoutMs ?? DEFAULT_MSSQL_REQUEST_TIMEOUT_MS,
        options: { encrypt: true, ...(options.options ?? {}) },
      } as DataSourceOptions;
  }
}

/**
 * Opens (or borrows) a `DataSource`, constructs the dialect's `JobStorage`, applies connection
 * settings and, unless `autoCreateSchema` is false, creates or migrates the schema.
 */
export async function createJobStorage(
  options: StorageOptions = { type: 'sqlite' },
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
  const schema = options.schema ?? (dialect === 'sqlite' ? DEFAULT_SQLITE_PREFIX : DEFAULT_SCHEMA);
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
    notify: ('notify' in options ? options.notify : undefined) ?? true,
    notifyReconnectMs:
      ('notifyReconnectMs' in options ? options.notifyReconnectMs : undefined) ?? 1_000,
    preparedStatements:
      ('preparedStatements' in options ? options.preparedStatements : undefined) ?? true,
    busyTimeoutMs: ('busyTimeoutMs' in options ? options.busyTimeoutMs : undefined) ?? 50,
    dataVersionPollMs:
      ('dataVersionPollMs' in options ? options.dataVersionPollMs : undefined) ?? 50,
  };
  if (!dataSource.isInitialized) await dataSource.initialize();
  const storage: JobStorage =
    dialect === 'sqlite'
      ? new SqliteJobStorage(config)
      : dialect === 'postgres'
        ? new PostgresJobStorage(config)
        : new MssqlJobStorage(config);
  try {
    await storage.prepare();
    if (options.autoCreateSchema ?? true) await storage.ensureSchema();
  } catch (error) {
    if (!borrowed) await dataSource.destroy().catch(() => undefined);
    throw error;
  }
  return storage;
}
