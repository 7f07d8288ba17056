import type { DataSource } from 'typeorm';
import { DEFAULT_MSSQL_REQUEST_TIMEOUT_MS } from '../config/storage-defaults';
import { ChokaQValidationError } from '../errors';
import type { StorageOptions } from '../interfaces/storage-options.interface';
import {
  createJobStorage,
  dataSourceOptionsFor,
  openReadReplica,
  pgPoolConfigFor,
} from './create-storage';

describe('dataSourceOptionsFor (the DataSource ChokaQ opens itself)', () => {
  it('gives SQL Server a request timeout above the 60 s schema bootstrap lock wait', () => {
    const options = dataSourceOptionsFor({ type: 'mssql', host: 'db' });
    expect(options).toMatchObject({
      type: 'mssql',
      requestTimeout: DEFAULT_MSSQL_REQUEST_TIMEOUT_MS,
    });
    // sp_getapplock waits up to 60,000 ms (mssql.schema.ts); the driver default is 15,000 ms.
    expect(DEFAULT_MSSQL_REQUEST_TIMEOUT_MS).toBeGreaterThan(60_000);
  });

  it('passes storage.requestTimeoutMs to the mssql driver', () => {
    expect(
      dataSourceOptionsFor({ type: 'mssql', host: 'db', requestTimeoutMs: 300_000 }),
    ).toMatchObject({ requestTimeout: 300_000 });
  });
});

describe('pgPoolConfigFor (the pg pool ChokaQ opens for PostgreSQL, without TypeORM)', () => {
  it("passes the connection fields under pg's names, the pool size as max, and names the application", () => {
    expect(
      pgPoolConfigFor({
        type: 'postgres',
        url: 'postgres://u:p@db:5433/jobs',
        host: 'other',
        port: 5432,
        username: 'u',
        password: 'p',
        database: 'jobs',
        poolSize: 25,
      }),
    ).toEqual({
      connectionString: 'postgres://u:p@db:5433/jobs',
      host: 'other',
      port: 5432,
      user: 'u',
      password: 'p',
      database: 'jobs',
      max: 25,
      application_name: 'chokaq',
      options: '-c jit=off',
    });
  });

  it('takes the default pool size of 10', () => {
    expect(pgPoolConfigFor({ type: 'postgres', host: 'db' }).max).toBe(10);
  });

  it("opens a read replica's sessions read-only, under their own application name", () => {
    expect(pgPoolConfigFor({ type: 'postgres', host: 'standby' }, true)).toMatchObject({
      application_name: 'chokaq-reads',
      options: '-c jit=off -c default_transaction_read_only=on',
    });
  });
});

describe('openReadReplica (storage.readReplica)', () => {
  it('opens nothing without a read replica', async () => {
    await expect(openReadReplica({ type: 'postgres', host: 'db' })).resolves.toBeUndefined();
    await expect(openReadReplica()).resolves.toBeUndefined();
  });

  it('refuses a read replica of other storage, before connecting to anything', async () => {
    const dataSource = { options: { type: 'better-sqlite3' } } as unknown as DataSource;
    for (const options of [
      { dataSource, readReplica: { host: 'r' } },
      { type: 'mssql', host: 'h', readReplica: { host: 'r' } },
    ] as StorageOptions[]) {
      const refused = openReadReplica(options);
      await expect(refused).rejects.toThrow(ChokaQValidationError);
      await expect(refused).rejects.toThrow(/storage\.readReplica is for PostgreSQL storage only/);
    }
  });
});

describe('createJobStorage with storage.partitioning', () => {
  it('refuses partitioning of a borrowed SQLite DataSource, before touching it', async () => {
    const initialize = jest.fn();
    const dataSource = {
      options: { type: 'better-sqlite3' },
      isInitialized: false,
      initialize,
    } as unknown as DataSource;
    const refused = createJobStorage({ dataSource, partitioning: { period: 'day' } });
    await expect(refused).rejects.toThrow(ChokaQValidationError);
    await expect(refused).rejects.toThrow(
      /storage\.partitioning is for PostgreSQL and SQL Server storage only \(this storage is sqlite\)/,
    );
    expect(initialize).not.toHaveBeenCalled();
  });
});
