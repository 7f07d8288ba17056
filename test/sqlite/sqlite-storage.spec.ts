import type BetterSqlite3 from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { Pillar } from '../../libs/chokaq/src/interfaces/job-view.interface';
import {
  SQLITE_MIGRATIONS,
  sqliteSchemaScript,
} from '../../libs/chokaq/src/storage/sqlite/sqlite.schema';
import {
  jobQueriesStatements,
  listJobs,
  listWhere,
} from '../../libs/chokaq/src/storage/sqlite/sql';
import { encodeListCursor } from '../../libs/chokaq/src/validation/list-cursor';
import { assertListQuery } from '../../libs/chokaq/src/validation/validate-list';
import { claim, startJob } from '../contract/helpers';
import { dataSourceOf } from '../support/storage-internals';
import {
  TableName,
  TestDatabase,
  createTestSchema,
  openTestDatabase,
} from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { TS_LOADER } from '../support/env';

/*
 * What only the SQLite dialect has: one file shared by connections and OS processes, WAL, the
 * per-transaction `synchronous` of a claim, `PRAGMA data_version` wake-ups, the one connection a
 * borrowed DataSource shares with the application, busy files retried without blocking the event
 * loop, and counters and metric buckets grouped in JavaScript. What every dialect must do alike
 * (claims, moves, fencing, counters, reads, recurring slots) is the contract suite's
 * (`test/contract/`), which runs on SQLite too.
 */

