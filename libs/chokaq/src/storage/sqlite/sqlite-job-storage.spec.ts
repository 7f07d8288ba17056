import Database from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { dataSourceOf } from '../../../../../test/support/storage-internals';
import { waitFor } from '../../../../../test/support/wait-for';
import { uuidv7 } from '../../common/uuid';
import { ChokaQTransactionError, ChokaQValidationError } from '../../errors';
import { FailureReason, JobStatus } from '../../interfaces/job-status.enum';
import { HotJob, JobLease } from '../../interfaces/job.interface';
import { createJobStorage } from '../create-storage';
import { JobStorage } from '../job-storage';
import { sqliteSchemaScript } from './sqlite.schema';

const P = 'chokaq_';
const ALL = { queues: ['q', 'a', 'b', 'r'], types: [] };

/** A fresh file database with one storage and a raw connection for assertions and fault injection. */
async function open(): Promise<{
  file: string;
  storage: JobStorage;
  raw: Database.Database;
  another(): Promise<JobStorage>;
  close(): Promise<void>;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'chokaq-sqlite-spec-'));
  const file = join(dir, 'chokaq.db');
  const storage = await createJobStorage({ type: 'sqlite', database: file });
  const raw = new Database(file);
  raw.pragma('busy_timeout = 5000');
  const others: JobStorage[] = [];
  return {
    file,
    storage,
    raw,
    async another() {
      const other = await createJobStorage({
        type: 'sqlite',
        database: file,
        autoCreateSchema: false,
      });
      others.push(other);
      return other;
    },
    async close() {
      for (const other of others) await other.close();
      await storage.close();
      raw.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Matches a better-sqlite3 error by message. Not `toThrow`: the native addon keeps the
 * `SqliteError` class of the first Jest module registry that loaded it, so in a worker that ran
 * another test file first the error comes from another realm and fails `instanceof Error`.
 */
function driverError(message: RegExp): { message: unknown } {
  return { message: expect.stringMatching(message) };
}

function leaseOf(job: HotJob): JobLease {
  return { id: job.id, workerId: job.workerId!, leaseId: job.leaseId! };
}

async function claim(
  storage: JobStorage,
  limit = 10,
  handled: { queues: string[]; types: Array<{ queue: string; type: string }> } = ALL,
  workerId = 'w1',
): Promise<HotJob[]> {
  return storage.fetchNextBatch({ workerId, leaseId: randomUUID(), limit, handled });
}

async function startOne(storage: JobStorage, queue = 'q'): Promise<JobLease> {
  const [job] = await claim(storage, 1, { queues: [queue], types: [] });
  const lease = leaseOf(job);
  expect(await storage.markAsProcessing([lease])).toEqual([lease.id]);
  return lease;
}

describe('SqliteJobStorage', () => {
  let db: Awaited<ReturnType<typeof open>>;
  let storage: JobStorage;
  const count = (table: string, where = '1 = 1', ...params: unknown[]): number =>
    Number(
      (
        db.raw.prepare(`SELECT COUNT(*) AS n FROM ${P}${table} WHERE ${where}`).get(...params) as {
          n: number;
        }
      ).n,
    );
  const stats = (queue: string) =>
    db.raw.prepare(`SELECT * FROM ${P}stats_summary WHERE queue = ?`).get(queue) as Record<
      string,
      number
    >;

  beforeEach(async () => {
    db = await open();
    storage = db.storage;
  });
  afterEach(async () => {
    await db.close();
  });

  describe('schema', () => {
    it('creates every table, records version 1 and is idempotent', async () => {
      await storage.ensureSchema();
      await storage.ensureSchema();
      const tables = (
        db.raw
          .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
          .all() as Array<{ name: string }>
      ).map((t) => t.name);
      for (const t of [
        'jobs_hot',
        'jobs_archive',
        'jobs_dlq',
        'stats_summary',
        'metric_buckets',
        'queues',
        'recurring_jobs',
        'schema_migrations',
      ]) {
        expect(tables).toContain(`${P}${t}`);
      }
      expect(db.raw.prepare(`SELECT version FROM ${P}schema_migrations`).all()).toEqual([
        { version: 1 },
      ]);
      expect(String(db.raw.pragma('journal_mode', { simple: true }))).toBe('wal');
      expect(sqliteSchemaScript(P)).toContain(
        `CREATE UNIQUE INDEX IF NOT EXISTS ${P}jobs_hot_idempotency_ux`,
      );
    });

    it('a claim commits with synchronous = NORMAL and restores the connection setting', async () => {
      const handle = (
        dataSourceOf(db.storage).driver as unknown as { databaseConnection: Database.Database }
      ).databaseConnection;
      const level = () => Number(handle.pragma('synchronous', { simple: true }));
      // A temporary trigger on the storage's own connection records the level the claim ran under.
      handle.exec('CREATE TEMP TABLE sync_seen (level INTEGER)');
      handle.exec(
        `CREATE TEMP TRIGGER sync_probe AFTER UPDATE OF status ON main.${P}jobs_hot ` +
          'BEGIN INSERT INTO sync_seen SELECT synchronous FROM pragma_synchronous; END',
      );
      const seen = () => handle.prepare('SELECT level FROM sync_seen').pluck().all();
      await db.storage.enqueueMany([{ queue: 'sync' }, { queue: 'sync' }, { queue: 'sync' }]);
      const claim = {
        workerId: 'w',
        leaseId: 'l-1',
        limit: 1,
        handled: { queues: ['sync'], types: [] },
      };
      expect(level()).toBe(2); // FULL, SQLite's default
      expect(await db.storage.fetchNextBatch(claim)).toHaveLength(1);
      expect(seen()).toEqual([1]);
      expect(level()).toBe(2);
      // Other writes keep the connection's level.
      expect(
        await db.storage.release([
          {
            id: (await db.storage.fetchNextBatch({ ...claim, leaseId: 'l-2' }))[0].id,
            workerId: 'w',
            leaseId: 'l-2',
          },
        ]),
      ).toBe(1);
      expect(seen()).toEqual([1, 1, 2]);
      // An application's weaker setting is left alone.
      handle.pragma('synchronous = OFF');
      expect(await db.storage.fetchNextBatch({ ...claim, leaseId: 'l-3' })).toHaveLength(1);
      expect(seen()).toEqual([1, 1, 2, 0]);
      expect(level()).toBe(0);
      handle.exec('DROP TRIGGER temp.sync_probe');
    });

    it('uses the partial pending index for the claim and the active index for budgets', () => {
      const plan = (sql: string) =>
        (db.raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>)
          .map((r) => r.detail)
          .join('\n');
      expect(
        plan(
          `SELECT id FROM ${P}jobs_hot WHERE status = 0 AND queue = 'q' ORDER BY priority DESC, COALESCE(scheduled_at_utc, enqueued_at_utc), id LIMIT 5`,
        ),
      ).toContain('jobs_hot_pending_ix');
      expect(
        plan(`SELECT COUNT(*) FROM ${P}jobs_hot WHERE queue = 'q' AND status IN (1, 2)`),
      ).toContain('jobs_hot_active_ix');
    });

    it('works on :memory:', async () => {
      const memory = await createJobStorage({ type: 'sqlite', database: ':memory:' });
      try {
        const { id } = await memory.enqueue({ queue: 'q' });
        const [job] = await claim(memory);
        expect(job.id).toBe(id);
      } finally {
        await memory.close();
      }
    });

    it('wakes a subscriber when another connection commits, not on its own commits; not on :memory:', async () => {
      const watcher = await createJobStorage({
        type: 'sqlite',
        database: db.file,
        dataVersionPollMs: 10,
      });
      const heard: Array<string | undefined> = [];
      const unsubscribe = await watcher.subscribe((queue) => heard.push(queue));
      try {
        expect(unsubscribe).not.toBeNull();
        await watcher.enqueue({ queue: 'own' });
        // An absence can only be observed for a while: five poll intervals.
        await new Promise((r) => setTimeout(r, 50));
        expect(heard).toEqual([]);
        await storage.enqueue({ queue: 'elsewhere' });
        await waitFor('the wake-up', () => heard.length === 1);
        expect(heard).toEqual([undefined]);
      } finally {
        await unsubscribe?.();
        await watcher.close();
      }
      const memory = await createJobStorage({ type: 'sqlite', database: ':memory:' });
      const off = await createJobStorage({
        type: 'sqlite',
        database: db.file,
        dataVersionPollMs: 0,
      });
      try {
        expect(await memory.subscribe(() => undefined)).toBeNull();
        expect(await off.subscribe(() => undefined)).toBeNull();
      } finally {
        await Promise.all([memory.close(), off.close()]);
      }
    });

    it('lets 4 processes run ensureSchema on one new file at once', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'chokaq-sqlite-schema-'));
      const file = join(dir, 'shared.db');
      try {
        const outputs = await Promise.all([1, 2, 3, 4].map(() => runChild(file, 'schema', 'q')));
        for (const out of outputs) expect(out).toEqual({ ok: true });
        const check = new Database(file);
        expect(check.prepare(`SELECT COUNT(*) AS n FROM ${P}schema_migrations`).get()).toEqual({
          n: 1,
        });
        check.close();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('enqueue', () => {
    it('inserts Pending rows and ensures the queue and stats rows', async () => {
      const result = await storage.enqueue({
        queue: 'q',
        type: 't.v1',
        payload: { a: 1 },
        tags: ['x', 'y'],
        priority: 5,
        createdBy: 'me',
      });
      expect(result.created).toBe(true);
      const job = await storage.getJob(result.id);
      expect(job).toMatchObject({
        pillar: 'hot',
        queue: 'q',
        type: 't.v1',
        payload: { a: 1 },
        tags: ['x', 'y'],
        priority: 5,
        status: JobStatus.Pending,
        createdBy: 'me',
      });
      expect(count('queues', 'name = ?', 'q')).toBe(1);
      expect(stats('q')).toMatchObject({ succeeded_total: 0 });
    });

    it('is idempotent on id, including after the job finished', async () => {
      const id = uuidv7();
      expect(await storage.enqueue({ id, queue: 'q' })).toEqual({ id, created: true });
      expect(await storage.enqueue({ id, queue: 'q' })).toEqual({ id, created: false });
      const lease = await startOne(storage);
      await storage.archiveSucceeded([{ ...lease, durationMs: 1 }]);
      expect(await storage.enqueue({ id, queue: 'q' })).toEqual({ id, created: false });
      expect(count('jobs_hot')).toBe(0);
    });

    it('returns the active job for an idempotency key, and frees the key once it leaves hot', async () => {
      const first = await storage.enqueue({ queue: 'q', idempotencyKey: 'k1' });
      const again = await storage.enqueue({ queue: 'q', idempotencyKey: 'k1' });
      expect(again).toEqual({ id: first.id, created: false });
      const lease = await startOne(storage);
      await storage.archiveSucceeded([{ ...lease, durationMs: 1 }]);
      const later = await storage.enqueue({ queue: 'q', idempotencyKey: 'k1' });
      expect(later.created).toBe(true);
      expect(later.id).not.toBe(first.id);
    });

    it('gives concurrent enqueues with one key from several storages one row and one id', async () => {
      const others = [storage, await db.another(), await db.another()];
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          others[i % 3].enqueue({ queue: 'q', idempotencyKey: 'same' }),
        ),
      );
      expect(new Set(results.map((r) => r.id)).size).toBe(1);
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(count('jobs_hot')).toBe(1);
    });

    it('validates every item of enqueueMany first and names the index', async () => {
      const items = [{ queue: 'q' }, { queue: 'q', priority: 1.5 }];
      await expect(storage.enqueueMany(items)).rejects.toThrow(ChokaQValidationError);
      await expect(storage.enqueueMany(items)).rejects.toMatchObject({
        field: 'items[1].priority',
      });
      expect(count('jobs_hot')).toBe(0);
    });

    it('inserts large batches in chunks, results in input order', async () => {
      const items = Array.from({ length: 1_234 }, (_, i) => ({
        id: uuidv7(),
        queue: i % 2 ? 'a' : 'b',
        payload: i,
      }));
      items.push({ id: items[0].id, queue: 'b', payload: -1 });
      const results = await storage.enqueueMany(items);
      expect(results.map((r) => r.id)).toEqual(items.map((i) => i.id));
      expect(results.filter((r) => r.created)).toHaveLength(1_234);
      expect(results[1_234].created).toBe(false);
      expect(count('jobs_hot')).toBe(1_234);
      expect(count('stats_summary')).toBe(2);
    });

    it('stores delayMs relative to the database clock and runAt as given', async () => {
      const now = (await storage.now()).getTime();
      const delayed = await storage.enqueue({ queue: 'q', delayMs: 60_000 });
      const runAt = new Date('2030-01-02T03:04:05.678Z');
      const absolute = await storage.enqueue({ queue: 'q', runAt });
      const d = (await storage.getJob(delayed.id))!.scheduledAtUtc!.getTime();
      expect(d).toBeGreaterThanOrEqual(now + 60_000);
      expect(d).toBeLessThan(now + 65_000);
      expect((await storage.getJob(absolute.id))!.scheduledAtUtc).toEqual(runAt);
    });

    describe('in the caller transaction', () => {
      let shared: JobStorage;
      let dataSource: DataSource;
      beforeEach(async () => {
        dataSource = new DataSource({ type: 'better-sqlite3', database: db.file });
        await dataSource.initialize();
        shared = await createJobStorage({ dataSource, autoCreateSchema: false });
      });
      afterEach(async () => {
        await shared.close();
        await dataSource.destroy();
      });

      it('commits and rolls back with the caller, without deadlocking other calls', async () => {
        const runner = dataSource.createQueryRunner();
        await runner.startTransaction();
        const inside = await shared.enqueue({ queue: 'q' }, { transaction: runner });
        // Another ChokaQ call on the same connection backs off until the caller's transaction ends.
        const summary = shared.getSummary();
        await runner.rollbackTransaction();
        expect((await summary).pending).toBe(0);
        expect(await shared.getJob(inside.id)).toBeNull();

        await runner.startTransaction();
        const many = await shared.enqueueMany([{ queue: 'q' }, { queue: 'q' }], {
          transaction: runner,
        });
        await runner.query(`SELECT 1`);
        await runner.commitTransaction();
        for (const r of many) expect((await shared.getJob(r.id))?.pillar).toBe('hot');
        await runner.release();
      });

      it('rejects runners without a transaction, of another DataSource, or not runners at all', async () => {
        const runner = dataSource.createQueryRunner();
        await expect(shared.enqueue({ queue: 'q' }, { transaction: runner })).rejects.toThrow(
          ChokaQTransactionError,
        );
        await expect(shared.enqueue({ queue: 'q' }, { transaction: {} })).rejects.toThrow(
          ChokaQTransactionError,
        );
        const other = new DataSource({ type: 'better-sqlite3', database: ':memory:' });
        await other.initialize();
        const foreign = other.createQueryRunner();
        await foreign.startTransaction();
        await expect(shared.enqueue({ queue: 'q' }, { transaction: foreign })).rejects.toThrow(
          /another DataSource/,
        );
        await foreign.rollbackTransaction();
        await other.destroy();
      });
    });
  });

  describe('fetchNextBatch', () => {
    it('claims by priority then due time, sets the fencing token, skips delayed jobs', async () => {
      const low = await storage.enqueue({ queue: 'q', priority: 1 });
      const high = await storage.enqueue({ queue: 'q', priority: 50 });
      const later = await storage.enqueue({ queue: 'q', priority: 99, delayMs: 60_000 });
      const mid = await storage.enqueue({ queue: 'q', priority: 10 });
      const jobs = await claim(storage, 10);
      expect(jobs.map((j) => j.id)).toEqual([high.id, mid.id, low.id]);
      expect(
        jobs.every((j) => j.status === JobStatus.Fetched && j.workerId === 'w1' && j.leaseId),
      ).toBe(true);
      expect(new Set(jobs.map((j) => j.leaseId)).size).toBe(1);
      expect((await storage.getJob(later.id))!.status).toBe(JobStatus.Pending);
    });

    it('claims only handled queues and (queue, type) pairs, and skips paused or inactive queues', async () => {
      await storage.enqueue({ queue: 'a', type: 'x.v1' });
      const y = await storage.enqueue({ queue: 'a', type: 'y.v1' });
      await storage.enqueue({ queue: 'b' });
      const c = await storage.enqueue({ queue: 'c' });
      await storage.updateQueue('b', { isPaused: true });
      await storage.updateQueue('c', { isActive: false });
      expect(
        await claim(storage, 10, { queues: ['b', 'c'], types: [{ queue: 'a', type: 'y.v1' }] }),
      ).toEqual([expect.objectContaining({ id: y.id })]);
      await storage.updateQueue('c', { isActive: true });
      expect((await claim(storage, 10, { queues: ['c'], types: [] })).map((j) => j.id)).toEqual([
        c.id,
      ]);
      expect(await claim(storage, 0)).toEqual([]);
    });

    it('keeps MaxWorkers within one claim and across claims', async () => {
      await storage.updateQueue('q', { maxWorkers: 3 });
      await storage.enqueueMany(Array.from({ length: 10 }, () => ({ queue: 'q' })));
      await storage.enqueueMany(Array.from({ length: 4 }, () => ({ queue: 'a' })));
      const first = await claim(storage, 100);
      expect(first.filter((j) => j.queue === 'q')).toHaveLength(3);
      expect(first.filter((j) => j.queue === 'a')).toHaveLength(4);
      expect(await claim(storage, 100)).toEqual([]);
      await storage.release([leaseOf(first.find((j) => j.queue === 'q')!)]);
      // The released job is pending again: one slot, one claim.
      expect(await claim(storage, 100)).toHaveLength(1);
    });

    it('never gives one job to two claimers (several storages on one file)', async () => {
      await storage.updateQueue('a', { maxWorkers: 7 });
      await storage.enqueueMany(
        Array.from({ length: 300 }, (_, i) => ({ queue: i % 3 === 0 ? 'a' : 'q' })),
      );
      const storages = [storage, await db.another(), await db.another(), await db.another()];
      const claimed: HotJob[] = [];
      await Promise.all(
        storages.map(async (s, i) => {
          for (let idle = 0; idle < 2;) {
            const rows = await claim(s, 7, ALL, `w${i}`);
            if (rows.length === 0) idle++;
            claimed.push(...rows);
          }
        }),
      );
      const ids = claimed.map((j) => j.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(claimed.filter((j) => j.queue === 'a')).toHaveLength(7);
      expect(claimed.filter((j) => j.queue === 'q')).toHaveLength(200);
    });

    it('never gives one job to two claimers across OS processes', async () => {
      await storage.enqueueMany(Array.from({ length: 120 }, () => ({ queue: 'mp' })));
      const outputs = await Promise.all([1, 2, 3].map(() => runChild(db.file, 'claim', 'mp')));
      const ids = outputs.flatMap((o) => (o as { claimed: string[] }).claimed);
      expect(ids).toHaveLength(120);
      expect(new Set(ids).size).toBe(120);
    });
  });

  describe('worker-owned transitions', () => {
    it('markAsProcessing needs the exact lease and Status = 1 (or already started under it)', async () => {
      await storage.enqueue({ queue: 'q' });
      const [job] = await claim(storage);
      const lease = leaseOf(job);
      expect(await storage.markAsProcessing([{ ...lease, leaseId: randomUUID() }])).toEqual([]);
      expect(await storage.markAsProcessing([{ ...lease, workerId: 'w2' }])).toEqual([]);
      expect(await storage.markAsProcessing([lease])).toEqual([job.id]);
      // A retry with the same lease (after an ambiguous commit) reports it started, counted once.
      expect(await storage.markAsProcessing([lease])).toEqual([job.id]);
      const view = (await storage.getJob(job.id))!;
      expect(view).toMatchObject({ status: JobStatus.Processing, attemptCount: 1 });
      expect(view.startedAtUtc).not.toBeNull();
      expect(view.heartbeatUtc).not.toBeNull();
    });

    it('keepAlive touches owned Fetched and Processing rows and reports cancellations', async () => {
      await storage.enqueueMany([{ queue: 'q' }, { queue: 'q' }]);
      const jobs = await claim(storage);
      const [processing, fetched] = jobs.map(leaseOf);
      await storage.markAsProcessing([processing]);
      db.raw.prepare(`UPDATE ${P}jobs_hot SET heartbeat_utc = 1, last_updated_utc = 1`).run();
      await storage.cancel([processing.id], 'ops');
      const result = await storage.keepAlive('w1', [
        processing,
        fetched,
        { ...fetched, leaseId: randomUUID() },
      ]);
      expect(result).toEqual({ touched: 2, cancelRequested: [processing.id] });
      expect((await storage.getJob(processing.id))!.heartbeatUtc!.getTime()).toBeGreaterThan(1);
      expect((await storage.getJob(fetched.id))!.lastUpdatedUtc!.getTime()).toBeGreaterThan(1);
      expect(await storage.keepAlive('other', [processing])).toEqual({
        touched: 0,
        cancelRequested: [],
      });
    });

    it('release returns owned Fetched rows to Pending; with a delay counts a retry', async () => {
      await storage.enqueueMany([{ queue: 'q' }, { queue: 'q' }]);
      const [a, b] = (await claim(storage)).map(leaseOf);
      expect(await storage.release([a])).toBe(1);
      expect(await storage.release([a])).toBe(0);
      expect(stats('q').retried_total).toBe(0);
      expect(await storage.release([b], 30_000)).toBe(1);
      expect(stats('q').retried_total).toBe(1);
      const view = (await storage.getJob(b.id))!;
      expect(view).toMatchObject({ status: JobStatus.Pending, workerId: null, leaseId: null });
      expect(view.scheduledAtUtc!.getTime()).toBeGreaterThan(Date.now() + 20_000);
    });

    it('rescheduleForRetry moves owned Processing rows back with LastError', async () => {
      await storage.enqueue({ queue: 'q' });
      const [job] = await claim(storage);
      const lease = leaseOf(job);
      expect(await storage.rescheduleForRetry(lease, 1_000, 'x')).toBe(0); // still Fetched
      await storage.markAsProcessing([lease]);
      expect(
        await storage.rescheduleForRetry({ ...lease, leaseId: randomUUID() }, 1_000, 'x'),
      ).toBe(0);
      expect(await storage.rescheduleForRetry(lease, 1_000, 'bad\u0000thing')).toBe(1);
      expect(await storage.getJob(job.id)).toMatchObject({
        status: JobStatus.Pending,
        workerId: null,
        heartbeatUtc: null,
        lastError: 'bad\uFFFDthing',
        attemptCount: 1,
      });
      expect(stats('q').retried_total).toBe(1);
    });
  });

  describe('moves', () => {
    it('archiveSucceeded moves owned rows with counters and one bucket per queue', async () => {
      await storage.enqueueMany([{ queue: 'q' }, { queue: 'q' }, { queue: 'a' }]);
      // Claim order among equal priorities depends on random id bits: put the 'q' jobs first.
      const rank = (j: HotJob) => (j.queue === 'q' ? 0 : 1);
      const leases = (await claim(storage)).sort((x, y) => rank(x) - rank(y)).map(leaseOf);
      await storage.markAsProcessing(leases.slice(0, 2));
      const stale = { ...leases[2], leaseId: randomUUID() };
      const done = await storage.archiveSucceeded([
        { ...leases[0], durationMs: 10 },
        { ...leases[1], durationMs: 30.4 },
        { ...stale, durationMs: 5 },
      ]);
      expect(done.map((r) => r.id).sort()).toEqual([leases[0].id, leases[1].id].sort());
      expect(stats('q').succeeded_total).toBe(2);
      expect(stats('q').last_activity_utc).toBeGreaterThan(0);
      const bucket = db.raw.prepare(`SELECT * FROM ${P}metric_buckets WHERE queue = 'q'`).all();
      expect(bucket).toEqual([
        expect.objectContaining({
          outcome: 0,
          failure_reason: -1,
          completed_count: 2,
          duration_count: 2,
          total_duration_ms: 40,
          max_duration_ms: 30,
        }),
      ]);
      expect((bucket[0] as { bucket_utc: number }).bucket_utc % 1000).toBe(0);
      expect(await storage.getJob(leases[0].id)).toMatchObject({
        pillar: 'archive',
        status: JobStatus.Succeeded,
        durationMs: 10,
      });
      expect(await storage.archiveSucceeded([{ ...leases[0], durationMs: 1 }])).toEqual([]);
      expect(stats('q').succeeded_total).toBe(2);
    });

    it('rolls the whole archive move back when the archive insert fails', async () => {
      await storage.enqueue({ queue: 'q' });
      const lease = await startOne(storage);
      // A row with the same id already in the archive makes step 2 fail after step 1 deleted.
      db.raw
        .prepare(
          `INSERT INTO ${P}jobs_archive (id, queue, type, payload, priority, attempt_count, created_at_utc, enqueued_at_utc, finished_at_utc) VALUES (?, 'q', 'q', 'null', 0, 0, 0, 0, 0)`,
        )
        .run(lease.id);
      await expect(storage.archiveSucceeded([{ ...lease, durationMs: 1 }])).rejects.toMatchObject(
        driverError(/UNIQUE/),
      );
      expect(await storage.getJob(lease.id)).toMatchObject({
        pillar: 'hot',
        status: JobStatus.Processing,
        leaseId: lease.leaseId,
      });
      expect(count('jobs_archive')).toBe(1);
      expect(stats('q').succeeded_total).toBe(0);
      expect(count('metric_buckets')).toBe(0);
      // The connection is usable again and the lease still owns the row.
      db.raw.prepare(`DELETE FROM ${P}jobs_archive`).run();
      expect(await storage.archiveSucceeded([{ ...lease, durationMs: 1 }])).toEqual([
        { id: lease.id, leaseId: lease.leaseId },
      ]);
    });

    it('rolls a DLQ move back when a counter update fails', async () => {
      await storage.enqueue({ queue: 'q' });
      const lease = await startOne(storage);
      db.raw.exec(
        `CREATE TRIGGER fail_buckets BEFORE INSERT ON ${P}metric_buckets BEGIN SELECT RAISE(ABORT, 'injected'); END`,
      );
      await expect(
        storage.moveToDlq(lease, { reason: FailureReason.FatalError, error: 'x' }),
      ).rejects.toMatchObject(driverError(/injected/));
      expect((await storage.getJob(lease.id))!.pillar).toBe('hot');
      expect(count('jobs_dlq')).toBe(0);
      expect(stats('q').failed_total).toBe(0);
      db.raw.exec('DROP TRIGGER fail_buckets');
      expect(await storage.moveToDlq(lease, { reason: FailureReason.FatalError, error: 'x' })).toBe(
        1,
      );
    });

    it('moveToDlq by lease or by id, with failed or cancelled counters and buckets', async () => {
      await storage.enqueueMany([{ queue: 'q' }, { queue: 'q' }]);
      const lease = await startOne(storage);
      expect(
        await storage.moveToDlq(
          { ...lease, workerId: 'x' },
          { reason: FailureReason.Timeout, error: 'late' },
        ),
      ).toBe(0);
      expect(
        await storage.moveToDlq(lease, {
          reason: FailureReason.Timeout,
          error: 'late\nstack',
          durationMs: 12,
        }),
      ).toBe(1);
      const pending = (await storage.listActive({})).items[0];
      expect(
        await storage.moveToDlq(
          { id: pending.id },
          { reason: FailureReason.Cancelled, error: 'admin', actor: 'ops' },
        ),
      ).toBe(1);
      expect(await storage.getJob(lease.id)).toMatchObject({
        pillar: 'dlq',
        status: JobStatus.Failed,
        failureReason: FailureReason.Timeout,
        errorDetails: 'late\nstack',
      });
      expect(await storage.getJob(pending.id)).toMatchObject({
        pillar: 'dlq',
        status: JobStatus.Cancelled,
        lastModifiedBy: 'ops',
      });
      expect(stats('q')).toMatchObject({ failed_total: 1, cancelled_total: 1 });
      const buckets = db.raw
        .prepare(
          `SELECT outcome, failure_reason, completed_count, max_duration_ms FROM ${P}metric_buckets ORDER BY outcome`,
        )
        .all();
      expect(buckets).toEqual([
        {
          outcome: 1,
          failure_reason: FailureReason.Timeout,
          completed_count: 1,
          max_duration_ms: 12,
        },
        {
          outcome: 2,
          failure_reason: FailureReason.Cancelled,
          completed_count: 1,
          max_duration_ms: 0,
        },
      ]);
      await expect(
        storage.moveToDlq({ id: pending.id }, { reason: 4 as FailureReason, error: '' }),
      ).rejects.toThrow(ChokaQValidationError);
    });

    it('cancel moves Pending/Fetched to DLQ and flags Processing', async () => {
      const [p, f, r] = await storage.enqueueMany([{ queue: 'q' }, { queue: 'q' }, { queue: 'q' }]);
      const byId = new Map((await claim(storage)).map((j) => [j.id, leaseOf(j)]));
      await storage.release([byId.get(p.id)!]); // p Pending, f Fetched, r Processing
      await storage.markAsProcessing([byId.get(r.id)!]);
      const result = await storage.cancel([p.id, f.id, r.id, uuidv7()], 'ops');
      expect(result.cancelled.sort()).toEqual([p.id, f.id].sort());
      expect(result.cancelRequested).toEqual([r.id]);
      expect(await storage.getJob(p.id)).toMatchObject({
        pillar: 'dlq',
        status: JobStatus.Cancelled,
        failureReason: FailureReason.Cancelled,
        errorDetails: 'Cancelled by ops',
      });
      expect((await storage.getJob(r.id))!.cancelRequestedUtc).not.toBeNull();
      expect(stats('q').cancelled_total).toBe(2);
    });

    it('resurrect deletes from the DLQ first, applies edits, and runs once under a race', async () => {
      const { id } = await storage.enqueue({
        queue: 'q',
        idempotencyKey: 'key',
        tags: ['old'],
        payload: 1,
      });
      const lease = await startOne(storage);
      await storage.moveToDlq(lease, { reason: FailureReason.MaxRetriesExceeded, error: 'boom' });
      const other = await db.another();
      const moved = await Promise.all([
        storage.resurrect(id, { payload: { v: 2 }, tags: ['new'], priority: 77 }, 'ops'),
        other.resurrect(id, undefined, 'ops2'),
      ]);
      expect(moved.sort()).toEqual([0, 1]);
      const view = (await storage.getJob(id))!;
      expect(view).toMatchObject({
        pillar: 'hot',
        status: JobStatus.Pending,
        attemptCount: 0,
        idempotencyKey: null,
        lastError: 'boom',
      });
      expect(view.enqueuedAtUtc.getTime()).toBeGreaterThanOrEqual(view.createdAtUtc.getTime());
      if (view.priority === 77)
        expect(view).toMatchObject({ payload: { v: 2 }, tags: ['new'], lastModifiedBy: 'ops' });
      expect(stats('q').resurrected_total).toBe(1);
      // The key was not reinserted: a new job may take it.
      expect((await storage.enqueue({ queue: 'q', idempotencyKey: 'key' })).created).toBe(true);
    });

    it('rolls resurrect back when the hot insert fails', async () => {
      await storage.enqueue({ queue: 'q' });
      const lease = await startOne(storage);
      await storage.moveToDlq(lease, { reason: FailureReason.FatalError, error: 'x' });
      db.raw.exec(
        `CREATE TRIGGER fail_hot BEFORE INSERT ON ${P}jobs_hot BEGIN SELECT RAISE(ABORT, 'injected'); END`,
      );
      await expect(storage.resurrect(lease.id)).rejects.toMatchObject(driverError(/injected/));
      expect((await storage.getJob(lease.id))!.pillar).toBe('dlq');
      expect(stats('q').resurrected_total).toBe(0);
      db.raw.exec('DROP TRIGGER fail_hot');
      expect(await storage.resurrect(lease.id)).toBe(1);
    });

    it('resurrectMany and resurrectByFilter (oldest failure first, at most max)', async () => {
      await storage.enqueueMany(
        Array.from({ length: 6 }, (_, i) => ({ queue: i < 4 ? 'a' : 'b' })),
      );
      const jobs = await claim(storage, 10);
      for (const [i, job] of jobs.entries()) {
        await storage.moveToDlq(
          { id: job.id },
          { reason: FailureReason.FatalError, error: `e${i}` },
        );
        db.raw
          .prepare(`UPDATE ${P}jobs_dlq SET failed_at_utc = ? WHERE id = ?`)
          .run(1_000 + i, job.id);
      }
      const a = jobs.filter((j) => j.queue === 'a');
      expect(await storage.resurrectByFilter({ queue: 'a' }, 2)).toEqual([a[0].id, a[1].id]);
      const b = jobs.filter((j) => j.queue === 'b').map((j) => j.id);
      expect((await storage.resurrectMany([...b, uuidv7()])).sort()).toEqual([...b].sort());
      expect(count('jobs_dlq')).toBe(2);
      expect(stats('a').resurrected_total).toBe(2);
    });
  });

  describe('rescue', () => {
    it('recoverAbandoned returns stale Fetched rows to Pending, bounded', async () => {
      await storage.enqueueMany([{ queue: 'q' }, { queue: 'q' }, { queue: 'q' }]);
      const jobs = await claim(storage);
      db.raw
        .prepare(
          `UPDATE ${P}jobs_hot SET last_updated_utc = last_updated_utc - 120000 WHERE id != ?`,
        )
        .run(jobs[2].id);
      expect(await storage.recoverAbandoned(60_000, 1)).toBe(1);
      expect(await storage.recoverAbandoned(60_000)).toBe(1);
      expect(await storage.recoverAbandoned(60_000)).toBe(0);
      expect(count('jobs_hot', 'status = 0')).toBe(2);
      // The stale lease can no longer start the job.
      expect(await storage.markAsProcessing([leaseOf(jobs[0])])).toEqual([]);
    });

    it('archiveZombies: DLQ Zombie, or Pending for RetryZombies queues, per-queue timeout', async () => {
      await storage.updateQueue('r', { retryZombies: true });
      await storage.updateQueue('a', { zombieTimeoutSeconds: 3_600 });
      await storage.enqueueMany([{ queue: 'q' }, { queue: 'r' }, { queue: 'a' }]);
      const leases = (await claim(storage)).map(leaseOf);
      await storage.markAsProcessing(leases);
      db.raw.prepare(`UPDATE ${P}jobs_hot SET heartbeat_utc = heartbeat_utc - 120000`).run();
      const result = await storage.archiveZombies(60_000);
      const byQueue = async (id: string) => (await storage.getJob(id))!;
      expect(result.dlq).toHaveLength(1);
      expect(result.retried).toHaveLength(1);
      expect(await byQueue(result.dlq[0])).toMatchObject({
        pillar: 'dlq',
        queue: 'q',
        status: JobStatus.Zombie,
        failureReason: FailureReason.Zombie,
      });
      expect(await byQueue(result.retried[0])).toMatchObject({
        pillar: 'hot',
        queue: 'r',
        status: JobStatus.Pending,
        workerId: null,
      });
      expect((await byQueue(result.retried[0])).lastError).toMatch(
        /^Zombie: the heartbeat expired/,
      );
      expect(stats('q').failed_total).toBe(1);
      expect(count('jobs_hot', 'queue = ? AND status = 2', 'a')).toBe(1);
      // The zombie's old owner cannot finalise it any more.
      const stale = leases.find((l) => l.id === result.dlq[0])!;
      expect(await storage.archiveSucceeded([{ ...stale, durationMs: 1 }])).toEqual([]);
    });
  });

  describe('queues, purge and retention', () => {
    it('updateQueue upserts and leaves unspecified fields alone; null clears', async () => {
      const created = await storage.updateQueue('new-q', { maxWorkers: 5, isPaused: true });
      expect(created).toMatchObject({
        name: 'new-q',
        isPaused: true,
        isActive: true,
        maxWorkers: 5,
        retryZombies: false,
      });
      const changed = await storage.updateQueue('new-q', {
        isPaused: false,
        executionTimeoutMs: 1_000,
      });
      expect(changed).toMatchObject({ isPaused: false, maxWorkers: 5, executionTimeoutMs: 1_000 });
      expect(await storage.updateQueue('new-q', { maxWorkers: null })).toMatchObject({
        maxWorkers: null,
        executionTimeoutMs: 1_000,
      });
      expect((await storage.getQueues()).map((q) => q.name)).toContain('new-q');
      await expect(storage.updateQueue('bad name', {})).rejects.toThrow(ChokaQValidationError);
      await expect(storage.updateQueue('q', { maxWorkers: -1 })).rejects.toThrow(
        ChokaQValidationError,
      );
    });

    it('purges the DLQ by ids and by filter, counters untouched', async () => {
      await storage.enqueueMany(Array.from({ length: 5 }, () => ({ queue: 'q' })));
      const jobs = await claim(storage);
      for (const job of jobs)
        await storage.moveToDlq({ id: job.id }, { reason: FailureReason.FatalError, error: 'e' });
      expect(await storage.purgeDlq([jobs[0].id, jobs[0].id])).toBe(1);
      expect(await storage.purgeDlqByFilter({ reason: FailureReason.FatalError }, 3)).toBe(3);
      expect(count('jobs_dlq')).toBe(1);
      expect(stats('q').failed_total).toBe(5);
    });

    it('applyRetention deletes old rows in batches, counters untouched', async () => {
      await storage.enqueueMany(Array.from({ length: 5 }, () => ({ queue: 'q' })));
      const leases = (await claim(storage)).map(leaseOf);
      await storage.archiveSucceeded(leases.slice(0, 3).map((l) => ({ ...l, durationMs: 1 })));
      await storage.moveToDlq(leases[3], { reason: FailureReason.FatalError, error: 'e' });
      db.raw.prepare(`UPDATE ${P}jobs_archive SET finished_at_utc = 1000`).run();
      db.raw.prepare(`UPDATE ${P}jobs_dlq SET failed_at_utc = 1000`).run();
      db.raw
        .prepare(
          `UPDATE ${P}metric_buckets SET bucket_utc = bucket_utc - 86400000 WHERE outcome = 0`,
        )
        .run();
      const result = await storage.applyRetention({
        archiveMs: 60_000,
        dlqMs: 60_000,
        metricsMs: 60_000,
        batchSize: 2,
      });
      expect(result).toEqual({ archive: 3, dlq: 1, metricBuckets: 1 });
      expect(count('metric_buckets')).toBe(1);
      expect(stats('q')).toMatchObject({ succeeded_total: 3, failed_total: 1 });
    });
  });

  describe('reads', () => {
    it('pages with filters, escaped LIKE and a stable id tie-breaker', async () => {
      const items = Array.from({ length: 25 }, (_, i) => ({
        queue: 'q',
        type: i % 2 ? 'odd.v1' : 'even.v1',
        priority: 5, // same sort key everywhere: only the id orders the pages
        payload: { n: i, s: i === 3 ? '100%_done' : 'x' },
        tags: i % 5 === 0 ? ['five', 'a_b'] : ['other'],
      }));
      await storage.enqueueMany(items);
      const seen: string[] = [];
      for (let page = 1; page <= 3; page++) {
        const result = await storage.listActive({
          sortBy: 'priority',
          sortDir: 'asc',
          page,
          pageSize: 10,
        });
        expect(result.total).toBe(25);
        seen.push(...result.items.map((j) => j.id));
      }
      expect(new Set(seen).size).toBe(25);
      expect([...seen]).toEqual([...seen].sort());
      expect((await storage.listActive({ filter: { tag: 'five' } })).total).toBe(5);
      expect((await storage.listActive({ filter: { tag: 'a_b' } })).total).toBe(5);
      expect((await storage.listActive({ filter: { tag: 'a%' } })).total).toBe(0);
      expect((await storage.listActive({ filter: { search: '100%_' } })).total).toBe(1);
      expect((await storage.listActive({ filter: { search: '0%' } })).total).toBe(1);
      expect(
        (await storage.listActive({ filter: { type: 'odd.v1', status: JobStatus.Pending } })).total,
      ).toBe(12);
      await expect(storage.listActive({ sortBy: 'failedAt' })).rejects.toThrow(
        ChokaQValidationError,
      );
    });

    it('reads archive and DLQ pages with date ranges, reasons and ids; getJob finds every pillar', async () => {
      await storage.enqueueMany(
        Array.from({ length: 4 }, (_, i) => ({ queue: i < 2 ? 'a' : 'b' })),
      );
      const leases = (await claim(storage)).map(leaseOf);
      await storage.archiveSucceeded([{ ...leases[0], durationMs: 5 }]);
      await storage.moveToDlq(leases[1], {
        reason: FailureReason.Timeout,
        error: 'timeout after 5s\n at x',
      });
      await storage.moveToDlq(leases[2], {
        reason: FailureReason.FatalError,
        error: 'fatal: bad payload',
      });
      const now = await storage.now();
      const archive = await storage.getArchivePage({
        filter: { from: new Date(now.getTime() - 60_000), to: new Date(now.getTime() + 1) },
      });
      expect(archive.items.map((j) => j.id)).toEqual([leases[0].id]);
      expect((await storage.getArchivePage({ filter: { to: new Date(0) } })).total).toBe(0);
      expect(
        (await storage.getDlqPage({ filter: { reason: FailureReason.Timeout } })).items.map(
          (j) => j.id,
        ),
      ).toEqual([leases[1].id]);
      expect((await storage.getDlqPage({ filter: { ids: [leases[2].id] } })).total).toBe(1);
      expect((await storage.getDlqPage({ sortBy: 'failedAt', sortDir: 'asc' })).total).toBe(2);
      expect((await storage.getJob(leases[0].id))!.pillar).toBe('archive');
      expect((await storage.getJob(leases[1].id))!.pillar).toBe('dlq');
      expect((await storage.getJob(leases[3].id))!.pillar).toBe('hot');
      expect(await storage.getJob(uuidv7())).toBeNull();
    });

    it('summary, queue stats, health, throughput, top errors and preview', async () => {
      await storage.updateQueue('a', { maxWorkers: 4 });
      await storage.enqueueMany([
        { queue: 'a' },
        { queue: 'a' },
        { queue: 'a' },
        { queue: 'b', delayMs: 60_000 },
      ]);
      const jobs = await claim(storage, 2, { queues: ['a'], types: [] });
      await storage.archiveSucceeded([{ ...leaseOf(jobs[0]), durationMs: 3 }]);
      await storage.moveToDlq(leaseOf(jobs[1]), {
        reason: FailureReason.FatalError,
        error: 'Error: same\n at a',
      });
      await storage.enqueue({ queue: 'a' });
      const [third] = await claim(storage, 1, { queues: ['a'], types: [] });
      await storage.moveToDlq(leaseOf(third), {
        reason: FailureReason.FatalError,
        error: 'Error: same\n at b',
      });
      db.raw
        .prepare(
          `UPDATE ${P}jobs_hot SET enqueued_at_utc = enqueued_at_utc - 5000 WHERE queue = 'a'`,
        )
        .run();

      expect(await storage.getSummary()).toEqual({
        succeededTotal: 1,
        failedTotal: 2,
        cancelledTotal: 0,
        retriedTotal: 0,
        resurrectedTotal: 0,
        pending: 2,
        fetched: 0,
        processing: 0,
        archived: 1,
        dlq: 2,
      });
      const queueStats = await storage.getQueueStats();
      expect(queueStats.find((s) => s.queue === 'a')).toMatchObject({
        pending: 1,
        archived: 1,
        dlq: 2,
        succeededTotal: 1,
        failedTotal: 2,
        maxWorkers: 4,
        isPaused: false,
      });
      const health = await storage.getQueueHealth();
      const a = health.find((h) => h.queue === 'a')!;
      expect(a).toMatchObject({ duePending: 1, active: 0, maxWorkers: 4, saturation: 0 });
      expect(a.maxLagMs).toBeGreaterThanOrEqual(5_000);
      expect(health.find((h) => h.queue === 'b')).toMatchObject({
        duePending: 0,
        saturation: null,
      });
      const throughput = await storage.getThroughput('a');
      expect(throughput).toMatchObject({
        succeeded1m: 1,
        failed1m: 2,
        succeeded5m: 1,
        failed5m: 2,
      });
      expect(throughput.perSecond1m).toBeCloseTo(3 / 60);
      expect((await storage.getThroughput('b')).perSecond5m).toBe(0);
      const top = await storage.getTopDlqErrors(5);
      expect(top).toEqual([{ error: 'Error: same', count: 2, lastFailedAtUtc: expect.any(Date) }]);
      const preview = await storage.previewDlqFilter({ queue: 'a' }, 1);
      expect(preview).toEqual({ matched: 2, willAffect: 1, sampleIds: [jobs[1].id] });
    });
  });

  describe('recurring jobs', () => {
    it('upserts definitions and claims each slot once', async () => {
      const slot = new Date('2030-01-01T00:00:00Z');
      const next = new Date('2030-01-01T00:01:00Z');
      const def = {
        name: 'nightly',
        cron: '* * * * *',
        timeZone: 'UTC',
        queue: 'q',
        type: 'tick.v1',
        payload: { a: 1 },
        misfirePolicy: 'skip' as const,
        nextSlotUtc: slot,
      };
      await storage.upsertRecurringJob(def);
      await storage.upsertRecurringJob({ ...def, payload: { a: 2 }, nextSlotUtc: next }); // same cron: slot kept
      expect(await storage.getRecurringJobs()).toEqual([
        { ...def, payload: { a: 2 }, lastSlotUtc: null, isPaused: false },
      ]);

      const other = await db.another();
      const job = { queue: 'q', type: 'tick.v1', payload: { a: 2 } };
      const results = await Promise.all([
        storage.claimRecurringSlot('nightly', slot, next, job),
        other.claimRecurringSlot('nightly', slot, next, job),
      ]);
      expect(results.filter((r) => r !== null)).toHaveLength(1);
      expect(count('jobs_hot')).toBe(1);
      expect((await storage.getRecurringJobs())[0]).toMatchObject({
        lastSlotUtc: slot,
        nextSlotUtc: next,
      });
      expect(
        await storage.claimRecurringSlot('nightly', next, new Date(next.getTime() + 60_000), null),
      ).toBeNull();
      expect((await storage.getRecurringJobs())[0].lastSlotUtc).toEqual(next);

      await storage.upsertRecurringJob({ ...def, cron: '*/5 * * * *', nextSlotUtc: slot }); // cron changed: reset
      expect((await storage.getRecurringJobs())[0].nextSlotUtc).toEqual(slot);
    });
  });

  describe('busy files and the event loop', () => {
    it('retries SQLITE_BUSY asynchronously while another connection holds the write lock', async () => {
      const patient = await createJobStorage({
        type: 'sqlite',
        database: db.file,
        autoCreateSchema: false,
        busyTimeoutMs: 5,
        transientRetry: { maxAttempts: 100, baseDelayMs: 5, maxDelayMs: 20 },
      });
      try {
        const { id } = await patient.enqueue({ queue: 'q' });
        db.raw.exec('BEGIN IMMEDIATE');
        let ticks = 0;
        const timer = setInterval(() => ticks++, 5);
        setTimeout(() => db.raw.exec('COMMIT'), 300);
        const started = Date.now();
        const jobs = await claim(patient);
        clearInterval(timer);
        expect(jobs.map((j) => j.id)).toEqual([id]);
        expect(Date.now() - started).toBeGreaterThanOrEqual(250);
        // The event loop kept running while the claim waited for the lock.
        expect(ticks).toBeGreaterThan(10);
      } finally {
        await patient.close();
      }
    });

    it('gives up with ChokaQStorageUnavailableError after the retry bound', async () => {
      const quick = await createJobStorage({
        type: 'sqlite',
        database: db.file,
        autoCreateSchema: false,
        transientRetry: { maxAttempts: 2, baseDelayMs: 1 },
      });
      db.raw.exec('BEGIN IMMEDIATE');
      try {
        await expect(quick.enqueue({ queue: 'q' })).rejects.toMatchObject({
          name: 'ChokaQStorageUnavailableError',
          retryable: true,
        });
      } finally {
        db.raw.exec('ROLLBACK');
        await quick.close();
      }
    });
  });
});

/** Runs the child fixture and returns the JSON it printed last. */
function runChild(file: string, mode: 'schema' | 'claim', queue: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [
        '-r',
        '@swc-node/register',
        join(__dirname, '../../../../../test/support/sqlite-child.fixture.ts'),
        file,
        mode,
        queue,
      ],
      { cwd: join(__dirname, '../../../../..'), timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`${error.message}\n${stderr}`));
        const line = stdout
          .trim()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .pop();
        resolve(JSON.parse(line ?? 'null'));
      },
    );
  });
}
