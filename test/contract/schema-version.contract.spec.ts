import { StorageDialect } from '../../libs/chokaq/src/interfaces/job.interface';
import { MSSQL_SCHEMA_VERSION } from '../../libs/chokaq/src/storage/mssql/mssql.schema';
import { POSTGRES_SCHEMA_VERSION } from '../../libs/chokaq/src/storage/postgres/postgres.schema';
import { SQLITE_SCHEMA_VERSION } from '../../libs/chokaq/src/storage/sqlite/sqlite.schema';
import { TestSchema, createTestSchema, describeEachDialect } from '../support/test-database';

/** The version each dialect's `ensureSchema` of this release brings a database to. */
const EXPECTED: Record<StorageDialect, number> = {
  sqlite: SQLITE_SCHEMA_VERSION,
  postgres: POSTGRES_SCHEMA_VERSION,
  mssql: MSSQL_SCHEMA_VERSION,
};

/**
 * `getSchemaVersion` (the health check's storage read): the newest version the ledger records,
 * beside the one this release expects, on a database without ChokaQ's tables, a current one, one a
 * migration has not reached, and one a newer release migrated.
 */
describeEachDialect('storage contract: schema version', ({ name: dialect }) => {
  let db: TestSchema;
  beforeEach(() => {
    db = createTestSchema(dialect);
  });
  afterEach(async () => {
    await db?.close();
  });

  const expected = EXPECTED[dialect];

  it('is null where no schema was created (no ledger, no error)', async () => {
    const storage = await db.openStorage({ autoCreateSchema: false });
    expect(await storage.getSchemaVersion()).toEqual({ applied: null, expected });
  });

  it('is the expected version once ensureSchema ran', async () => {
    const storage = await db.openStorage();
    expect(expected).toBeGreaterThan(1);
    expect(await storage.getSchemaVersion()).toEqual({ applied: expected, expected });
  });

  it('reports an older ledger (a migration not applied) and a newer one (a newer release migrated)', async () => {
    const storage = await db.openStorage();
    const ledger = db.table('migrations');
    await db.query(`DELETE FROM ${ledger} WHERE version = ?`, [expected]);
    expect(await storage.getSchemaVersion()).toEqual({ applied: expected - 1, expected });

    const now = dialect === 'sqlite' ? Date.now() : new Date();
    await db.query(
      `INSERT INTO ${ledger} (version, description, applied_at_utc) VALUES (?, ?, ?)`,
      [expected + 1, 'a later release', now],
    );
    expect(await storage.getSchemaVersion()).toEqual({ applied: expected + 1, expected });
  });
});
