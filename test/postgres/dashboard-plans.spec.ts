import { Client } from 'pg';
import * as SQL from '../../libs/chokaq/src/storage/postgres/sql';
import { ERROR_LINE_PREFIX } from '../../libs/chokaq/src/storage/shared/error-family';
import {
  TOP_ERRORS_WINDOW_MS,
  TOP_ERRORS_WINDOW_ROWS,
} from '../../libs/chokaq/src/validation/limits';
import { PG_URL } from '../support/env';
import { createTestSchema, describePostgres } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { type PlanNode, planNodes, planOf } from '../support/pg-plan';

/** Rows a set of plan nodes produced, over all their loops. */
function rowsOf(list: PlanNode[]): number {
  return list.reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
}

const ARCHIVED = 200_000;
const DEAD = 50_000;
const PENDING = 20_000;
const QUEUES = 20;
/** Days of one-minute buckets, per queue, for 3 outcomes. */
const BUCKET_DAYS = 3;
/** Audit entries, over this many job ids as targets (and a few long filter targets). */
const AUDIT_ENTRIES = 100_000;
const AUDIT_TARGETS = 20_000;

/**
 * The dashboard reads on a database of some size, by their PostgreSQL plans (EXPLAIN ANALYZE):
 * the summary and the queue stats never read the archive or the DLQ; the queue stats count and
 * queue health aggregate each queue's pending rows by an index-only scan of the claim's pending
 * index, and health reads the buckets through their queue index; a one-queue throughput series
 * reads only that queue's buckets of the range, and every series groups buckets by their own key;
 * the top errors read at most the window's bound, newest first, through the DLQ's failure-time
 * index; the queues' recent outcomes read the window's buckets only; a job's audit entries are
 * read through the target index (schema version 9), not by a walk of the log.
 */
