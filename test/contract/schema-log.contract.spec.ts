import { ConsoleLogger, Logger } from '@nestjs/common';
import { POSTGRES_MIGRATIONS } from '../../libs/chokaq/src/storage/postgres/postgres.schema';
import { SQLITE_MIGRATIONS } from '../../libs/chokaq/src/storage/sqlite/sqlite.schema';
import { RecordingLogger } from '../runtime/support/silent-logger';
import { createSchemaBefore } from '../support/schema-history';
import { TestSchema, createTestSchema, describeEachDialect } from '../support/test-database';

/**
 * A schema migration is logged once, as one `SchemaMigrated` event (5000) at `log` level naming
 * every version it applied, after it committed; a start that finds the schema current logs
 * nothing about it. SQL Server's script reports what it applied through its result set, pinned by
 * the stubbed-driver spec; its live run needs CHOKAQ_MSSQL_URL, so this suite runs SQLite and
 * PostgreSQL.
 */
describeEachDialect(
  'storage contract: the schema migration is logged once',
  ({ name: dialect }) => {
    let db: TestSchema;
    let logger: RecordingLogger;
    beforeEach(() => {
      db = createTestSchema(dialect);
      // The storages log through `new Logger(…)`, which writes to the application-wide logger.
      logger = new RecordingLogger();
      Logger.overrideLogger(logger);
    });
    afterEach(async () => {
      Logger.overrideLogger(new ConsoleLogger());
      await db?.close();
    });

    const versions = (dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS).map(
      (m) => m.version,
    );

    it('logs one SchemaMigrated line when it creates the schema, and none when it is current', async () => {
      await db.openStorage();
      expect(logger.lines.map((l) => l.level)).toEqual(['log']);
      expect(logger.events('SchemaMigrated')).toEqual([
        expect.objectContaining({
          eventId: 5000,
          event: 'SchemaMigrated',
          dialect,
          schema: db.schema,
          fromVersion: 0,
          toVersion: versions[versions.length - 1],
          applied: versions,
        }),
      ]);

      // A second process starting on the same schema finds nothing to do and says nothing.
      logger.lines.length = 0;
      await db.openStorages(2);
      expect(logger.lines).toEqual([]);
    });

    it('names the version it upgraded from', async () => {
      // The schema one version short, as the previous release's start left it (applied and
      // recorded): not the current schema with its newest ledger row deleted, since a migration
      // need not run twice (SQLite cannot add a column only where it is missing).
      const latest = versions[versions.length - 1];
      await createSchemaBefore(db, latest);
      logger.lines.length = 0;
      await db.openStorage();
      expect(logger.events('SchemaMigrated')).toEqual([
        expect.objectContaining({ fromVersion: latest - 1, toVersion: latest, applied: [latest] }),
      ]);
      expect(logger.lines).toHaveLength(1);
    });
  },
  { only: ['sqlite', 'postgres'] },
);
