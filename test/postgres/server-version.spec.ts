import { RecordingLogger } from '../runtime/support/silent-logger';
import { DataSource } from 'typeorm';
import {
  ChokaQCompatibilityLevelError,
  ChokaQError,
  ChokaQUnsupportedServerError,
} from '../../libs/chokaq/src/errors';
import { PostgresConnection } from '../../libs/chokaq/src/storage/postgres/postgres.connection';
import { PostgresJobStore } from '../../libs/chokaq/src/storage/postgres/postgres-job-store';
import { SqlStorageConfig } from '../../libs/chokaq/src/storage/storage-config';

/**
 * One policy for a server older than ChokaQ supports, on every server dialect: `prepare()` (and
 * so `createJobStorage` and the application's start) refuses it with a typed error that says which
 * dialect, what was found and what is needed. No PostgreSQL 11 runs here, so the version query of
 * one storage is answered by a stub; SQL Server's side is held by test/mssql/mssql-driver.spec.ts.
 */
function storageReporting(version: number): PostgresJobStore {
  const config: SqlStorageConfig = {
    dataSource: new DataSource({ type: 'postgres' }),
    ownsDataSource: false,
    schema: 'chokaq',
    payloadMaxBytes: 1_000_000,
    transientRetry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
    notify: false,
    notifyReconnectMs: 1_000,
    preparedStatements: false,
    schemaTimeoutMs: 0,
    busyTimeoutMs: 50,
    dataVersionPollMs: 50,
    partitioning: null,
    logger: () => new RecordingLogger(),
  };
  const connection = new PostgresConnection(config);
  // The one statement prepare() runs: SELECT current_setting('server_version_num').
  connection.query = async () => [{ version: String(version) }];
  return new PostgresJobStore(connection);
}

describe('PostgreSQL: an unsupported server version', () => {
  it('refuses PostgreSQL 11 at start with ChokaQUnsupportedServerError (dialect, found, needed)', async () => {
    const error = await storageReporting(110_022)
      .prepare()
      .then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
    expect(error).toBeInstanceOf(ChokaQUnsupportedServerError);
    expect(error).toBeInstanceOf(ChokaQError);
    expect(error).toMatchObject({ dialect: 'postgres', found: 110_022, needed: 120_000 });
    expect((error as Error).message).toMatch(/PostgreSQL 12/);
  });

  it('accepts PostgreSQL 12 and later', async () => {
    await expect(storageReporting(120_000).prepare()).resolves.toBeUndefined();
    await expect(storageReporting(170_002).prepare()).resolves.toBeUndefined();
  });

  it("is the same policy as SQL Server's compatibility-level refusal", () => {
    const error = new ChokaQCompatibilityLevelError('jobs', 120, 130);
    expect(error).toBeInstanceOf(ChokaQUnsupportedServerError);
    expect(error).toMatchObject({ dialect: 'mssql', found: 120, needed: 130 });
  });
});
