import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { fetchNextBatch, quoteSchema } from '../../libs/chokaq/src/storage/postgres/sql';
import { PG_URL } from '../support/env';
import { createTestSchema, describePostgres } from '../support/test-database';
import { planNodes, planOf } from '../support/pg-plan';

/** A node of `EXPLAIN (FORMAT JSON)` output. */
/**
 * Jobs with equal priority and due time are claimed by id, never by where their rows happen to lie
 * in the heap. A B-tree breaks ties between equal keys by heap position (TID), and a row moves when
 * it is updated without room on its page or lands in free space left by deleted rows, so an index
 * without `id` gives physical order, not enqueue order.
 */
describePostgres('PostgreSQL claim: ties by id', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
  let storage: JobStorage;

  beforeAll(async () => {
    storage = await db.openStorage();
  });
  afterAll(async () => {
    await db.close();
  });

  it('claims equal-priority jobs of one enqueueMany by id after a row moved in the heap', async () => {
    const queue = 'ties';
    const ids = Array.from({ length: 300 }, () => randomUUID()).sort();
    await storage.enqueueMany(ids.map((id) => ({ id, queue, payload: { pad: 'x'.repeat(200) } })));
    const hot = db.table('hot');
    const block = async (id: string): Promise<number> => {
      const [row] = await db.sql<{ ctid: string }>(`SELECT ctid::text FROM ${hot} WHERE id = $1`, [
        id,
      ]);
      return Number(/^\((\d+),/.exec(row.ctid)![1]);
    };
    // The first job's row grows past what its full page can hold: the new version goes to another
    // page, after every other row. Its priority, due time and id are unchanged.
    const before = await block(ids[0]);
    await db.sql(`UPDATE ${hot} SET payload = $2 WHERE id = $1`, [
      ids[0],
      JSON.stringify({ pad: 'y'.repeat(4_000) }),
    ]);
    expect(await block(ids[0])).toBeGreaterThan(before);

    const order: string[] = [];
    for (let i = 0; i <= ids.length; i++) {
      const rows = await storage.fetchNextBatch({
        workerId: 'test-host:1:ties',
        leaseId: randomUUID(),
        limit: 1,
        handled: { queues: [queue], types: [] },
      });
      if (rows.length === 0) break;
      order.push(rows[0].id);
    }
    expect(order.slice(0, 3)).toEqual(ids.slice(0, 3));
    expect(order).toEqual(ids);
  }, 60_000);

  it('reads O(batch) index rows when 20,000 pending jobs share one priority and due time', async () => {
    // One enqueueMany stamps its whole batch with one enqueued_at: a single group of equal keys.
    // The claim must read it in index order up to its limit, not sort the whole group by id.
    const queue = 'one-group';
    await db.sql(`
      INSERT INTO ${db.table('hot')} (id, queue, type, payload, priority, status,
        attempt_count, created_at_utc, enqueued_at_utc, last_updated_utc)
      SELECT gen_random_uuid()::text, '${queue}', 't', '{}', 10, 0, 0, now(), now(), now()
      FROM generate_series(1, 20000)`);
    await db.sql(
      `INSERT INTO ${db.table('queues')} (name, last_updated_utc) VALUES ('${queue}', now())`,
    );
    await db.sql(`ANALYZE ${db.table('hot')}`);
    const client = new Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query(
        `EXPLAIN (ANALYZE true, COSTS false, TIMING false, FORMAT JSON)
         ${fetchNextBatch(quoteSchema(db.schema), 'unbudgeted')}`,
        ['test-host:1:plan', randomUUID(), [queue], [], [], 10, 0, [], []],
      );
      await client.query('ROLLBACK');
      const plan = planOf(rows);
      const all = planNodes(plan);
      expect(
        all.filter((n) => /Sort/.test(n['Node Type']) && n.Plans?.[0]?.['Index Name']),
      ).toEqual([]);
      const read = all
        .filter((n) => n['Index Name'] === 'ix_jobs_hot_pending')
        .reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
      expect(read).toBeGreaterThanOrEqual(10);
      expect(read).toBeLessThanOrEqual(20);
    } finally {
      await client.end();
    }
  }, 60_000);
});
