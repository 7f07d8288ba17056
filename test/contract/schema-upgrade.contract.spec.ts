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
import { claim, newWorkerId, uniqueQueue } from './helpers';

/** The keyset lists' indexes (added, or rebuilt with the id as last key), by name: their keys. */
const LIST_INDEXES: Record<'sqlite' | 'postgres', Record<string, string>> = {
  sqlite: {
    jobs_hot_enqueued_ix: '(enqueued_at_utc, id)',
    jobs_hot_queue_enqueued_ix: '(queue, enqueued_at_utc, id)',
    jobs_archive_finished_ix: '(finished_at_utc, id)',
    jobs_archive_queue_ix: '(queue, finished_at_utc, id)',
    jobs_archive_type_ix: '(type, finished_at_utc, id)',
    jobs_dlq_failed_ix: '(failed_at_utc, id)',
    jobs_dlq_queue_ix: '(queue, failed_at_utc, id)',
    jobs_dlq_reason_ix: '(failure_reason, failed_at_utc, id)',
    jobs_dlq_type_ix: '(type, failed_at_utc, id)',
  },
  postgres: {
    ix_jobs_hot_enqueued: '(enqueued_at_utc, id COLLATE "C")',
    ix_jobs_hot_queue_enqueued: '(queue, enqueued_at_utc, id COLLATE "C")',
    ix_jobs_archive_finished: '(finished_at_utc, id COLLATE "C")',
    ix_jobs_archive_queue: '(queue, finished_at_utc, id COLLATE "C")',
    ix_jobs_archive_type: '(type, finished_at_utc, id COLLATE "C")',
    ix_jobs_dlq_failed: '(failed_at_utc, id COLLATE "C")',
    ix_jobs_dlq_queue: '(queue, failed_at_utc, id COLLATE "C")',
    ix_jobs_dlq_reason: '(failure_reason, failed_at_utc, id COLLATE "C")',
    ix_jobs_dlq_type: '(type, failed_at_utc, id COLLATE "C")',
  },
};

/** The list indexes present, as `name → key list` in the dialect's own spelling. */
async function listIndexes(db: TestSchema): Promise<Record<string, string>> {
  const wanted = LIST_INDEXES[db.dialect as 'sqlite' | 'postgres'];
  const found: Record<string, string> = {};
  if (db.dialect === 'sqlite') {
    const rows = await db.sql<{ name: string; sql: string }>(
      `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL`,
    );
    for (const { name, sql } of rows) {
      const key = name.slice(db.schema.length);
      if (key in wanted) found[key] = /\(([^)]*)\)\s*$/.exec(sql)![0];
    }
  } else {
    const rows = await db.sql<{ indexname: string; indexdef: string }>(
      `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1`,
      [db.schema],
    );
    for (const { indexname, indexdef } of rows) {
      if (indexname in wanted) found[indexname] = /USING btree (\(.*\))$/.exec(indexdef)![1];
    }
  }
  return found;
}

/**
 * A database created by the previous schema version, with jobs in every pillar (and a job held by
 * a worker of the previous release, Fetched and Processing), is migrated in place when a storage of
 * this version opens it: nothing is lost or stranded, the old worker's leases still finalise its
 * jobs, and what the newer versions added (the Workers table, the progress note, the keyset lists'
 * indexes) works at once.
 *
 * The old database is built from the migrations themselves (every version before the one that
 * brought the Workers table), then filled by plain INSERTs in the old tables' shape, as the
 * previous release wrote them. SQL Server
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

    /** The versions that brought the Workers table (issue 13, step 2) and the lists' indexes. */
    const WORKERS_VERSION = { sqlite: 3, postgres: 4 }[dialect as 'sqlite' | 'postgres'];
    const LISTS_VERSION = { sqlite: 4, postgres: 5 }[dialect as 'sqlite' | 'postgres'];

    /**
     * The schema of the versions before `before` (by default the Workers table's), as that
     * release's `ensureSchema` left it.
     */
    async function createPreviousVersion(before = WORKERS_VERSION): Promise<number[]> {
      if (dialect === 'sqlite') {
        const previous = SQLITE_MIGRATIONS.filter((m) => m.version < before);
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
      const previous = POSTGRES_MIGRATIONS.filter((m) => m.version < before);
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
      const all = dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
      expect(versions).toEqual(all.map((m) => m.version));

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

    it("builds the keyset lists' indexes on a database of the previous version, and its jobs are listed", async () => {
      await createPreviousVersion(LISTS_VERSION);
      expect(Object.keys(await listIndexes(db))).not.toContain(
        Object.keys(LIST_INDEXES[dialect as 'sqlite' | 'postgres'])[0],
      );
      // The previous schema serves the storage as it is (only indexes differ): jobs in every pillar.
      const old = await db.openStorage({ autoCreateSchema: false });
      const queue = uniqueQueue('upgrade.lists');
      await old.enqueueMany(Array.from({ length: 9 }, (_, n) => ({ queue, payload: { n } })));
      const c = await claim(old, queue, 6);
      await old.markAsProcessing(c.leases);
      await old.archiveSucceeded(c.leases.slice(0, 3).map((l) => ({ ...l, durationMs: 1 })));
      for (const lease of c.leases.slice(3)) {
        await old.moveToDlq(lease, { reason: FailureReason.FatalError, error: 'Error: boom' });
      }

      // A process of this version starts: its storage migrates the schema.
      const fresh = await db.openStorage();
      expect(await listIndexes(db)).toEqual(LIST_INDEXES[dialect as 'sqlite' | 'postgres']);

      // Every job is where it was, and the lists find it.
      expect((await fresh.listActive({ filter: { queue } })).items).toHaveLength(3);
      expect((await fresh.listArchive({ filter: { queue } })).items).toHaveLength(3);
      const dead = await fresh.listDlq({ filter: { queue }, limit: 2 });
      const rest = await fresh.listDlq({ filter: { queue }, cursor: dead.nextCursor! });
      expect([...dead.items, ...rest.items].map((j) => j.id).sort()).toEqual(
        c.leases
          .slice(3)
          .map((l) => l.id)
          .sort(),
      );
      // The storage that was open across the migration keeps working.
      expect((await claim(old, queue, 10)).rows).toHaveLength(3);
    });
  },
  { only: ['sqlite', 'postgres'] },
);
