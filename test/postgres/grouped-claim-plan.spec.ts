import { Client } from 'pg';
import {
  fetchNextGroupedBatch,
  fetchNextGroupedBatchParams,
  quoteSchema,
} from '../../libs/chokaq/src/storage/postgres/sql';
import { groupVisits } from '../../libs/chokaq/src/storage/shared/groups';
import { PG_URL } from '../support/env';
import { planNodes, planOf } from '../support/pg-plan';
import { createTestSchema, describePostgres } from '../support/test-database';

const GROUPS = 2_000;
const RUNNING = 500;
const START = 50;

/**
 * The grouped claim's running count per visited group reads only that group's active rows, also
 * when the statistics were gathered before anything ran (a backlog analysed as it was enqueued,
 * then drained by many workers: autovacuum analyses again only after a tenth of the table
 * changed). With an index of a queue's active rows beside one of a group's, the planner, told
 * that no row is active, took the queue's and filtered it by group: every visit read every
 * active row of the queue (500 here, 50 visits). One index of the active rows, by queue and
 * group (schema version 22), leaves it no such choice.
 */
describePostgres('PostgreSQL grouped claim plan: the running count of a group', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 2 } });
  let client: Client;

  beforeAll(async () => {
    await db.openStorage();
    const s = db.table.bind(db);
    await db.sql(`
      INSERT INTO ${s('hot')} (id, queue, type, payload, priority, status, attempt_count,
        group_key, created_at_utc, enqueued_at_utc, last_updated_utc)
      SELECT gen_random_uuid()::text, 'g', 't', '{}', 10, 0, 0,
             'tenant-' || lpad((n % ${GROUPS})::text, 5, '0'),
             now() - interval '1 hour', now() - interval '1 hour' + n * interval '1 ms', now()
      FROM generate_series(1, ${GROUPS * 3}) n`);
    await db.sql(
      `INSERT INTO ${s('queues')} (name, group_concurrency, last_updated_utc) VALUES ('g', 1000, now())`,
    );
    await db.sql(`ANALYZE ${s('hot')}`);
    // Then the workers start: 500 rows of the queue's last groups run (not analysed).
    await db.sql(`
      UPDATE ${s('hot')} SET status = 2, worker_id = 'w', lease_id = 'l', heartbeat_utc = now()
      WHERE id IN (SELECT id FROM ${s('hot')} WHERE group_key >= 'tenant-01000'
                   ORDER BY group_key LIMIT ${RUNNING})`);
    client = new Client({ connectionString: PG_URL });
    await client.connect();
  }, 120_000);

  afterAll(async () => {
    await client?.end();
    await db.close();
  });

  it('each visit counts its own group’s active rows, not the queue’s', async () => {
    const params = fetchNextGroupedBatchParams(
      { workerId: 'w2', leaseId: 'l2', handled: { queues: ['g'], types: [] } },
      'g',
      START,
      groupVisits(START),
    );
    await client.query('BEGIN');
    try {
      const { rows } = await client.query(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${fetchNextGroupedBatch(quoteSchema(db.schema))}`,
        params,
      );
      const nodes = planNodes(planOf(rows)).filter((n) => n['Relation Name'] === 'jobs_hot');
      // The walk visited 50 groups; no read of jobs_hot threw rows away by the hundred.
      const filtered = nodes.map((n) => n['Rows Removed by Filter'] ?? 0);
      expect(Math.max(...filtered)).toBeLessThan(10);
      const counts = nodes.filter((n) => (n['Index Cond'] ?? '').includes('group_key = '));
      expect(counts.length).toBeGreaterThan(0);
    } finally {
      await client.query('ROLLBACK');
    }
  });
});
