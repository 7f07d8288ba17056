import { randomUUID } from 'node:crypto';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import {
  POSTGRES_MIGRATIONS,
  bootstrapStatements,
} from '../../libs/chokaq/src/storage/postgres/postgres.schema';
import { quoteSchema } from '../../libs/chokaq/src/storage/postgres/postgres.sql';
import {
  SQLITE_MIGRATIONS,
  schemaMigrationsDdl,
} from '../../libs/chokaq/src/storage/sqlite/sqlite.schema';
import { TestSchema, createTestSchema, describeEachDialect } from '../support/test-database';
import { claim, newWorkerId } from './helpers';

/**
 * A database created by the previous schema version, with jobs in every pillar (and a job held by
 * a worker of the previous release, Fetched and Processing), is migrated in place when a storage of
 * this version opens it: nothing is lost or stranded, the old worker's leases still finalise its
 * jobs, and what the new version added (the Workers table, the progress note) works at once.
 *
 * The old database is built from the migrations themselves (every version but the newest), then
 * filled by plain INSERTs in the old tables' shape, as the previous release wrote them. SQL Server
 * applies its idempotent script in one transaction instead (its version 3 is pinned by the T-SQL
 * tests); its live run needs CHOKAQ_MSSQL_URL, so this suite runs SQLite and PostgreSQL.
 */
