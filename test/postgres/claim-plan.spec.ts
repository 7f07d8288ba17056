import { Client } from 'pg';
import { fetchNextBatch, quoteSchema } from '../../libs/chokaq/src/storage/postgres/sql';
import { PG_URL } from '../support/env';
import { createTestSchema, describePostgres } from '../support/test-database';
import { type PlanNode, planNodes, planOf } from '../support/pg-plan';

const PENDING = 200_000;
const QUEUES = 10;

/**
 * Proof (1): with 200,000 pending rows the claim is an index scan of the pending index per queue,
 * never a sequential scan of jobs_hot, with a custom plan and with a generic plan (the status codes
 * are literals, so the partial index matches either way); and it reads O(batch) rows.
 */
describePostgres('PostgreSQL claim plan', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
  let client: Client;

  beforeAll(async () => {
    await db.openStorage();
    const s = db.table.bind(db);
    // 200,000 pending rows over 10 queues, 5 priorities, some scheduled in the future.
    await db.sql(`
      INSERT INTO ${s('hot')} (id, queue, type, payload, priority, status, attempt_count,
        scheduled_at_utc, created_at_utc, enqueued_at_utc, last_updated_utc)
      SELECT gen_random_uuid()::text, 'q' || (g % ${QUEUES}), 't' || (g % 3), '{}', g % 5, 0, 0,
             CASE WHEN g % 7 = 0 THEN now() + interval '1 hour' END,
             now() - (g || ' ms')::interval, now() - (g || ' ms')::interval, now()
      FROM generate_series(1, ${PENDING}) g`);
    await db.sql(`
      INSERT INTO ${s('queues')} (name, max_workers, last_updated_utc)
      SELECT 'q' || g, CASE WHEN g % 2 = 0 THEN 50 END, now() FROM generate_series(0, ${QUEUES - 1}) g`);
    // Some active rows so the budget count has something to count.
    await db.sql(`
      UPDATE ${s('hot')} SET status = 2, worker_id = 'w', lease_id = 'l', heartbeat_utc = now()
      WHERE id IN (SELECT id FROM ${s('hot')} WHERE queue IN ('q0', 'q1') LIMIT 40)`);
    await db.sql(`ANALYZE ${s('hot')}`);
    await db.sql(`ANALYZE ${s('queues')}`);
    client = new Client({ connectionString: PG_URL });
    await client.connect();
    for (const variant of ['budgeted', 'unbudgeted'] as const) {
      await client.query(
        `PREPARE chokaq_claim_${variant}(text, text, text[], text[], text[], int, int, int[], int[]${variant === 'budgeted' ? ', text[]' : ''}) AS ${fetchNextBatch(quoteSchema(db.schema), variant)}`,
      );
    }
  }, 120_000);

  afterAll(async () => {
    await client?.end();
    await db.close();
  });

  // The exact pairs run payload versions 1 to 2 ($8, $9): the version test is a residual
  // predicate of the same index scan, as the type test is.
  const args = `'worker', 'lease', ARRAY['q0','q1','q2','q3','q4','q5','q6','q7'], ARRAY['q8','q9'], ARRAY['t1','t2'], 20, 10, ARRAY[1,1], ARRAY[2,2]`;
  /** The budgeted claim's $10: the queues step 1 locked (budgeted or rate limited). */
  const locked = `, ARRAY['q0','q1']::text[]`;

  async function explain(
    options: string,
    variant: 'budgeted' | 'unbudgeted' = 'budgeted',
  ): Promise<PlanNode> {
    const { rows } = await client.query(
      `EXPLAIN (${options}, FORMAT JSON) EXECUTE chokaq_claim_${variant}(${args}${variant === 'budgeted' ? locked : ''})`,
    );
    return planOf(rows);
  }

  function assertIndexPlan(plan: PlanNode): void {
    const all = planNodes(plan);
    const hotScans = all.filter((n) => n['Relation Name'] === 'jobs_hot');
    expect(hotScans.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    // Inside each queue's LATERAL the index order is the claim order: Limit → LockRows → Index Scan,
    // no Sort over jobs_hot rows (the only Sort merges the few candidates of all queues).
    // (The Limit's own InitPlans, which compute each queue's share, sit beside its LockRows.)
    const lateral = all.filter((n) => {
      const lock = n.Plans?.find((c) => c['Parent Relationship'] === 'Outer');
      return (
        n['Node Type'] === 'Limit' &&
        lock?.['Node Type'] === 'LockRows' &&
        lock.Plans?.[0]['Index Name'] === 'ix_jobs_hot_pending'
      );
    });
    expect(lateral.length).toBeGreaterThanOrEqual(1);
    const pending = hotScans.filter((n) => n['Index Name'] === 'ix_jobs_hot_pending');
    expect(pending.length).toBeGreaterThanOrEqual(1);
    for (const scan of pending) {
      expect(scan['Node Type']).toMatch(/^Index( Only)? Scan$/);
      // The queue and the due test are index conditions: future rows are skipped inside the index.
      expect(scan['Index Cond']).toContain('queue');
      expect(scan['Index Cond']).toContain('COALESCE');
    }
    // Every other access to jobs_hot is by an index (the active count) or by TID (the UPDATE
    // finds each picked row by its ctid).
    for (const scan of hotScans.filter((n) => n['Node Type'] !== 'ModifyTable')) {
      expect(scan['Node Type']).toMatch(/Index|Bitmap|Tid Scan/);
    }
    expect(hotScans.some((n) => n['Node Type'] === 'Tid Scan')).toBe(true);
  }

  it('uses the pending index and never a Seq Scan of jobs_hot (custom plan)', async () => {
    await client.query('SET plan_cache_mode = force_custom_plan');
    const plan = await explain('COSTS false');
    console.log(`Claim plan over ${PENDING} pending rows:\n${JSON.stringify(plan, null, 1)}`);
    assertIndexPlan(plan);
  });

  it('uses the pending index with a generic plan too (status codes are literals)', async () => {
    await client.query('SET plan_cache_mode = force_generic_plan');
    assertIndexPlan(await explain('COSTS false'));
    await client.query('RESET plan_cache_mode');
  });

  it('the one-statement claim of unbudgeted queues uses the same index plan (custom and generic)', async () => {
    await client.query('SET plan_cache_mode = force_custom_plan');
    assertIndexPlan(await explain('COSTS false', 'unbudgeted'));
    await client.query('SET plan_cache_mode = force_generic_plan');
    assertIndexPlan(await explain('COSTS false', 'unbudgeted'));
    await client.query('RESET plan_cache_mode');
  });

  it('reads O(batch) rows, not O(backlog), when executed', async () => {
    await client.query('BEGIN');
    try {
      const plan = await explain('ANALYZE true, COSTS false, TIMING false');
      const pending = planNodes(plan).filter((n) => n['Index Name'] === 'ix_jobs_hot_pending');
      const rowsRead = pending.reduce(
        (sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1),
        0,
      );
      // At most min(budget, 20) rows per queue (plus rows skipped by the type filter in q8/q9).
      console.log(
        `Pending-index rows read by one claim of 20 over ${PENDING} pending rows: ${rowsRead}`,
      );
      expect(rowsRead).toBeLessThanOrEqual(QUEUES * 20 * 2);
      const claimed = planNodes(plan).find((n) => n['Node Type'] === 'ModifyTable');
      expect(claimed?.['Actual Rows'] ?? 0).toBeLessThanOrEqual(20);
    } finally {
      await client.query('ROLLBACK');
    }
  });
});