describe('SQLite storage', () => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await openTestDatabase('sqlite');
  });
  afterEach(() => db.close());

  const rows = (table: TableName, where = '1 = 1', params: unknown[] = []) =>
    db.query(`SELECT * FROM ${db.table(table)} WHERE ${where}`, params);

  describe('the file and the connection', () => {
    it('creates every table under the prefix, records every version, runs in WAL mode, and ensureSchema is idempotent', async () => {
      await db.storage.ensureSchema();
      await db.storage.ensureSchema();
      const tables = (
        await db.sql<{ name: string }>(
          `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`,
        )
      ).map((t) => t.name);
      const logical: TableName[] = [
        'hot',
        'archive',
        'dlq',
        'stats',
        'buckets',
        'queues',
        'recurring',
        'migrations',
        'workers',
        'attempts',
      ];
      for (const t of logical) expect(tables).toContain(db.table(t));
      expect(tables).toContain(`${db.schema}row_counts`);
      expect(tables).not.toContain(`${db.schema}metric_buckets_next`);
      expect(
        await db.query(`SELECT version FROM ${db.table('migrations')} ORDER BY version`),
      ).toEqual(SQLITE_MIGRATIONS.map((m) => ({ version: m.version })));
      expect(await db.sql('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
      expect(sqliteSchemaScript(db.schema)).toContain(
        `CREATE UNIQUE INDEX IF NOT EXISTS ${db.schema}jobs_hot_idempotency_ux`,
      );
    });

    it('a claim commits with synchronous = NORMAL and restores the connection setting', async () => {
      const handle = (
        dataSourceOf(db.storage).driver as unknown as { databaseConnection: BetterSqlite3.Database }
      ).databaseConnection;
      const level = () => Number(handle.pragma('synchronous', { simple: true }));
      // A temporary trigger on the storage's own connection records the level the claim ran under.
      handle.exec('CREATE TEMP TABLE sync_seen (level INTEGER)');
      handle.exec(
        `CREATE TEMP TRIGGER sync_probe AFTER UPDATE OF status ON main.${db.table('hot')} ` +
          'BEGIN INSERT INTO sync_seen SELECT synchronous FROM pragma_synchronous; END',
      );
      const seen = () => handle.prepare('SELECT level FROM sync_seen').pluck().all();
      await db.storage.enqueueMany([{ queue: 'sync' }, { queue: 'sync' }, { queue: 'sync' }]);
      const request = {
        workerId: 'w',
        leaseId: 'l-1',
        limit: 1,
        handled: { queues: ['sync'], types: [] },
      };
      expect(level()).toBe(2); // FULL, SQLite's default
      expect(await db.storage.fetchNextBatch(request)).toHaveLength(1);
      expect(seen()).toEqual([1]);
      expect(level()).toBe(2);
      // Other writes keep the connection's level.
      expect(
        await db.storage.release([
          {
            id: (await db.storage.fetchNextBatch({ ...request, leaseId: 'l-2' }))[0].id,
            workerId: 'w',
            leaseId: 'l-2',
          },
        ]),
      ).toBe(1);
      expect(seen()).toEqual([1, 1, 2]);
      // An application's weaker setting is left alone.
      handle.pragma('synchronous = OFF');
      expect(await db.storage.fetchNextBatch({ ...request, leaseId: 'l-3' })).toHaveLength(1);
      expect(seen()).toEqual([1, 1, 2, 0]);
      expect(level()).toBe(0);
      handle.exec('DROP TRIGGER temp.sync_probe');
    });

    it('uses the partial pending index for the claim and the active index for budgets', async () => {
      const plan = async (sql: string) =>
        (await db.sql<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`))
          .map((r) => r.detail)
          .join('\n');
      const hot = db.table('hot');
      expect(
        await plan(
          `SELECT id FROM ${hot} WHERE status = 0 AND queue = 'q' ORDER BY priority DESC, COALESCE(scheduled_at_utc, enqueued_at_utc), id LIMIT 5`,
        ),
      ).toContain('jobs_hot_pending_ix');
      expect(
        await plan(`SELECT COUNT(*) FROM ${hot} WHERE queue = 'q' AND status IN (1, 2)`),
      ).toContain('jobs_hot_active_ix');
    });

    it("the queue stats and queue health read each queue's pending rows in the pending index, statistics or not", async () => {
      const hot = db.table('hot');
      // 20 queues of pending rows, a few due later, and one Fetched row per queue.
      await db.sql(
        `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 4000)
         INSERT INTO ${hot} (id, queue, type, payload, priority, status, attempt_count,
           scheduled_at_utc, created_at_utc, enqueued_at_utc, last_updated_utc)
         SELECT printf('%08d', n), 'q' || (n % 20), 't', '{}', n % 3, CASE WHEN n <= 20 THEN 1 ELSE 0 END, 0,
           CASE WHEN n % 10 = 0 THEN 9999999999999 END, n, n, n FROM g`,
      );
      const sql = jobQueriesStatements(db.schema);
      const plans = async () =>
        Promise.all(
          [sql.getQueueStatsHot, sql.getQueueHealth].map(async (statement) =>
            (await db.sql<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`))
              .map((r) => r.detail)
              .filter((d) => d.includes(`${hot} USING`)),
          ),
        );
      const pending = `${db.schema}jobs_hot_pending_ix`;
      for (const analysed of [false, true]) {
        if (analysed) await db.sql('ANALYZE');
        const [stats, health] = await plans();
        // Pending counts: the pending index alone (it covers them); Fetched and Processing
        // through the active index.
        expect(stats).toEqual([
          expect.stringMatching(new RegExp(`SCAN ${hot} USING COVERING INDEX ${pending}$`)),
          expect.stringContaining(`USING INDEX ${db.schema}jobs_hot_active_ix`),
        ]);
        // Due rows and their waits: the pending index, whose entries hold the due time.
        expect(health).toContainEqual(expect.stringMatching(new RegExp(`USING INDEX ${pending}$`)));
        expect(
          health.filter((d) => d.includes('queue_enqueued_ix') && !d.includes('COVERING')),
        ).toEqual([]);
      }
    });

    it("a job's audit entries and the queues' recent outcomes read their own range, statistics or not", async () => {
      const audit = db.table('audit');
      const buckets = db.table('buckets');
      // 5,000 audit entries over 1,000 targets; 4 hours of buckets for 20 queues and 4 outcomes.
      await db.sql(
        `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 5000)
         INSERT INTO ${audit} (id, at_utc, actor, action, target)
         SELECT printf('%08d', n), n, 'ops', 'job.cancel', 'job-' || (n % 1000) FROM g`,
      );
      await db.sql(
        `WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < 240 * 80 - 1)
         INSERT INTO ${buckets} (bucket_utc, queue, outcome, failure_reason, completed_count)
         SELECT (n / 80) * 60000, 'q' || (n % 20), (n / 20) % 4, -1, 1 FROM g`,
      );
      const sql = jobQueriesStatements(db.schema);
      const plan = async (statement: string, params: Record<string, unknown>) =>
        (await db.sql<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, [params])).map(
          (r) => r.detail,
        );
      const page = { at: null, id: null, actor: null, action: null, from: null, to: null };
      for (const analysed of [false, true]) {
        if (analysed) await db.sql('ANALYZE');
        // The target's range of its index, already newest first: no sort, no walk of the log.
        const byTarget = await plan(sql.getAuditLogByTarget, {
          ...page,
          limit: 51,
          target: 'job-7',
        });
        expect(byTarget).toEqual([
          `SEARCH ${audit} USING INDEX ${db.schema}audit_log_target_ix (target=?)`,
        ]);
        // The window's range of the buckets' primary key (bucket_utc first), not a pass over
        // every bucket in the queue index's order.
        const reads = (await plan(sql.getQueueOutcomes, { minutes: 5 })).filter((d) =>
          d.includes(` b `),
        );
        expect(reads).toEqual([
          expect.stringMatching(/^SEARCH b USING INDEX \S+ \(bucket_utc>\?\)$/),
        ]);
      }
    });

    it('works on :memory:', async () => {
      const memory = await createJobStorage({ type: 'sqlite', database: ':memory:' });
      try {
        const { id } = await memory.enqueue({ queue: 'q' });
        expect((await claim(memory, 'q', 10)).rows.map((r) => r.id)).toEqual([id]);
      } finally {
        await memory.close();
      }
    });

    it('wakes a subscriber when another connection commits, not on its own commits; not on :memory: or with dataVersionPollMs 0', async () => {
      const watcher = await db.openAnother({ dataVersionPollMs: 10 });
      const heard: Array<string | undefined> = [];
      const unsubscribe = await watcher.subscribe((queue) => heard.push(queue));
      try {
        expect(unsubscribe).not.toBeNull();
        await watcher.enqueue({ queue: 'own' });
        // An absence can only be observed for a while: five poll intervals.
        await new Promise((r) => setTimeout(r, 50));
        expect(heard).toEqual([]);
        await db.storage.enqueue({ queue: 'elsewhere' });
        await waitFor('the wake-up', () => heard.length === 1);
        expect(heard).toEqual([undefined]);
      } finally {
        await unsubscribe?.();
      }
      const memory = await createJobStorage({ type: 'sqlite', database: ':memory:' });
      const off = await db.openAnother({ dataVersionPollMs: 0 });
      try {
        expect(await memory.subscribe(() => undefined)).toBeNull();
        expect(await off.subscribe(() => undefined)).toBeNull();
      } finally {
        await memory.close();
      }
    });

    it('wakes a subscriber on a change of the WAL file, long before its data_version poll, and still not on its own commits', async () => {
      // A poll of a minute: only the watch on the WAL file can wake it within the bounded wait.
      const watcher = await db.openAnother({ dataVersionPollMs: 60_000 });
      const heard: Array<string | undefined> = [];
      const unsubscribe = await watcher.subscribe((queue) => heard.push(queue));
      try {
        await db.storage.enqueue({ queue: 'elsewhere' });
        await waitFor('the wake-up from the file watch', () => heard.length === 1, {
          timeoutMs: 5_000,
        });
        await watcher.enqueue({ queue: 'own' });
        await db.storage.enqueue({ queue: 'elsewhere-again' });
        await waitFor('the second wake-up', () => heard.length >= 2, { timeoutMs: 5_000 });
        // Its own commit was read as no change: one call per foreign commit, none for its own.
        expect(heard).toEqual([undefined, undefined]);
      } finally {
        await unsubscribe?.();
      }
    });

    it("enqueue in the caller's transaction: a ChokaQ call on the same connection waits for that transaction, without deadlock", async () => {
      const dataSource = await db.openDataSource();
      const shared = await createJobStorage({
        dataSource,
        schema: db.schema,
        autoCreateSchema: false,
      });
      try {
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
        const pending = shared.getSummary();
        await runner.query(`SELECT 1`);
        await runner.commitTransaction();
        expect((await pending).pending).toBe(2);
        for (const r of many) expect((await shared.getJob(r.id))?.pillar).toBe('hot');
        await runner.release();
      } finally {
        await shared.close();
      }
    });
  });

  describe('counters and metric buckets, grouped in JavaScript', () => {
    it('one bucket row per queue, outcome and reason in the current minute; durations counted, summed and maxed', async () => {
      const [first, second] = [await startJob(db.storage, 'q'), await startJob(db.storage, 'q')];
      const other = await startJob(db.storage, 'a');
      const done = await db.storage.archiveSucceeded([
        { ...first, durationMs: 10 },
        { ...second, durationMs: 30.4 },
        { ...other, durationMs: 5 },
      ]);
      expect(done).toHaveLength(3);
      const [succeeded] = await rows('stats', 'queue = ?', ['q']);
      expect(succeeded).toMatchObject({ succeeded_total: 2 });
      expect(Number(succeeded.last_activity_utc)).toBeGreaterThan(0);
      const buckets = await rows('buckets', 'queue = ? AND outcome = 0', ['q']);
      expect(buckets).toEqual([
        expect.objectContaining({
          outcome: 0,
          failure_reason: -1,
          completed_count: 2,
          duration_count: 2,
          total_duration_ms: 40,
          max_duration_ms: 30,
        }),
      ]);
      expect(Number(buckets[0].bucket_utc) % 60_000).toBe(0);
      // The two starts of 'q' (claim, then markAsProcessing), in the start row with their lag.
      expect(await rows('buckets', 'queue = ? AND outcome = 4', ['q'])).toEqual([
        expect.objectContaining({ failure_reason: -1, completed_count: 2, lag_count: 2 }),
      ]);

      const late = await startJob(db.storage, 'dlq');
      await db.storage.moveToDlq(late, {
        reason: FailureReason.Timeout,
        error: 'late',
        durationMs: 12,
      });
      const { id } = await db.storage.enqueue({ queue: 'dlq' });
      await db.storage.moveToDlq({ id }, { reason: FailureReason.Cancelled, error: 'admin' });
      expect(
        await db.query(
          `SELECT outcome, failure_reason, completed_count, max_duration_ms FROM ${db.table('buckets')} WHERE queue = ? AND outcome IN (1, 2) ORDER BY outcome`,
          ['dlq'],
        ),
      ).toEqual([
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
      expect((await rows('stats', 'queue = ?', ['dlq']))[0]).toMatchObject({
        failed_total: 1,
        cancelled_total: 1,
      });
    });
  });

  describe('list pages', () => {
    /** The statement and parameters a list call runs, as the storage builds them. */
    function listStatement(pillar: Pillar, query: object) {
      const request = assertListQuery(pillar, query);
      const where = listWhere(request as never);
      const table = db.table(pillar);
      return {
        sql: listJobs(table, request, where),
        params: { ...where.indexed.params, limit: request.limit + 1 },
      };
    }
    const cursor = (pillar: Pillar) =>
      encodeListCursor(pillar, 'newest', { at: '2026-01-02T03:04:05.678Z', id: randomUUID() });

    it.each<[string, Pillar, object, string]>([
      ['the first active page', 'hot', {}, 'jobs_hot_enqueued_ix'],
      [
        'a deep active page of a queue',
        'hot',
        { filter: { queue: 'q' }, cursor: cursor('hot') },
        'jobs_hot_queue_enqueued_ix',
      ],
      ['a deep archive page', 'archive', { cursor: cursor('archive') }, 'jobs_archive_finished_ix'],
      ['an archive page of a type', 'archive', { filter: { type: 't' } }, 'jobs_archive_type_ix'],
      [
        'a deep DLQ page of a queue',
        'dlq',
        { filter: { queue: 'q' }, cursor: cursor('dlq') },
        'jobs_dlq_queue_ix',
      ],
      [
        'a deep DLQ page of a reason',
        'dlq',
        { filter: { reason: 6 }, cursor: cursor('dlq') },
        'jobs_dlq_reason_ix',
      ],
      [
        'a deep DLQ search',
        'dlq',
        { filter: { search: 'x' }, cursor: cursor('dlq') },
        'jobs_dlq_failed_ix',
      ],
    ])(
      '%s reads its index in order, from the cursor on (a row-value range)',
      async (_label, pillar, query, index) => {
        const { sql, params } = listStatement(pillar, query);
        const plan = (await db.sql<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, [params])).map(
          (r) => r.detail,
        );
        const read = plan.filter((d) => d.includes(db.table(pillar)));
        expect(read).toEqual([expect.stringContaining(`USING INDEX ${db.schema}${index}`)]);
        if ('cursor' in query) expect(read[0]).toMatch(/\(\w+_at_utc,id\)<\(\?,\?\)/);
        // No sort of the table: at most the page itself (a bounded scan orders its few rows by rank).
        expect(plan.filter((d) => /TEMP B-TREE/.test(d)).length).toBeLessThanOrEqual(
          'search' in ((query as { filter?: object }).filter ?? {}) ? 1 : 0,
        );
      },
    );

    it('reads the payload only for its length: octet_length skips its content (OPFLAG_BYTELENARG)', async () => {
      for (const pillar of ['hot', 'archive', 'dlq'] as const) {
        const { sql, params } = listStatement(pillar, { filter: { queue: 'q' } });
        const ops = await db.sql<{ opcode: string; p1: number; p2: number; p5: number }>(
          `EXPLAIN ${sql}`,
          [params],
        );
        const columns = await db.sql<{ cid: number; name: string }>(
          `SELECT cid, name FROM pragma_table_info('${db.table(pillar)}')`,
        );
        const payload = columns.find((c) => c.name === 'payload')!.cid;
        // The table's cursor: the one its OpenRead opened on the table's root page.
        const [{ rootpage }] = await db.sql<{ rootpage: number }>(
          `SELECT rootpage FROM sqlite_master WHERE name = '${db.table(pillar)}'`,
        );
        const cursors = new Set(
          ops.filter((o) => o.opcode === 'OpenRead' && o.p2 === rootpage).map((o) => o.p1),
        );
        const reads = ops.filter(
          (o) => o.opcode === 'Column' && cursors.has(o.p1) && o.p2 === payload,
        );
        expect(reads.length).toBeGreaterThan(0);
        // 0xc0: OP_Column is used only for octet_length(), so the value's bytes are not loaded.
        expect(reads.map((o) => o.p5 & 0xc0)).toEqual(reads.map(() => 0xc0));
      }
    });
  });

  describe('other OS processes on the same file', () => {
    it('lets 4 processes run ensureSchema on one new file at once', async () => {
      const fresh = createTestSchema('sqlite');
      try {
        const outputs = await Promise.all(
          [1, 2, 3, 4].map(() => runChild(fresh.file, 'schema', 'q')),
        );
        for (const out of outputs) expect(out).toEqual({ ok: true });
        expect(await fresh.count('migrations')).toBe(SQLITE_MIGRATIONS.length);
      } finally {
        await fresh.close();
      }
    });

    it('never gives one job to two claimers across OS processes', async () => {
      await db.storage.enqueueMany(Array.from({ length: 120 }, () => ({ queue: 'mp' })));
      const outputs = await Promise.all([1, 2, 3].map(() => runChild(db.file, 'claim', 'mp')));
      const ids = outputs.flatMap((o) => (o as { claimed: string[] }).claimed);
      expect(ids).toHaveLength(120);
      expect(new Set(ids).size).toBe(120);
    });
  });

  describe('busy files and the event loop', () => {
    it('retries SQLITE_BUSY asynchronously while another connection holds the write lock', async () => {
      const patient = await db.openAnother({
        busyTimeoutMs: 5,
        transientRetry: { maxAttempts: 100, baseDelayMs: 5, maxDelayMs: 20 },
      });
      const { id } = await patient.enqueue({ queue: 'q' });
      await db.sql('BEGIN IMMEDIATE');
      let ticks = 0;
      const timer = setInterval(() => ticks++, 5);
      const commit = new Promise((resolve) => setTimeout(resolve, 300)).then(() =>
        db.sql('COMMIT'),
      );
      const started = Date.now();
      const claimed = await claim(patient, 'q', 10);
      clearInterval(timer);
      await commit;
      expect(claimed.rows.map((r) => r.id)).toEqual([id]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      // The event loop kept running while the claim waited for the lock.
      expect(ticks).toBeGreaterThan(10);
    });

    it('gives up with ChokaQStorageUnavailableError after the retry bound', async () => {
      const quick = await db.openAnother({ transientRetry: { maxAttempts: 2, baseDelayMs: 1 } });
      await db.sql('BEGIN IMMEDIATE');
      try {
        await expect(quick.enqueue({ queue: 'q' })).rejects.toMatchObject({
          name: 'ChokaQStorageUnavailableError',
          retryable: true,
        });
      } finally {
        await db.sql('ROLLBACK');
      }
    });
  });
});

/** Runs the child fixture and returns the JSON it printed last. */
function runChild(file: string, mode: 'schema' | 'claim', queue: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['-r', TS_LOADER, join(__dirname, 'sqlite-child.fixture.ts'), file, mode, queue],
      { cwd: join(__dirname, '..', '..'), timeout: 60_000 },
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
