import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { Pillar } from '../../libs/chokaq/src/interfaces/job-view.interface';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { listJobs, listWhere, quoteSchema } from '../../libs/chokaq/src/storage/postgres/sql';
import { encodeListCursor } from '../../libs/chokaq/src/validation/list-cursor';
import { assertListQuery } from '../../libs/chokaq/src/validation/validate-list';
import { PG_URL } from '../support/env';
import { createTestSchema, describePostgres } from '../support/test-database';
import { type PlanNode, planNodes, planOf } from '../support/pg-plan';

const ARCHIVED = 200_000;
const DEAD = 100_000;
const QUEUES = 20;
/** "Deep": the page of 50 that ends at the 5,000th row (it starts after row 4,950). */
const DEEP = 4_950;

/**
 * Proof that every list page without a search term is an index range scan that reads about a
 * page of rows, at the first page and at a deep one, with and without a queue filter: never a
 * sequential scan of the archive or the DLQ, never a sort of the table. With 200,000 archived and
 * 100,000 dead jobs over 20 queues (bulk-seeded), after ANALYZE; plans taken with EXPLAIN ANALYZE
 * of the statement the storage runs, with the parameters it binds.
 */
describePostgres('PostgreSQL list plans', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
  let storage: JobStorage;
  let client: Client;

  beforeAll(async () => {
    storage = await db.openStorage();
    const t = db.table.bind(db);
    // Finish and failure times spread over a day, many sharing a millisecond with another row.
    await db.sql(`
      INSERT INTO ${t('archive')} (id, queue, type, payload, priority, attempt_count,
        created_at_utc, enqueued_at_utc, finished_at_utc, duration_ms)
      SELECT gen_random_uuid()::text, 'q' || (g % ${QUEUES}), 't' || (g % 7), '{"n":1}', 10, 1,
             now() - interval '1 day', now() - interval '1 day',
             now() - ((g / 3) || ' ms')::interval, g % 1000
      FROM generate_series(1, ${ARCHIVED}) g`);
    await db.sql(`
      INSERT INTO ${t('dlq')} (id, queue, type, payload, priority, status, attempt_count,
        created_at_utc, enqueued_at_utc, failure_reason, error_details, failed_at_utc)
      SELECT gen_random_uuid()::text, 'q' || (g % ${QUEUES}), 't' || (g % 7), '{"n":1}', 10, 4, 3,
             now() - interval '1 day', now() - interval '1 day', (g % 3) * 5,
             'Error: boom ' || g, now() - ((g / 3) || ' ms')::interval
      FROM generate_series(1, ${DEAD}) g`);
    await db.sql(`ANALYZE ${t('archive')}`);
    await db.sql(`ANALYZE ${t('dlq')}`);
    client = new Client({ connectionString: PG_URL });
    await client.connect();
  }, 180_000);

  afterAll(async () => {
    await client?.end();
    await db.close();
  });

  const KEY = { hot: 'enqueued_at_utc', archive: 'finished_at_utc', dlq: 'failed_at_utc' };

  /** The cursor a walk would hold after `rows` rows of `pillar` (newest first) matching `queue`. */
  async function cursorAfter(pillar: Pillar, rows: number, queue?: string): Promise<string> {
    const key = KEY[pillar];
    const [row] = await db.sql<{ at: string; id: string }>(
      `SELECT to_char(${key} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, id
       FROM ${db.table(pillar)} ${queue ? 'WHERE queue = $1' : ''}
       ORDER BY ${key} DESC, id COLLATE "C" DESC OFFSET ${rows - 1} LIMIT 1`,
      queue ? [queue] : [],
    );
    return encodeListCursor(pillar, 'newest', row);
  }

  /** EXPLAIN ANALYZE of the statement `storage.list…(query)` runs, with its parameters. */
  async function explain(pillar: Pillar, query: object): Promise<PlanNode[]> {
    const request = assertListQuery(pillar, query);
    const params: unknown[] = [];
    const where = listWhere(request as never, params);
    params.push(request.limit + 1);
    const sql = listJobs(quoteSchema(db.schema), request, where, `$${params.length}`);
    const { rows } = await client.query(
      `EXPLAIN (ANALYZE true, BUFFERS true, COSTS false, TIMING false, FORMAT JSON) ${sql}`,
      params,
    );
    return planNodes(planOf(rows));
  }

  /**
   * The plan reads `table` only through `index` and at most `maxRows` of its rows: an index scan
   * in list order, or (where the planner expects only a few rows, as at the end of a queue) a
   * bitmap scan of that index's range. Nothing is sorted but the page itself (at most
   * `limit + 2` rows).
   */
  function expectIndexRange(plan: PlanNode[], table: string, index: string, maxRows: number): void {
    expect(plan.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    const sorts = plan.filter((n) => /Sort/.test(n['Node Type']));
    expect(sorts.filter((n) => (n['Actual Rows'] ?? 0) > 52)).toEqual([]);
    const scans = plan.filter((n) => n['Relation Name'] === table);
    expect(scans).toHaveLength(1);
    const [scan] = scans;
    if (scan['Node Type'] === 'Bitmap Heap Scan') {
      expect(planNodes(scan).map((n) => [n['Node Type'], n['Index Name']])).toEqual([
        ['Bitmap Heap Scan', undefined],
        ['Bitmap Index Scan', index],
      ]);
    } else {
      expect([scan['Node Type'], scan['Index Name']]).toEqual([
        expect.stringMatching(/^Index( Only)? Scan$/),
        index,
      ]);
    }
    expect((scan['Actual Rows'] ?? 0) * (scan['Actual Loops'] ?? 1)).toBeLessThanOrEqual(maxRows);
  }

  it.each([
    ['archive', undefined, 'ix_jobs_archive_finished'],
    ['archive', 'q7', 'ix_jobs_archive_queue'],
    ['dlq', undefined, 'ix_jobs_dlq_failed'],
    ['dlq', 'q7', 'ix_jobs_dlq_queue'],
  ] as const)(
    '%s, queue %s: the first page and the page ending at row 5,000 are index range scans of %s',
    async (pillar, queue, index) => {
      const filter = queue ? { queue } : {};
      const table = pillar === 'archive' ? 'jobs_archive' : 'jobs_dlq';
      const first = await explain(pillar, { filter, limit: 50 });
      expectIndexRange(first, table, index, 51);
      const deep = await explain(pillar, {
        filter,
        limit: 50,
        cursor: await cursorAfter(pillar, DEEP, queue),
      });
      expectIndexRange(deep, table, index, 51);
      // The cursor is a row comparison on the index's keys (the queue's too, when the page is
      // one queue's: list-busy-queue.spec.ts says why; `<=` and the cursor's id left out, as
      // listWhere says why): one range, however deep.
      expect(deep.find((n) => n['Index Name'] === index)?.['Index Cond']).toMatch(
        queue
          ? /ROW\(\(queue\)::text, [a-z_]+, \(id\)::text\) <= ROW\(/
          : /ROW\([a-z_]+, \(id\)::text\) < ROW\(/,
      );
      // The storage call reads the same page the statement does.
      const page = await (pillar === 'archive' ? storage.listArchive : storage.listDlq).call(
        storage,
        { filter, limit: 50, cursor: await cursorAfter(pillar, DEEP, queue) },
      );
      expect(page.items).toHaveLength(50);
    },
  );

  it('filters by type and failure reason read their own indexes; oldest first reads them forwards', async () => {
    expectIndexRange(
      await explain('archive', { filter: { type: 't3' }, order: 'oldest' }),
      'jobs_archive',
      'ix_jobs_archive_type',
      51,
    );
    expectIndexRange(
      await explain('dlq', { filter: { reason: 5 }, cursor: await cursorAfter('dlq', DEEP) }),
      'jobs_dlq',
      'ix_jobs_dlq_reason',
      // The cursor's position comes from the unfiltered list: the range starts there.
      51,
    );
    const window = new Date(Date.now() - 3_600_000);
    expectIndexRange(
      await explain('archive', { filter: { queue: 'q3', from: window } }),
      'jobs_archive',
      'ix_jobs_archive_queue',
      51,
    );
  });

  it('the active list merges the Pending rows, read in list order from their partial index, with the few running rows', async () => {
    const hot = db.table('hot');
    // 30,000 Pending rows over the 20 queues, and 300 Fetched or Processing rows among them:
    // the list indexes hold only the Pending ones (schema version 15).
    await db.sql(`
      INSERT INTO ${hot} (id, queue, type, payload, priority, status, attempt_count, worker_id,
        lease_id, heartbeat_utc, created_at_utc, enqueued_at_utc, last_updated_utc)
      SELECT gen_random_uuid()::text, 'q' || (g % ${QUEUES}), 't', '{}', 10,
             CASE WHEN g % 100 = 0 THEN 2 WHEN g % 100 = 1 THEN 1 ELSE 0 END, 0,
             CASE WHEN g % 100 < 2 THEN 'w' END, CASE WHEN g % 100 < 2 THEN 'l' END,
             CASE WHEN g % 100 = 0 THEN now() END, now(), now() - ((g / 3) || ' ms')::interval, now()
      FROM generate_series(1, 30000) g`);
    await db.sql(`ANALYZE ${hot}`);
    for (const filter of [{}, { queue: 'q7' }]) {
      for (const query of [
        { filter, limit: 50 },
        { filter, limit: 50, order: 'oldest' },
        { filter, limit: 50, cursor: await cursorAfter('hot', 1_000, filter.queue) },
      ]) {
        const plan = await explain('hot', query);
        expect(plan.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
        expect(plan.map((n) => n['Node Type'])).toContain('Merge Append');
        const index = filter.queue ? 'ix_jobs_hot_queue_enqueued' : 'ix_jobs_hot_enqueued';
        const pending = plan.filter((n) => n['Index Name'] === index);
        expect(pending).toHaveLength(1);
        expect(pending[0]['Actual Rows']).toBeLessThanOrEqual(51);
        // The running rows come through the index of the running rows, and only they are sorted.
        expect(plan.find((n) => n['Index Name'] === 'ix_jobs_hot_active')).toBeDefined();
        const sorted = plan.filter((n) => n['Node Type'] === 'Sort');
        expect(sorted.every((n) => (n['Actual Rows'] ?? 0) <= 51)).toBe(true);
      }
    }
    // The list reads the rows of both parts in one order: Pending and running rows interleave.
    const page = await storage.listActive({ limit: 200 });
    expect(new Set(page.items.map((item) => item.status)).size).toBeGreaterThan(1);
    const keys = page.items.map((item) => item.enqueuedAtUtc!.getTime());
    expect(keys).toEqual([...keys].sort((a, b) => b - a));
    // A status filter reads its part only.
    const running = await explain('hot', { filter: { status: 2 }, limit: 50 });
    expect(running.map((n) => n['Node Type'])).not.toContain('Merge Append');
    expect(running.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
  });

  it('a search reads at most MAX_LIST_SCAN + 1 rows, in index order, and no other', async () => {
    const plan = await explain('dlq', { filter: { search: 'no such text' } });
    expectIndexRange(plan, 'jobs_dlq', 'ix_jobs_dlq_failed', 10_001);
    const read = plan.find((n) => n['Index Name'] === 'ix_jobs_dlq_failed')!;
    expect(read['Actual Rows']).toBe(10_001);
  });

  it('a page of jobs with 1 MB payloads reads none of them (octet_length reads the TOAST pointer)', async () => {
    const queue = 'big';
    // Incompressible, so each is stored out of line in about 130 TOAST pages.
    await storage.enqueueMany(
      Array.from({ length: 20 }, () => ({
        queue,
        payload: { blob: randomBytes(700_000).toString('base64') },
      })),
    );
    const plan = await explain('hot', { filter: { queue } });
    const blocks = plan[0]['Shared Hit Blocks']! + plan[0]['Shared Read Blocks']!;
    // Reading the payloads would touch 20 × ~130 TOAST blocks.
    expect(blocks).toBeLessThan(100);
    const page = await storage.listActive({ filter: { queue } });
    expect(page.items).toHaveLength(20);
    expect(page.items[0].payloadBytes).toBeGreaterThan(930_000);
  }, 60_000);
});