describePostgres('PostgreSQL dashboard read plans', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
  let client: Client;
  let s: string;

  beforeAll(async () => {
    await db.openStorage();
    s = SQL.quoteSchema(db.schema);
    const t = db.table.bind(db);
    await db.sql(`
      INSERT INTO ${t('archive')} (id, queue, type, payload, priority, attempt_count,
        created_at_utc, enqueued_at_utc, finished_at_utc, duration_ms)
      SELECT gen_random_uuid()::text, 'q' || (g % ${QUEUES}), 't', '{}', 10, 1,
             now() - (g || ' s')::interval, now() - (g || ' s')::interval,
             now() - (g || ' s')::interval, g % 1000
      FROM generate_series(1, ${ARCHIVED}) g`);
    // DLQ rows spread over four days (older than the 24-hour window included).
    await db.sql(`
      INSERT INTO ${t('dlq')} (id, queue, type, payload, priority, status, attempt_count,
        created_at_utc, enqueued_at_utc, failure_reason, error_details, failed_at_utc)
      SELECT gen_random_uuid()::text, 'q' || (g % ${QUEUES}), 't', '{}', 10, 4, 3, now(), now(),
             g % 3, 'Error: job ' || g || ' failed after ' || (g % 977) || ' ms' || chr(10) || '  at x',
             now() - ((g * 7) || ' s')::interval
      FROM generate_series(1, ${DEAD}) g`);
    await db.sql(`
      INSERT INTO ${t('hot')} (id, queue, type, payload, priority, status, attempt_count,
        created_at_utc, enqueued_at_utc, last_updated_utc)
      SELECT gen_random_uuid()::text, 'q' || (g % ${QUEUES}), 't', '{}', g % 5, 0, 0,
             now() - (g || ' ms')::interval, now() - (g || ' ms')::interval, now()
      FROM generate_series(1, ${PENDING}) g`);
    await db.sql(`
      INSERT INTO ${t('queues')} (name, last_updated_utc)
      SELECT 'q' || g, now() FROM generate_series(0, ${QUEUES - 1}) g`);
    await db.sql(`
      INSERT INTO ${t('buckets')} (bucket_utc, queue, outcome, failure_reason, completed_count,
        duration_count, total_duration_ms, max_duration_ms, lag_count, lag_sum_ms, lag_max_ms)
      SELECT date_trunc('minute', now()) - (m || ' minutes')::interval, 'q' || q, o,
             -1, 10, 10, 100, 20, CASE WHEN o = 4 THEN 10 ELSE 0 END,
             CASE WHEN o = 4 THEN 50 ELSE 0 END, CASE WHEN o = 4 THEN 9 ELSE 0 END
      FROM generate_series(0, ${BUCKET_DAYS * 1440 - 1}) m, generate_series(0, ${QUEUES - 1}) q,
           (VALUES (0), (1), (4)) AS v(o)`);
    // Each job id is the target of 5 entries; every 100th entry is a bulk action by filter, whose
    // target (a filter's JSON) is longer than the index's key.
    await db.sql(`
      INSERT INTO ${t('audit')} (id, at_utc, actor, action, target, rows_affected)
      SELECT gen_random_uuid()::text, now() - (g || ' s')::interval, 'ops',
             CASE WHEN g % 100 = 0 THEN 'dlq.purge-by-filter' ELSE 'job.cancel' END,
             CASE WHEN g % 100 = 0 THEN '{"search":"' || repeat('x', 3000) || (g % 7) || '"}'
                  ELSE 'job-' || (g % ${AUDIT_TARGETS}) END, 1
      FROM generate_series(1, ${AUDIT_ENTRIES}) g`);
    client = new Client({ connectionString: PG_URL });
    await client.connect();
    // VACUUM as well: an index-only scan skips the heap only for pages the visibility map marks
    // all-visible, which autovacuum keeps so on a long-lived table (and would, here, later).
    for (const table of ['archive', 'dlq', 'hot', 'queues', 'buckets', 'audit'] as const) {
      await client.query(`VACUUM (ANALYZE) ${t(table)}`);
    }
    // VACUUM marks a page all-visible only when no open snapshot on the server may still need
    // its rows: a transaction of another suite running meanwhile leaves the hot table's pages
    // unmarked, and the planner then (rightly) prefers a bitmap scan to an index-only one. So
    // vacuum the hot table again until all its pages are marked, as autovacuum would in time.
    await waitFor(
      "every page of the hot table all-visible (no other session's snapshot holds it back)",
      async () => {
        await client.query(`VACUUM ${t('hot')}`);
        const { rows } = await client.query<{ marked: boolean }>(
          `SELECT relallvisible >= relpages AS marked FROM pg_class WHERE oid = $1::regclass`,
          [t('hot')],
        );
        return rows[0].marked;
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
  }, 180_000);

  afterAll(async () => {
    await client?.end();
    await db.close();
  });

  async function explain(sql: string, params: unknown[] = []): Promise<PlanNode[]> {
    const { rows } = await client.query(
      `EXPLAIN (ANALYZE true, COSTS false, TIMING false, FORMAT JSON) ${sql}`,
      params,
    );
    return planNodes(planOf(rows));
  }

  const on = (plan: PlanNode[], table: string) => plan.filter((n) => n['Relation Name'] === table);
  /** The indexes a plan reads (a bitmap index scan names its index but not its table). */
  const indexes = (plan: PlanNode[]) => plan.map((n) => n['Index Name']).filter(Boolean);

  it('getSummary and getQueueStats never read the archive or the DLQ', async () => {
    for (const plan of [
      await explain(SQL.getSummary(s), SQL.getSummaryParams(s)),
      await explain(SQL.getQueueStats(s)),
    ]) {
      expect(on(plan, 'jobs_archive')).toEqual([]);
      expect(on(plan, 'jobs_dlq')).toEqual([]);
    }
    const [row] = (await client.query(SQL.getSummary(s), SQL.getSummaryParams(s))).rows;
    // Analysed: the estimates are the counts (within the sampling of ANALYZE).
    expect(Number(row.archived)).toBeGreaterThan(ARCHIVED * 0.95);
    expect(Number(row.archived)).toBeLessThan(ARCHIVED * 1.05);
    expect(Number(row.dlq)).toBeGreaterThan(DEAD * 0.95);
    expect(Number(row.dlq)).toBeLessThan(DEAD * 1.05);
  });

  /**
   * The plan's reads of an index of the pending rows led by the queue (the claim's, or since
   * schema version 15 the active list's, whichever the planner finds cheaper): index-only, one
   * range per queue, no heap.
   */
  function pendingIndexOnly(plan: PlanNode[]): PlanNode[] {
    const hot = on(plan, 'jobs_hot');
    expect(hot.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    const pending = hot.filter((n) =>
      ['ix_jobs_hot_pending', 'ix_jobs_hot_queue_enqueued'].includes(n['Index Name'] ?? ''),
    );
    expect(pending).toEqual([expect.objectContaining({ 'Node Type': 'Index Only Scan' })]);
    // Once per queue, each time that queue's range only: every pending row once in all.
    expect(pending[0]['Actual Loops']).toBe(QUEUES);
    expect(rowsOf(pending)).toBeLessThanOrEqual(PENDING);
    expect(pending[0]['Heap Fetches']).toBe(0);
    return pending;
  }

  it("getQueueStats counts each queue's pending rows by an index-only scan of a pending-rows index", async () => {
    const plan = await explain(SQL.getQueueStats(s));
    expect(rowsOf(pendingIndexOnly(plan))).toBe(PENDING);
    // Fetched and Processing rows through the active index (none here).
    expect(indexes(plan)).toContain('ix_jobs_hot_active');
  });

  it("getQueueHealth aggregates each queue's due rows by an index-only scan of the claim's index (schema version 8), and reads its recent buckets", async () => {
    const plan = await explain(SQL.getQueueHealth(s));
    pendingIndexOnly(plan);
    const buckets = on(plan, 'metric_buckets');
    expect(buckets.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    // Six minutes of start rows per queue, not three days.
    expect(rowsOf(buckets)).toBeLessThanOrEqual(QUEUES * 6);
  });

  it("getQueueOutcomes reads the window's buckets only (a range of the primary key), in one statement for every queue", async () => {
    for (const minutes of [5, 60]) {
      const plan = await explain(SQL.getQueueOutcomes(s), [minutes]);
      const buckets = on(plan, 'metric_buckets');
      expect(buckets.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
      // (minutes + 1) one-minute buckets of every queue and seeded outcome (0, 1 and starts, which
      // the filter drops), not three days of them.
      const read = buckets.reduce(
        (sum, n) =>
          sum +
          ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1),
        0,
      );
      expect(read).toBeLessThanOrEqual((minutes + 1) * QUEUES * 3);
      expect(read).toBeGreaterThanOrEqual(minutes * QUEUES * 2);
    }
    const { rows } = await client.query(SQL.getQueueOutcomes(s), [5]);
    expect(rows).toHaveLength(QUEUES);
    // One window for every row, starting on a whole minute; outcomes 0 and 1 were seeded 10 per
    // bucket, so each queue counts 10 per seeded minute from the window's start on (6 minutes, or
    // 5 when the minute turned since the seed).
    const from = (rows[0].from_utc as Date).getTime();
    expect(from % 60_000).toBe(0);
    expect(rows.every((r) => (r.from_utc as Date).getTime() === from)).toBe(true);
    const [{ n }] = (
      await client.query(
        `SELECT count(DISTINCT bucket_utc) AS n FROM ${s}.metric_buckets WHERE bucket_utc >= $1`,
        [new Date(from)],
      )
    ).rows;
    expect(Number(n)).toBeGreaterThanOrEqual(5);
    expect(rows.map((r) => [Number(r.succeeded), Number(r.failed), Number(r.retried)])).toEqual(
      Array.from({ length: QUEUES }, () => [10 * Number(n), 10 * Number(n), 0]),
    );
  });

  it("getAuditLog by target reads that target's entries through its index, not the log", async () => {
    for (const target of ['job-42', `{"search":"${'x'.repeat(3000)}3"}`]) {
      const params = [null, null, null, null, null, null, 51, target];
      const plan = await explain(SQL.getAuditLog(s, true), params);
      const audit = on(plan, 'audit_log');
      expect(audit.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
      expect(indexes(plan)).toEqual(['ix_audit_log_target']);
      // The rows read are the target's (for a long target, the entries that share its key's 255
      // characters), a few of the 100,000: whether the planner then reads the index backwards or
      // sorts them is its choice by their number.
      const read = audit.reduce(
        (sum, n) => sum + (n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0),
        0,
      );
      expect(read).toBeLessThanOrEqual(AUDIT_ENTRIES / 100);
      const { rows } = await client.query(SQL.getAuditLog(s, true), params);
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((r) => r.target === target)).toBe(true);
    }
  });

  it("a one-queue throughput series reads only that queue's buckets of the range", async () => {
    const to = new Date();
    const from = new Date(Math.floor((to.getTime() - 86_400_000) / 60_000) * 60_000);
    const plan = await explain(SQL.getThroughputSeries(s, true, true), [from, to, 60_000, 'q3']);
    const buckets = on(plan, 'metric_buckets');
    expect(buckets.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    expect(indexes(plan)).toContain('ix_metric_buckets_queue');
    // 24 hours of one-minute buckets, three outcomes: 4,320 rows, of 259,200 in the table.
    expect(rowsOf(buckets)).toBeLessThanOrEqual(1_441 * 3);
  });

  it.each([
    ['one-minute steps, all queues', false, 60_000],
    ['hourly steps, all queues', false, 3_600_000],
    ['hourly steps, one queue', true, 3_600_000],
  ])(
    'a throughput series (%s) groups the buckets by their own key: the slot is computed per group, not per row',
    async (_label, queue, stepMs) => {
      const to = new Date();
      const from = new Date(Math.floor((to.getTime() - 86_400_000) / 60_000) * 60_000);
      const plan = await explain(
        SQL.getThroughputSeries(s, queue, stepMs === 60_000),
        queue ? [from, to, stepMs, 'q3'] : [from, to, stepMs],
      );
      const aggregates = plan.filter((n) => n['Node Type'] === 'Aggregate');
      // The aggregate that reads the buckets is the one whose child scans metric_buckets.
      const first = aggregates.filter((a) =>
        planNodes(a.Plans![0]).some((n) => n['Relation Name'] === 'metric_buckets'),
      );
      // EXPLAIN qualifies the keys or not, as the plan shape goes (every queue's: the first branch
      // of the union, the totals, names them).
      const keys = first.at(-1)!['Group Key']!.map((k) => k.replace(/^[bt]\./, ''));
      expect(keys).toEqual(['bucket_utc', 'outcome']);
      // A day of buckets, at most: every queue's, or one queue's through its index.
      const buckets = on(plan, 'metric_buckets');
      expect(rowsOf(buckets)).toBeLessThanOrEqual(1_441 * 3 * (queue ? 1 : QUEUES));
      if (queue) expect(indexes(plan)).toContain('ix_metric_buckets_queue');
    },
  );

  it('the top errors read at most the window, newest first, through an index of the DLQ', async () => {
    const [{ n }] = (
      await client.query(
        `SELECT count(*) AS n FROM ${s}.jobs_dlq WHERE failed_at_utc >= now() - interval '24 hours'`,
      )
    ).rows;
    const inWindow = Number(n);
    expect(inWindow).toBeGreaterThan(TOP_ERRORS_WINDOW_ROWS);
    for (const filter of [{}, { queue: 'q7' }]) {
      const top = SQL.getTopDlqErrorsQuery(s, filter);
      const plan = await explain(top.text, top.values);
      const dlq = on(plan, 'jobs_dlq');
      expect(dlq.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
      expect(indexes(plan).some((i) => /^ix_jobs_dlq_(failed|queue)$/.test(i!))).toBe(true);
      // At most the bound is returned, and never more than the window's rows are read (the
      // planner may read the failure-time index and filter the queue when that is cheaper).
      expect(rowsOf(dlq)).toBeLessThanOrEqual(TOP_ERRORS_WINDOW_ROWS);
      const read = dlq.reduce(
        (sum, x) => sum + ((x['Actual Rows'] ?? 0) + (x['Rows Removed by Filter'] ?? 0)),
        0,
      );
      expect(read).toBeLessThanOrEqual(inWindow);
    }
    // Without a filter: newest first, stopped at the bound.
    const params: unknown[] = [TOP_ERRORS_WINDOW_MS, TOP_ERRORS_WINDOW_ROWS];
    const plan = await explain(
      SQL.getTopDlqErrors(s, 'TRUE', '$1', '$2', ERROR_LINE_PREFIX),
      params,
    );
    const scan = on(plan, 'jobs_dlq')[0];
    expect(scan).toMatchObject({
      'Index Name': 'ix_jobs_dlq_failed',
      'Scan Direction': 'Backward',
      'Actual Rows': TOP_ERRORS_WINDOW_ROWS,
    });
  });
});
