import { randomUUID } from 'node:crypto';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { POSTGRES_MIGRATIONS } from '../../libs/chokaq/src/storage/postgres/postgres.schema';
import { SQLITE_MIGRATIONS } from '../../libs/chokaq/src/storage/sqlite/sqlite.schema';
import { createSchemaBefore } from '../support/schema-history';
import { TestSchema, createTestSchema, describeEachDialect } from '../support/test-database';
import { claim, expectRejects, newWorkerId, uniqueQueue } from './helpers';

const MINUTE = 60_000;

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
    ix_jobs_hot_enqueued: '(enqueued_at_utc, id COLLATE "C") WHERE (status = 0)',
    ix_jobs_hot_queue_enqueued: '(queue, enqueued_at_utc, id COLLATE "C") WHERE (status = 0)',
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
 * indexes, the exact SQLite counts of the archive and the DLQ, the metric buckets' retries and
 * start lag, the trace context column, the attempt history) works at once.
 *
 * The old database is built from the migrations themselves (every version before the one that
 * brought the Workers table), then filled by plain INSERTs in the old tables' shape, as the
 * previous release wrote them. SQL Server
 * applies its idempotent script in one transaction instead (its version 3 is pinned by the T-SQL
 * tests); its live run needs CHOKAQ_MSSQL_URL, so this suite runs SQLite and PostgreSQL.
 * test/e2e/previous-release-upgrade.e2e.spec.ts runs the previous release's own code instead: its
 * worker processes, built from git history, through the migration.
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

    /**
     * The versions that brought the Workers table (issue 13, step 2), the lists' indexes, and the
     * dashboard reads' counts and metric-bucket columns.
     */
    const WORKERS_VERSION = { sqlite: 3, postgres: 4 }[dialect as 'sqlite' | 'postgres'];
    const LISTS_VERSION = { sqlite: 4, postgres: 5 }[dialect as 'sqlite' | 'postgres'];
    const DASHBOARD_VERSION = { sqlite: 5, postgres: 6 }[dialect as 'sqlite' | 'postgres'];
    const AUDIT_VERSION = { sqlite: 6, postgres: 7 }[dialect as 'sqlite' | 'postgres'];
    /** The versions that index the audit log by target (a job's entries). */
    const AUDIT_TARGET_VERSION = { sqlite: 7, postgres: 9 }[dialect as 'sqlite' | 'postgres'];
    /**
     * PostgreSQL's version that rebuilt the claim's index with the due time's columns included
     * (index-only queue health). SQLite reads the due expression from its index entries as it is.
     */
    const HEALTH_INDEX_VERSION = { sqlite: undefined, postgres: 8 }[
      dialect as 'sqlite' | 'postgres'
    ];
    /** The version that brought the trace context column (issue 15, traces). */
    const TRACE_VERSION = { sqlite: 8, postgres: 10 }[dialect as 'sqlite' | 'postgres'];
    /** The version that brought the attempt history table (issue 17, part 2). */
    const ATTEMPTS_VERSION = { sqlite: 9, postgres: 11 }[dialect as 'sqlite' | 'postgres'];
    /** The version that brought the queues' rate limit columns (issue 17, part 3). */
    const RATE_VERSION = { sqlite: 10, postgres: 12 }[dialect as 'sqlite' | 'postgres'];
    /** The version that brought the payload version column (issue 17, part 4b). */
    const PAYLOAD_VERSION = { sqlite: 11, postgres: 13 }[dialect as 'sqlite' | 'postgres'];
    /** The version that brought the held jobs' column and the deferral counter (issue 27). */
    const HELD_VERSION = { sqlite: 12, postgres: 14 }[dialect as 'sqlite' | 'postgres'];
    /** The version that brought the archive's stored results column. */
    const RESULT_VERSION = { sqlite: 13, postgres: 16 }[dialect as 'sqlite' | 'postgres'];
    /** The version that brought groups (the `group_key` column, the queues' group limits). */
    const GROUPS_VERSION = { sqlite: 15, postgres: 18 }[dialect as 'sqlite' | 'postgres'];
    /** The version that brought batches (the `batch_id` column, the batch tables). */
    const BATCHES_VERSION = { sqlite: 16, postgres: 19 }[dialect as 'sqlite' | 'postgres'];
    /** The version that brought dependencies (the two graph columns, the edges table, Waiting). */
    const DEPENDENCIES_VERSION = { sqlite: 17, postgres: 20 }[dialect as 'sqlite' | 'postgres'];
    /** PostgreSQL's version that rebuilds the hot table's list indexes with Pending rows only. */
    const PENDING_LISTS_VERSION = { sqlite: undefined, postgres: 15 }[
      dialect as 'sqlite' | 'postgres'
    ];
    /**
     * PostgreSQL's version that gives the job ids of an install without jobs `COLLATE "C"`: left out
     * of a previous version's statements, as a database of that version never ran it (run on the
     * empty schema, it would convert the ids, and the lists' indexes would then be spelled `id`).
     */
    const BYTE_WISE_IDS_VERSION = { sqlite: undefined, postgres: 23 }[
      dialect as 'sqlite' | 'postgres'
    ];
    /**
     * A stand-in for the previous release below is this release's own storage opened without
     * migrating: it writes the trace context and payload version columns, the deferral counter and
     * the attempt history table, the group, batch and dependency columns, its claim reads the rate and group limit
     * columns and its reads the held jobs' column, so a schema it runs on must have them. On
     * SQLite the trace, rate, payload, held and result versions are also recorded, since `ADD COLUMN` cannot run twice there (SQLite has no
     * `IF NOT EXISTS` for it: the ledger is what guards it); PostgreSQL's run again, as its printed
     * script may, and the table's `CREATE TABLE IF NOT EXISTS` runs again on both.
     */
    const withTraceColumn = (version: number) =>
      version === TRACE_VERSION ||
      version === ATTEMPTS_VERSION ||
      version === RATE_VERSION ||
      version === PAYLOAD_VERSION ||
      version === HELD_VERSION ||
      version === GROUPS_VERSION ||
      version === BATCHES_VERSION ||
      version === DEPENDENCIES_VERSION;
    const traceColumnRecorded = (version: number) =>
      dialect === 'sqlite' &&
      (version === TRACE_VERSION ||
        version === RATE_VERSION ||
        version === PAYLOAD_VERSION ||
        version === HELD_VERSION ||
        version === RESULT_VERSION ||
        version === GROUPS_VERSION ||
        version === BATCHES_VERSION ||
        version === DEPENDENCIES_VERSION);

    /** A time as the dialect stores it: epoch ms on SQLite, a timestamp on PostgreSQL. */
    const at = (ms: number): number | Date => (dialect === 'sqlite' ? ms : new Date(ms));

    /** A queue's `queues` and `stats` rows, with the columns every release has written. */
    async function oldQueue(queue: string, updated: number | Date): Promise<void> {
      await db.query(`INSERT INTO ${db.table('queues')} (name, last_updated_utc) VALUES (?, ?)`, [
        queue,
        updated,
      ]);
      await db.query(`INSERT INTO ${db.table('stats')} (queue) VALUES (?)`, [queue]);
    }

    /**
     * An archived job and a dead one (type `old.v1`, `MaxRetriesExceeded` after 3 attempts), with
     * the columns every release has written: none that a later version added.
     */
    async function oldFinishedJobs(
      queue: string,
      ids: { archived: string; dead: string },
      t: number | Date,
      archivedAttempts = 1,
    ): Promise<void> {
      await db.query(
        `INSERT INTO ${db.table('archive')} (id, queue, type, payload, priority, attempt_count,
          created_at_utc, enqueued_at_utc, finished_at_utc, duration_ms)
         VALUES (?, ?, 'old.v1', '{}', 10, ?, ?, ?, ?, 7)`,
        [ids.archived, queue, archivedAttempts, t, t, t],
      );
      await db.query(
        `INSERT INTO ${db.table('dlq')} (id, queue, type, payload, priority, status, attempt_count,
          created_at_utc, enqueued_at_utc, failure_reason, error_details, failed_at_utc)
         VALUES (?, ?, 'old.v1', '{}', 10, 4, 3, ?, ?, ?, 'Error: old', ?)`,
        [ids.dead, queue, t, t, FailureReason.MaxRetriesExceeded, t],
      );
    }

    /**
     * The schema of the versions before `before` (by default the Workers table's), as that
     * release's `ensureSchema` left it. With `alsoApply`, the statements of those later versions
     * run too, but stay unrecorded (unless `alsoRecord` says otherwise), so `ensureSchema` applies
     * them again (each may run twice).
     */
    async function createPreviousVersion(
      before = WORKERS_VERSION,
      alsoApply?: (version: number) => boolean,
      alsoRecord?: (version: number) => boolean,
    ): Promise<number[]> {
      await createSchemaBefore(db, before, { alsoApply, alsoRecord });
      const all = dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
      return all.filter((m) => m.version < before).map((m) => m.version);
    }

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
      // The versions before the lists', and the later ones' statements (they add columns this
      // release writes): a schema that lacks only the lists' indexes, which a storage of this
      // release can run on.
      await createPreviousVersion(
        LISTS_VERSION,
        (version) =>
          version > LISTS_VERSION &&
          version !== PENDING_LISTS_VERSION &&
          version !== BYTE_WISE_IDS_VERSION,
        traceColumnRecorded,
      );
      if (dialect === 'sqlite') {
        // SQLite's version 17 rebuilt the hot table with every index of version 16, the lists'
        // included: drop them again for a schema that lacks only those.
        for (const name of ['jobs_hot_enqueued_ix', 'jobs_hot_queue_enqueued_ix']) {
          await db.sql(`DROP INDEX ${db.schema}${name}`);
        }
      }
      expect(Object.keys(await listIndexes(db))).not.toContain(
        Object.keys(LIST_INDEXES[dialect as 'sqlite' | 'postgres'])[0],
      );
      // That schema serves the storage as it is (only indexes differ): jobs in every pillar.
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

    it('the dashboard reads on a database of the previous version: retained counts start right, old buckets still count, in-flight runs finish with their start lag', async () => {
      await createPreviousVersion(DASHBOARD_VERSION);
      const queue = 'upgrade.dashboard';
      const oldWorker = 'old-release:2:abcd';
      const ids = {
        pending: randomUUID(),
        fetched: randomUUID(),
        processing: randomUUID(),
        archived: randomUUID(),
        dead: randomUUID(),
      };
      const leases = { fetched: randomUUID(), processing: randomUUID() };
      const now = Date.now();
      // Due five minutes before the upgrade; one bucket written per second an hour ago, as the
      // previous release wrote them.
      const due = at(now - 5 * MINUTE);
      const oldBucket = Math.floor((now - 60 * MINUTE) / 1_000) * 1_000;
      await db.query(`INSERT INTO ${db.table('queues')} (name, last_updated_utc) VALUES (?, ?)`, [
        queue,
        at(now),
      ]);
      await db.query(
        `INSERT INTO ${db.table('stats')} (queue, succeeded_total, failed_total) VALUES (?, 1, 1)`,
        [queue],
      );
      const hot = `INSERT INTO ${db.table('hot')} (id, queue, type, payload, priority, status,
          attempt_count, worker_id, lease_id, heartbeat_utc, started_at_utc, created_at_utc,
          enqueued_at_utc, last_updated_utc) VALUES (?, ?, 't', '{}', 10, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
      await db.query(hot, [ids.pending, queue, 0, 0, null, null, null, null, due, due, due]);
      await db.query(hot, [
        ...[ids.fetched, queue, 1, 0, oldWorker, leases.fetched, null, null],
        ...[due, due, due],
      ]);
      await db.query(hot, [
        ...[ids.processing, queue, 2, 1, oldWorker, leases.processing, at(now), at(now)],
        ...[due, due, due],
      ]);
      await db.query(
        `INSERT INTO ${db.table('archive')} (id, queue, type, payload, priority, attempt_count,
          created_at_utc, enqueued_at_utc, finished_at_utc, duration_ms)
         VALUES (?, ?, 't', '{}', 10, 1, ?, ?, ?, 7)`,
        [ids.archived, queue, due, due, at(oldBucket)],
      );
      await db.query(
        `INSERT INTO ${db.table('dlq')} (id, queue, type, payload, priority, status, attempt_count,
          created_at_utc, enqueued_at_utc, failure_reason, error_details, failed_at_utc)
         VALUES (?, ?, 't', '{}', 10, 4, 3, ?, ?, ?, 'Error: old', ?)`,
        [ids.dead, queue, due, due, FailureReason.MaxRetriesExceeded, at(now)],
      );
      await db.query(
        `INSERT INTO ${db.table('buckets')} (bucket_utc, queue, outcome, failure_reason,
          completed_count, duration_count, total_duration_ms, max_duration_ms)
         VALUES (?, ?, 0, -1, 1, 1, 7, 7)`,
        [at(oldBucket), queue],
      );

      // A process of this version starts: its storage migrates the schema.
      const storage = await db.openStorage();
      const all = dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
      expect(await db.count('migrations')).toBe(all.length);

      // Every job is where it was; the retained counts start from the rows already there.
      expect(await storage.countExactly({ pillar: 'hot', filter: { queue } })).toBe(3);
      const summary = await storage.getSummary();
      expect(summary).toMatchObject({ pending: 1, fetched: 1, processing: 1, succeededTotal: 1 });
      expect(summary.estimated).toEqual({
        archived: dialect !== 'sqlite',
        dlq: dialect !== 'sqlite',
      });
      if (dialect === 'sqlite') expect(summary).toMatchObject({ archived: 1, dlq: 1 });

      // The per-second bucket of the previous release still counts in the series.
      const [point] = await storage.getThroughputSeries({
        queue,
        from: new Date(oldBucket),
        to: new Date(oldBucket + MINUTE),
        stepMs: MINUTE,
      });
      expect(point).toMatchObject({ succeeded: 1, meanDurationMs: 7, started: 0, retried: 0 });

      // The runs in flight finish; the Fetched one and the Pending one start, with their lag.
      const running = { id: ids.processing, workerId: oldWorker, leaseId: leases.processing };
      expect(await storage.archiveSucceeded([{ ...running, durationMs: 3 }])).toHaveLength(1);
      const fetched = { id: ids.fetched, workerId: oldWorker, leaseId: leases.fetched };
      expect(await storage.markAsProcessing([fetched])).toEqual([ids.fetched]);
      expect(await storage.archiveSucceeded([{ ...fetched, durationMs: 4 }])).toHaveLength(1);
      const c = await claim(storage, queue, 5, undefined, { start: 5 });
      expect(c.rows.map((r) => r.id)).toEqual([ids.pending]);
      expect(await storage.archiveSucceeded([{ ...c.leases[0], durationMs: 5 }])).toHaveLength(1);

      expect(await storage.countExactly({ pillar: 'archive', filter: { queue } })).toBe(4);
      if (dialect === 'sqlite') {
        expect(await storage.getSummary()).toMatchObject({ archived: 4, dlq: 1 });
      }
      const health = (await storage.getQueueHealth()).find((h) => h.queue === queue)!;
      expect(health.startLag.started).toBe(2);
      expect(health.startLag.maxMs).toBeGreaterThanOrEqual(5 * MINUTE);
    });

    it('the audit log on a database of the previous version: its tables appear, storages opened before keep working, audited actions record', async () => {
      await createPreviousVersion(AUDIT_VERSION, withTraceColumn, traceColumnRecorded);
      const old = await db.openStorage({ autoCreateSchema: false });
      const queue = uniqueQueue('upgrade.audit');
      await old.enqueueMany([
        { queue, payload: {} },
        { queue, payload: {} },
      ]);
      // This release's storage, opened without migrating, cannot write the audit row the previous
      // version's schema has no table for: the audited change fails and rolls back.
      const refused = await expectRejects(
        old.updateQueue(queue, { isPaused: true }, { action: 'queue.pause', actor: 'ops' }),
      );
      expect(String(refused)).toMatch(/audit_log/);
      expect((await old.getQueues()).find((q) => q.name === queue)?.isPaused).toBe(false);

      const fresh = await db.openStorage();
      const c = await claim(old, queue, 2);
      await old.markAsProcessing(c.leases);
      expect(await old.archiveSucceeded([{ ...c.leases[0], durationMs: 1 }])).toHaveLength(1);
      await old.moveToDlq(c.leases[1], { reason: FailureReason.FatalError, error: 'boom' });

      await fresh.updateQueue(queue, { isPaused: true }, { action: 'queue.pause', actor: 'ops' });
      const moved = await fresh.resurrectMany([c.leases[1].id], 'ops', {
        action: 'dlq.resurrect-many',
        actor: 'ops',
      });
      expect(moved).toEqual([c.leases[1].id]);
      const { items } = await fresh.getAuditLog({ actor: 'ops' });
      expect(items.map((e) => [e.action, e.target, e.rowsAffected])).toEqual([
        ['dlq.resurrect-many', c.leases[1].id, 1],
        ['queue.pause', queue, 1],
      ]);
      expect(await old.getJob(c.leases[0].id)).toMatchObject({ pillar: 'archive' });
    });

    it("the audit log's target index on a database of the previous version: entries from before are found by target, storages opened before keep recording", async () => {
      await createPreviousVersion(AUDIT_TARGET_VERSION, withTraceColumn, traceColumnRecorded);
      const old = await db.openStorage({ autoCreateSchema: false });
      const queue = uniqueQueue('upgrade.target');
      const [a, b] = (await old.enqueueMany([{ queue }, { queue }])).map((r) => r.id);
      // Before the migration: recorded, and found by target without the index.
      await old.cancel([a], 'ops', { action: 'job.cancel', actor: 'ops' });
      expect((await old.getAuditLog({ target: a })).items.map((e) => e.action)).toEqual([
        'job.cancel',
      ]);

      const fresh = await db.openStorage();
      const index =
        dialect === 'sqlite'
          ? await db.sql<{ sql: string }>(`SELECT sql FROM sqlite_master WHERE name = ?`, [
              `${db.schema}audit_log_target_ix`,
            ])
          : await db.sql<{ sql: string }>(
              `SELECT indexdef AS sql FROM pg_indexes WHERE schemaname = $1 AND indexname = 'ix_audit_log_target'`,
              [db.schema],
            );
      expect(index).toEqual([
        {
          sql:
            dialect === 'sqlite'
              ? expect.stringMatching(/\(target, at_utc, id\)$/)
              : expect.stringMatching(
                  /\("left"\(\(target\)::text, 255\), at_utc, id COLLATE "C"\)$/,
                ),
        },
      ]);
      // The storage opened before the migration keeps recording, and both read by target.
      await old.cancel([b], 'ops', { action: 'job.cancel', actor: 'ops' });
      await fresh.resurrectMany([a], 'ops', { action: 'dlq.resurrect-many', actor: 'ops' });
      expect((await fresh.getAuditLog({ target: a })).items.map((e) => e.action)).toEqual([
        'dlq.resurrect-many',
        'job.cancel',
      ]);
      expect((await old.getAuditLog({ target: b })).items.map((e) => e.target)).toEqual([b]);
    });

    it('the trace context on a database of the previous version: the column appears in every pillar, jobs stored before run on without one, a new job carries its own through every move', async () => {
      await createPreviousVersion(TRACE_VERSION);
      const queue = 'upgrade.trace';
      const oldWorker = 'old-release:3:abcd';
      const ids = {
        pending: randomUUID(),
        fetched: randomUUID(),
        processing: randomUUID(),
        archived: randomUUID(),
        dead: randomUUID(),
      };
      const leases = { fetched: randomUUID(), processing: randomUUID() };
      const t = at(Date.now() - 1_000);
      await oldQueue(queue, t);
      // Rows as the previous release wrote them: no trace context column to name.
      const hot = `INSERT INTO ${db.table('hot')} (id, queue, type, payload, priority, status,
          attempt_count, worker_id, lease_id, heartbeat_utc, started_at_utc, created_at_utc,
          enqueued_at_utc, last_updated_utc) VALUES (?, ?, 'old.v1', '{}', 10, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
      await db.query(hot, [ids.pending, queue, 0, 0, null, null, null, null, t, t, t]);
      await db.query(hot, [
        ids.fetched,
        queue,
        1,
        0,
        oldWorker,
        leases.fetched,
        null,
        null,
        t,
        t,
        t,
      ]);
      await db.query(hot, [
        ...[ids.processing, queue, 2, 1, oldWorker, leases.processing, t, t],
        ...[t, t, t],
      ]);
      await oldFinishedJobs(queue, ids, t);

      // A process of this version starts: its storage migrates the schema.
      const storage = await db.openStorage();
      const all = dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
      expect(await db.count('migrations')).toBe(all.length);
      for (const pillar of ['hot', 'archive', 'dlq'] as const) {
        expect(await db.count(pillar, 'trace_context IS NULL')).toBe(
          await db.count(pillar, `queue = '${queue}'`),
        );
      }

      // Every job stored before is where it was, without a trace context, and runs on: the old
      // worker's leases finish, the DLQ job resurrects.
      for (const id of Object.values(ids)) {
        expect(await storage.getJob(id)).toMatchObject({ traceContext: null });
      }
      const running = { id: ids.processing, workerId: oldWorker, leaseId: leases.processing };
      expect(await storage.archiveSucceeded([{ ...running, durationMs: 3 }])).toHaveLength(1);
      const fetched = { id: ids.fetched, workerId: oldWorker, leaseId: leases.fetched };
      expect(await storage.markAsProcessing([fetched])).toEqual([ids.fetched]);
      expect(
        await storage.moveToDlq(fetched, { reason: FailureReason.FatalError, error: 'x' }),
      ).toBe(1);
      expect(await storage.resurrect(ids.dead)).toBe(1);
      expect(await storage.getJob(ids.dead)).toMatchObject({ pillar: 'hot', traceContext: null });
      expect(
        (await claim(storage, { queues: [], types: [{ queue, type: 'old.v1' }] }, 10)).rows
          .map((r) => [r.id, r.traceContext])
          .sort(),
      ).toEqual(
        [
          [ids.pending, null],
          [ids.dead, null],
        ].sort(),
      );

      // A job enqueued now keeps its producer's context through the claim, the DLQ, a resurrect
      // and the archive.
      const traceContext = {
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
        tracestate: 'vendor=opaque',
      };
      const { id } = await storage.enqueue({ queue, type: 'new.v1', traceContext });
      const handled = { queues: [], types: [{ queue, type: 'new.v1' }] };
      const first = await claim(storage, handled, 1);
      expect(first.rows.map((r) => [r.id, r.traceContext])).toEqual([[id, traceContext]]);
      await storage.markAsProcessing(first.leases);
      await storage.moveToDlq(first.leases[0], { reason: FailureReason.FatalError, error: 'y' });
      expect(await storage.getJob(id)).toMatchObject({ pillar: 'dlq', traceContext });
      expect(await storage.resurrect(id)).toBe(1);
      const again = await claim(storage, handled, 1);
      expect(again.rows.map((r) => r.traceContext)).toEqual([traceContext]);
      await storage.archiveSucceeded([{ ...again.leases[0], durationMs: 1 }]);
      expect(await storage.getJob(id)).toMatchObject({ pillar: 'archive', traceContext });
    });

    it('the attempt history on a database of the previous version: the table appears empty, jobs stored before run on, and the run of an old worker that fails now leaves its row', async () => {
      await createPreviousVersion(ATTEMPTS_VERSION);
      const queue = 'upgrade.attempts';
      const oldWorker = 'old-release:4:abcd';
      const ids = { processing: randomUUID(), archived: randomUUID(), dead: randomUUID() };
      const lease = randomUUID();
      const started = at(Date.now() - 2_000);
      await oldQueue(queue, started);
      // A second attempt running under a worker of the previous release, as that release wrote it.
      await db.query(
        `INSERT INTO ${db.table('hot')} (id, queue, type, payload, priority, status, attempt_count,
          worker_id, lease_id, heartbeat_utc, started_at_utc, created_at_utc, enqueued_at_utc,
          last_updated_utc) VALUES (?, ?, 'old.v1', '{}', 10, 2, 2, ?, ?, ?, ?, ?, ?, ?)`,
        [ids.processing, queue, oldWorker, lease, started, started, started, started, started],
      );
      await oldFinishedJobs(queue, ids, started, 3);

      // A process of this version starts: its storage migrates the schema.
      const storage = await db.openStorage();
      const all = dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
      expect(await db.count('migrations')).toBe(all.length);
      expect(await db.count('attempts')).toBe(0);
      // Jobs that ended before have no history: their attempts were never recorded.
      for (const id of [ids.archived, ids.dead]) {
        expect(await storage.getJob(id, { attempts: true })).toMatchObject({ attempts: [] });
      }

      // The old worker's run fails: its lease still works, and its attempt is recorded.
      const running = { id: ids.processing, workerId: oldWorker, leaseId: lease };
      expect(await storage.rescheduleForRetry(running, 0, 'Error: after the upgrade')).toBe(1);
      const view = await storage.getJob(ids.processing, { attempts: true });
      expect(view?.attempts).toEqual([
        expect.objectContaining({
          seq: 1,
          attempt: 2,
          workerId: oldWorker,
          leaseId: lease,
          outcome: 'retried',
          error: 'Error: after the upgrade',
        }),
      ]);
      expect(view!.attempts![0].durationMs).toBeGreaterThanOrEqual(1_000);

      // The DLQ job from before resurrects and purges like any other.
      expect(await storage.resurrect(ids.dead)).toBe(1);
      expect(await storage.getJob(ids.dead, { attempts: true })).toMatchObject({
        pillar: 'hot',
        attempts: [],
      });
    });

    it('the rate limit on a database of the previous version: the columns appear, queues keep their controls, a limit set then holds in the claim', async () => {
      await createPreviousVersion(RATE_VERSION);
      const queue = 'upgrade.rate';
      await db.query(
        `INSERT INTO ${db.table('queues')} (name, max_workers, last_updated_utc) VALUES (?, ?, ?)`,
        [queue, 7, at(Date.now())],
      );
      await db.query(`INSERT INTO ${db.table('stats')} (queue) VALUES (?)`, [queue]);

      const storage = await db.openStorage();
      const all = dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
      expect(await db.count('migrations')).toBe(all.length);
      expect((await storage.getQueues()).find((q) => q.name === queue)).toMatchObject({
        maxWorkers: 7,
        rateLimit: null,
      });
      await storage.enqueueMany(Array.from({ length: 4 }, () => ({ queue })));
      await storage.updateQueue(queue, { rateLimit: { max: 2, perMs: 60_000 } });
      const c = await claim(storage, queue, 4, newWorkerId(), { start: 4 });
      expect(c.rows).toHaveLength(2);
      expect((await claim(storage, queue, 4, newWorkerId(), { start: 4 })).rows).toHaveLength(0);
    });

    it('the payload version on a database of the previous version: the column appears in every pillar as 1, jobs stored before are claimed by unversioned handlers, a versioned job keeps its version through every move', async () => {
      await createPreviousVersion(PAYLOAD_VERSION);
      const queue = 'upgrade.payload-version';
      const t = at(Date.now() - 1_000);
      await oldQueue(queue, t);
      // Rows as the previous release wrote them: no payload version column to name.
      const ids = { pending: randomUUID(), archived: randomUUID(), dead: randomUUID() };
      await db.query(
        `INSERT INTO ${db.table('hot')} (id, queue, type, payload, priority, status, attempt_count,
          created_at_utc, enqueued_at_utc, last_updated_utc)
         VALUES (?, ?, 'old.v1', '{}', 10, 0, 0, ?, ?, ?)`,
        [ids.pending, queue, t, t, t],
      );
      await oldFinishedJobs(queue, ids, t);

      const storage = await db.openStorage();
      const all = dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
      expect(await db.count('migrations')).toBe(all.length);
      for (const pillar of ['hot', 'archive', 'dlq'] as const) {
        expect(await db.count(pillar, 'payload_version = 1')).toBe(await db.count(pillar));
      }
      for (const id of Object.values(ids)) {
        expect(await storage.getJob(id)).toMatchObject({ payloadVersion: 1 });
      }
      // An unversioned handler (1 to 1) claims what was stored before, the resurrected job too.
      expect(await storage.resurrect(ids.dead)).toBe(1);
      expect(
        (await claim(storage, { queues: [], types: [{ queue, type: 'old.v1' }] }, 10)).rows
          .map((r) => [r.id, r.payloadVersion])
          .sort(),
      ).toEqual(
        [
          [ids.pending, 1],
          [ids.dead, 1],
        ].sort(),
      );

      // A job enqueued as version 2 keeps it through the claim, the DLQ, a resurrect and the
      // archive; a handler of version 1 never claims it.
      const { id } = await storage.enqueue({ queue, type: 'new', payloadVersion: 2 });
      expect(
        (await claim(storage, { queues: [], types: [{ queue, type: 'new' }] }, 5)).rows,
      ).toEqual([]);
      const handled = { queues: [], types: [{ queue, type: 'new', minVersion: 1, maxVersion: 2 }] };
      const first = await claim(storage, handled, 1);
      expect(first.rows.map((r) => [r.id, r.payloadVersion])).toEqual([[id, 2]]);
      await storage.markAsProcessing(first.leases);
      await storage.moveToDlq(first.leases[0], { reason: FailureReason.FatalError, error: 'y' });
      expect(await storage.getJob(id)).toMatchObject({ pillar: 'dlq', payloadVersion: 2 });
      expect(await storage.resurrect(id)).toBe(1);
      const again = await claim(storage, handled, 1);
      expect(again.rows.map((r) => r.payloadVersion)).toEqual([2]);
      await storage.archiveSucceeded([{ ...again.leases[0], durationMs: 1 }]);
      expect(await storage.getJob(id)).toMatchObject({ pillar: 'archive', payloadVersion: 2 });
    });

    it('stored results on a database of the previous version: the archive gains the column empty, jobs archived before read no result, a run archived now stores its own', async () => {
      await createPreviousVersion(RESULT_VERSION);
      const queue = 'upgrade.results';
      const t = at(Date.now() - 1_000);
      await oldQueue(queue, t);
      const ids = { archived: randomUUID(), dead: randomUUID() };
      await oldFinishedJobs(queue, ids, t);

      // A process of this version starts: its storage migrates the schema.
      const storage = await db.openStorage();
      const all = dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
      expect(await db.count('migrations')).toBe(all.length);
      expect(await db.count('archive', 'result IS NULL')).toBe(await db.count('archive'));
      expect(await storage.getJob(ids.archived)).toMatchObject({ pillar: 'archive', result: null });

      // Runs finished now: one records its result, one (in the same batch) does not.
      const [a, b] = (await storage.enqueueMany([{ queue }, { queue }])).map((r) => r.id);
      const c = await claim(storage, queue, 2);
      expect(
        await storage.archiveSucceeded(
          c.leases.map((l) => ({
            ...l,
            durationMs: 1,
            ...(l.id === a ? { result: '[1,2]' } : {}),
          })),
        ),
      ).toHaveLength(2);
      expect(await storage.getJob(a)).toMatchObject({ pillar: 'archive', result: [1, 2] });
      expect(await storage.getJob(b)).toMatchObject({ pillar: 'archive', result: null });
    });

    (HEALTH_INDEX_VERSION === undefined ? it.skip : it)(
      "queue health on a database of the previous version: the claim's index is rebuilt with the due time's columns; storages opened before claim in the same order; the counts agree",
      async () => {
        await createPreviousVersion(HEALTH_INDEX_VERSION, withTraceColumn, traceColumnRecorded);
        const old = await db.openStorage({ autoCreateSchema: false });
        const queue = uniqueQueue('upgrade.health');
        const ids = (
          await old.enqueueMany([
            { queue },
            { queue, priority: 20 },
            { queue },
            { queue, delayMs: 60 * MINUTE },
          ])
        ).map((r) => r.id);
        // The first claim prepares the previous version's statements on the old storage.
        expect((await claim(old, queue, 1)).rows.map((r) => r.id)).toEqual([ids[1]]);

        const fresh = await db.openStorage();
        const [index] = await db.sql<{ indexdef: string }>(
          `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'ix_jobs_hot_pending'`,
          [db.schema],
        );
        expect(index.indexdef).toMatch(
          /\(queue, priority DESC, COALESCE\(scheduled_at_utc, enqueued_at_utc\), id COLLATE "C"\) INCLUDE \(scheduled_at_utc, enqueued_at_utc\) WHERE \(status = 0\)$/,
        );
        const health = (await fresh.getQueueHealth()).find((h) => h.queue === queue)!;
        expect(health).toMatchObject({ duePending: 2, active: 1 });
        expect(health.maxLagMs).toBeGreaterThanOrEqual(0);
        expect(health.maxLagMs).toBeLessThan(MINUTE);
        const stats = (await fresh.getQueueStats()).find((q) => q.queue === queue)!;
        expect(stats).toMatchObject({ pending: 3, fetched: 1, processing: 0 });
        // Both storages keep claiming in the index's order (priority, then due time, then id).
        expect((await claim(old, queue, 1)).rows.map((r) => r.id)).toEqual([ids[0]]);
        expect((await claim(fresh, queue, 5)).rows.map((r) => r.id)).toEqual([ids[2]]);
      },
    );
  },
  { only: ['sqlite', 'postgres'] },
);