/**
 * Proof (2): the same O(batch) reading on a table that was never analysed (a fresh schema right
 * after a bulk enqueue, before autovacuum gets to it), where a plan's row estimates are guesses.
 * The UPDATE finds picked rows by ctid, so no plan can drive it from the whole pending index.
 */
describePostgres('PostgreSQL claim plan on a never-analysed table', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
  let client: Client;
  const FRESH = 5_000;

  beforeAll(async () => {
    const storage = await db.openStorage();
    await storage.enqueueMany(Array.from({ length: FRESH }, () => ({ queue: 'fresh' })));
    client = new Client({ connectionString: PG_URL });
    await client.connect();
  }, 60_000);

  afterAll(async () => {
    await client?.end();
    await db.close();
  });

  it.each(['budgeted', 'unbudgeted'] as const)(
    'the %s claim of 50 reads O(batch) pending rows and updates through a TID scan',
    async (variant) => {
      await client.query('BEGIN');
      try {
        const { rows } = await client.query(
          `EXPLAIN (ANALYZE true, COSTS false, TIMING false, FORMAT JSON) ${fetchNextBatch(quoteSchema(db.schema), variant)}`,
          [
            'worker',
            'lease',
            ['fresh'],
            [],
            [],
            50,
            50,
            [],
            [],
            ...(variant === 'budgeted' ? [[]] : []),
          ],
        );
        const plan = planOf(rows);
        const all = planNodes(plan);
        const read = all
          .filter((n) => n['Index Name'] === 'ix_jobs_hot_pending')
          .reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
        expect(read).toBeLessThanOrEqual(100);
        expect(all.some((n) => n['Node Type'] === 'Tid Scan')).toBe(true);
        expect(all.find((n) => n['Node Type'] === 'ModifyTable')?.['Actual Rows']).toBe(50);
      } finally {
        await client.query('ROLLBACK');
      }
    },
  );
});
