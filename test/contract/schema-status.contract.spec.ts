import Database from 'better-sqlite3';
import { Client } from 'pg';
import {
  POSTGRES_MIGRATIONS,
  postgresSchemaScript,
} from '../../libs/chokaq/src/storage/postgres/postgres.schema';
import { quoteSchema } from '../../libs/chokaq/src/storage/postgres/sql';
import {
  SQLITE_MIGRATIONS,
  sqliteMigrationScript,
} from '../../libs/chokaq/src/storage/sqlite/sqlite.schema';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { PG_URL } from '../support/env';
import { TestSchema, createTestSchema, describeEachDialect } from '../support/test-database';

/**
 * `schemaStatus()` reads where a database's schema stands without migrating it: on an empty
 * database every version is pending, on an older one the versions it lacks, on a current one none;
 * and its script, run by hand, leaves the schema exactly as current as `ensureSchema()` does. SQL
 * Server's reading of the ledger is pinned by test/mssql (stubbed driver, grammar, locking).
 */
describeEachDialect(
  'storage contract: schemaStatus',
  ({ name: dialect }) => {
    let db: TestSchema;
    const opened: JobStorage[] = [];
    const migrations = dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
    const latest = migrations[migrations.length - 1].version;
    const info = (list: typeof migrations) =>
      list.map(({ version, description }) => ({ version, description }));

    beforeEach(() => {
      db = createTestSchema(dialect);
    });
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((s) => s.close()));
      await db?.close();
    });

    /** A storage that does not create or migrate the schema. */
    async function unmigrated(): Promise<JobStorage> {
      const storage = await db.openStorage({ autoCreateSchema: false });
      opened.push(storage);
      return storage;
    }

    /** Runs a whole script as a DBA would: sqlite3's exec, or psql's simple query protocol. */
    async function runScript(script: string): Promise<void> {
      if (dialect === 'sqlite') {
        const raw = new Database(db.file);
        try {
          raw.exec(script);
        } finally {
          raw.close();
        }
        return;
      }
      const client = new Client({ connectionString: PG_URL });
      await client.connect();
      try {
        await client.query(script);
      } finally {
        await client.end();
      }
    }

    it('an empty database: every version pending, and the script migrates it completely', async () => {
      const storage = await unmigrated();
      const before = await storage.schemaStatus();
      expect(before).toMatchObject({
        dialect,
        schema: db.schema,
        currentVersion: 0,
        latestVersion: latest,
        pending: info(migrations),
      });
      // Reading created nothing: no ledger, no schema.
      expect(await storage.schemaStatus()).toEqual(before);
      expect(before.script).toContain(`${db.schema}`);

      await runScript(before.script);
      expect(await storage.schemaStatus()).toEqual({
        dialect,
        schema: db.schema,
        currentVersion: latest,
        latestVersion: latest,
        pending: [],
        script: '',
      });
      // ensureSchema finds nothing left to apply, and the schema works.
      await storage.ensureSchema();
      expect((await storage.enqueue({ queue: 'status' })).created).toBe(true);
    });

    it('an older database: the versions it lacks, and ensureSchema applies exactly those', async () => {
      const first = await unmigrated();
      const older = migrations.slice(0, -2);
      // The older release's schema, by its own script: only the versions it knew.
      const full = await first.schemaStatus();
      expect(full.pending).toHaveLength(migrations.length);
      await runScript(
        dialect === 'sqlite'
          ? sqliteMigrationScript(db.schema, older as typeof SQLITE_MIGRATIONS)
          : postgresSchemaScript(
              quoteSchema(db.schema),
              db.schema,
              older as typeof POSTGRES_MIGRATIONS,
            ),
      );

      const before = await first.schemaStatus();
      expect(before.currentVersion).toBe(older[older.length - 1].version);
      expect(before.pending).toEqual(info(migrations.slice(-2)));
      for (const { version } of migrations.slice(-2)) {
        expect(before.script).toContain(`(${version}, '`);
      }
      for (const { version } of older) expect(before.script).not.toContain(`(${version}, '`);

      await first.ensureSchema();
      expect(await first.schemaStatus()).toMatchObject({
        currentVersion: latest,
        pending: [],
        script: '',
      });
    });
  },
  { only: ['sqlite', 'postgres'] },
);