describeEachDialect(
  'storage contract: schema upgrade in place',
  ({ name: dialect }) => {
    let db: TestSchema;
    beforeEach(() => {
      db = createTestSchema(dialect);
    });
    afterEach(async () => {
      await db?.close();
    });

    /** The schema of the version before the newest, as that release's `ensureSchema` left it. */
    async function createPreviousVersion(): Promise<number[]> {
      if (dialect === 'sqlite') {
        const previous = SQLITE_MIGRATIONS.slice(0, -1);
        await db.sql(schemaMigrationsDdl(db.schema));
        for (const migration of previous) {
          for (const statement of migration.statements(db.schema)) await db.sql(statement);
          await db.sql(
            `INSERT INTO ${db.table('migrations')} (version, description, applied_at_utc) VALUES (?, ?, ?)`,
            [migration.version, migration.description, Date.now()],
          );
        }
        return previous.map((m) => m.version);
      }
      const s = quoteSchema(db.schema);
      const previous = POSTGRES_MIGRATIONS.slice(0, -1);
      for (const statement of bootstrapStatements(s)) await db.sql(statement);
      for (const migration of previous) {
        for (const statement of migration.statements(s)) await db.sql(statement);
        await db.sql(
          `INSERT INTO ${db.table('migrations')} (version, description) VALUES ($1, $2)`,
          [migration.version, migration.description],
        );
      }
      return previous.map((m) => m.version);
    }

    /** A time as the dialect stores it: epoch ms on SQLite, a timestamp on PostgreSQL. */
    const at = (ms: number): number | Date => (dialect === 'sqlite' ? ms : new Date(ms));

    it('migrates a previous-version database with jobs in every pillar, losing and stranding nothing', async () => {
      const previous = await createPreviousVersion();
      expect(previous.length).toBeGreaterThan(0);
      const queue = 'upgrade';
      const oldWorker = 'old-release:1:abcd';
      const ids = {
        pending: randomUUID(),
        fetched: randomUUID(),
        processing: randomUUID(),
        archived: randomUUID(),
        dead: randomUUID(),
      };
      const leases = { fetched: randomUUID(), processing: randomUUID() };
      const now = Date.now();
      await db.query(`INSERT INTO ${db.table('queues')} (name, last_updated_utc) VALUES (?, ?)`, [
        queue,
        at(now),
      ]);
      await db.query(`INSERT INTO ${db.table('stats')} (queue) VALUES (?)`, [queue]);
      const t = at(now - 1_000);
      const hotRow = (
        id: string,
        status: 0 | 1 | 2,
        owner: { lease: string; started?: boolean } | null,
      ) =>
        db.query(
          `INSERT INTO ${db.table('hot')} (id, queue, type, payload, priority, status,
              attempt_count, worker_id, lease_id, heartbeat_utc, created_at_utc, enqueued_at_utc,
              started_at_utc, last_updated_utc, progress)
            VALUES (?, ?, 'upgrade.v1', '{"n":1}', 10, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            id,
            queue,
            status,
            owner?.started ? 1 : 0,
            owner ? oldWorker : null,
            owner?.lease ?? null,
            owner?.started ? at(now) : null,
            t,
            t,
            owner?.started ? t : null,
            t,
            owner?.started ? 40 : null,
          ],
        );
      await hotRow(ids.pending, 0, null);
      await hotRow(ids.fetched, 1, { lease: leases.fetched });
      await hotRow(ids.processing, 2, { lease: leases.processing, started: true });
      await db.query(
        `INSERT INTO ${db.table('archive')} (id, queue, type, payload, priority, attempt_count,
            created_at_utc, enqueued_at_utc, finished_at_utc, duration_ms, progress)
          VALUES (?, ?, 'upgrade.v1', '{"n":2}', 10, 1, ?, ?, ?, 5, 100)`,
        [ids.archived, queue, t, t, t],
      );
      await db.query(
        `INSERT INTO ${db.table('dlq')} (id, queue, type, payload, priority, status, attempt_count,
            created_at_utc, enqueued_at_utc, failure_reason, error_details, failed_at_utc)
          VALUES (?, ?, 'upgrade.v1', '{"n":3}', 10, 4, 3, ?, ?, ?, 'Error: old', ?)`,
        [ids.dead, queue, t, t, FailureReason.MaxRetriesExceeded, t],
      );

      // A storage of this version opens the old database: ensureSchema migrates it.
      const storage = await db.openStorage();
      const versions = (
        await db.query<{ version: number }>(
          `SELECT version FROM ${db.table('migrations')} ORDER BY version`,
        )
      ).map((r) => Number(r.version));
      const newest = (dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS).at(-1)!;
      expect(versions).toEqual([...previous, newest.version]);

      // Every job is where it was, with the new column empty.
      const expected = {
        pending: ['hot', JobStatus.Pending],
        fetched: ['hot', JobStatus.Fetched],
        processing: ['hot', JobStatus.Processing],
        archived: ['archive', JobStatus.Succeeded],
        dead: ['dlq', JobStatus.Failed],
      } as const;
      for (const [key, [pillar, status]] of Object.entries(expected)) {
        expect(await storage.getJob(ids[key as keyof typeof ids])).toMatchObject({
          pillar,
          status,
          progressNote: null,
        });
      }
      expect((await storage.getJob(ids.processing))?.progress).toBe(40);

      // The old worker's leases still work: its Processing job reports and finishes, its Fetched
      // job starts; nothing waits for the rescue.
      const running = { id: ids.processing, workerId: oldWorker, leaseId: leases.processing };
      expect(await storage.reportProgress(running, 80, 'after the upgrade')).toBe(1);
      expect(await storage.archiveSucceeded([{ ...running, durationMs: 7 }])).toEqual([
        { id: ids.processing, leaseId: leases.processing },
      ]);
      expect(await storage.getJob(ids.processing)).toMatchObject({
        pillar: 'archive',
        progressNote: 'after the upgrade',
      });
      const fetched = { id: ids.fetched, workerId: oldWorker, leaseId: leases.fetched };
      expect(await storage.markAsProcessing([fetched])).toEqual([ids.fetched]);
      expect(await storage.moveToDlq(fetched, { reason: FailureReason.Timeout, error: 'x' })).toBe(
        1,
      );

      // The pending job is claimed by a new worker; the DLQ job can be resurrected.
      expect((await claim(storage, queue, 10)).rows.map((r) => r.id)).toEqual([ids.pending]);
      expect(await storage.resurrect(ids.dead)).toBe(1);

      // The Workers table is there.
      const workerId = newWorkerId();
      await storage.upsertWorker({
        workerId,
        host: 'h',
        pid: 1,
        libraryVersion: '0.0.0',
        concurrency: 1,
        running: 0,
        handled: { queues: [queue], types: [] },
        circuits: {},
        draining: false,
        starting: true,
      });
      expect((await storage.listWorkers()).map((w) => [w.workerId, w.state])).toEqual([
        [workerId, 'running'],
      ]);

      // Opening it again changes nothing.
      await (await db.openStorage()).ensureSchema();
      expect(await db.count('migrations')).toBe(versions.length);
    });
  },
  { only: ['sqlite', 'postgres'] },
);
