import { Client } from 'pg';
import type { ListRequest } from '../../libs/chokaq/src/validation/validate-list';
import { listJobsQuery } from '../../libs/chokaq/src/storage/postgres/sql/lists';
import { PG_URL } from '../support/env';
import { createTestSchema, describePostgres } from '../support/test-database';
import { planNodes, planOf } from '../support/pg-plan';

const PAGE = 50;
/** Rows of two quiet queues, in finish order (as an Archive is appended), then a busy queue's. */
const QUIET = 40_000;
const BUSY = 10_000;

/**
 * A filtered page of the Archive or the DLQ reads its filter's index, whatever the newest rows
 * are. Ordered by its time key alone, such a page was planned as a backward walk of the time
 * index that filters each row, priced as if the filter's rows were spread evenly over time (and
 * cheap, the heap being in time order). When the newest rows all belonged to another queue, that
 * walk read every one of them first: beside 10,000,000 archived rows whose newest 40,000 were a
 * busy queue's, the first page of another queue read 40,182 rows in 620 ms (bench `scale`).
 *
 * Here: 40,000 rows over two queues in time order, then the 10,000 newest of a third, analysed;
 * the first page and a page after a cursor, filtered by queue, by queue and type, and (DLQ) by
 * reason, each read at most twice the page's rows of the table.
 */
describePostgres('PostgreSQL lists: a filtered page reads its own index', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 1 } });
  let client: Client;

  beforeAll(async () => {
    await (await db.openStorage()).close();
    const rows = (n: number, from: number, queue: string) =>
      `SELECT gen_random_uuid()::text AS id, ${queue} AS queue, ${queue} || '.send' AS type,
              now() - interval '1 day' + (g + ${from}) * interval '1 second' AS at, g
       FROM generate_series(1, ${n}) g`;
    for (const [from, n, queue] of [
      [0, QUIET, `'q' || (g % 2)`],
      [QUIET, BUSY, `'busy'`],
    ] as const) {
      await db.sql(
        `INSERT INTO ${db.table('archive')} (id, queue, type, payload, priority, attempt_count,
           created_at_utc, enqueued_at_utc, finished_at_utc, payload_version)
         SELECT id, queue, type, '{}', 10, 1, at, at, at, 1 FROM (${rows(n, from, queue)}) r`,
      );
      await db.sql(
        `INSERT INTO ${db.table('dlq')} (id, queue, type, payload, priority, status, attempt_count,
           created_at_utc, enqueued_at_utc, failure_reason, failed_at_utc, payload_version)
         SELECT id, queue, type, '{}', 10, 4, 1, at, at,
                CASE WHEN queue = 'busy' THEN 7 ELSE g % 3 END, at, 1
         FROM (${rows(n, from, queue)}) r`,
      );
    }
    await db.sql(`VACUUM ANALYZE ${db.table('archive')}`);
    await db.sql(`VACUUM ANALYZE ${db.table('dlq')}`);
    client = new Client({ connectionString: PG_URL, options: '-c jit=off' });
    await client.connect();
  }, 120_000);

  afterAll(async () => {
    await client?.end();
    await db.close();
  });

  /** The page's rows, and how many rows of the pillar's table its plan read (every scan node). */
  async function page(request: ListRequest<object>): Promise<{ ids: string[]; read: number }> {
    const { text, values } = listJobsQuery(`"${db.schema}"`, request);
    const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
    const table = request.pillar === 'archive' ? 'jobs_archive' : 'jobs_dlq';
    const read = planNodes(planOf(rows))
      .filter((n) => n['Relation Name'] === table)
      .reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0), 0);
    const result = await client.query<{ id: string }>(text, values);
    return { ids: result.rows.map((r) => r.id), read };
  }

  function request(pillar: 'archive' | 'dlq', filter: object): ListRequest<object> {
    return { pillar, filter, limit: PAGE, order: 'newest', scanBound: null, after: null };
  }

  it.each<[string, 'archive' | 'dlq', object]>([
    ['Archive by queue', 'archive', { queue: 'q1' }],
    ['Archive by queue and type', 'archive', { queue: 'q1', type: 'q1.send' }],
    ['Archive by type', 'archive', { type: 'q1.send' }],
    ['DLQ by queue', 'dlq', { queue: 'q1' }],
    ['DLQ by reason', 'dlq', { reason: 1 }],
  ])('%s: the first page and the next read their own index', async (_name, pillar, filter) => {
    const first = await page(request(pillar, filter));
    expect(first.ids).toHaveLength(PAGE + 1);
    expect(first.read).toBeLessThanOrEqual(2 * (PAGE + 1));
    // The next page, from the cursor the first one ends at: still a range of the same index.
    const [last] = await client
      .query<{ at: string }>(
        `SELECT to_char(${pillar === 'archive' ? 'finished_at_utc' : 'failed_at_utc'} AT TIME ZONE 'UTC',
                      'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at
       FROM ${db.table(pillar)} WHERE id = $1`,
        [first.ids[PAGE - 1]],
      )
      .then((r) => r.rows);
    const next = await page({
      ...request(pillar, filter),
      after: { at: last.at, id: first.ids[PAGE - 1] },
    } as ListRequest<object>);
    expect(next.ids[0]).toBe(first.ids[PAGE]);
    expect(next.read).toBeLessThanOrEqual(2 * (PAGE + 1));
  });
});
