import { Client } from 'pg';
import {
  fetchNextBatch,
  fetchNextBatchBudgetedParams,
  fetchNextBatchParams,
  quoteSchema,
} from '../../libs/chokaq/src/storage/postgres/sql';
import { PG_URL } from '../support/env';
import { createTestSchema, describePostgres } from '../support/test-database';

const QUEUES = 8;
const PER_QUEUE = 10;
const LIMIT = 5;

/**
 * A claim over many queues locks the rows it keeps, not each queue's best `limit` rows. Row locks
 * in PostgreSQL are written into the heap tuples (`FOR UPDATE` dirties each row's page): a claim
 * of 50 over 17 queues that locked 50 rows per queue dirtied 850 pages to keep 50, which is what
 * made the claim slow as the backlog outgrew memory (bench `scale`), and every row it locked was
 * skipped by concurrent claimers until it committed.
 *
 * The claim runs in a transaction left open; a second session counts the Pending rows it can
 * still lock (`SKIP LOCKED`): every row but the claimed ones.
 */
describePostgres('PostgreSQL claim: the rows it locks', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 2 } });
  let claimer: Client;
  let other: Client;
  const queues = Array.from({ length: QUEUES }, (_, i) => `locks-${i}`);

  beforeAll(async () => {
    await db.openStorage();
    claimer = new Client({ connectionString: PG_URL });
    other = new Client({ connectionString: PG_URL });
    await claimer.connect();
    await other.connect();
  });

  afterAll(async () => {
    await claimer?.end();
    await other?.end();
    await db.close();
  });

  beforeEach(async () => {
    await db.sql(`DELETE FROM ${db.table('hot')}`);
    await db.sql(`DELETE FROM ${db.table('queues')}`);
    // Queue i's rows are due i seconds apart from queue i+1's, so the best five across queues
    // are queue 0's oldest five: every other queue's share is 0.
    await db.sql(
      `INSERT INTO ${db.table('hot')} (id, queue, type, payload, priority, status, attempt_count,
         created_at_utc, enqueued_at_utc, last_updated_utc)
       SELECT gen_random_uuid()::text, 'locks-' || q, 't', '{}', 10, 0, 0,
              now() - interval '1 hour' + q * interval '1 minute' + n * interval '1 second',
              now() - interval '1 hour' + q * interval '1 minute' + n * interval '1 second', now()
       FROM generate_series(0, ${QUEUES - 1}) q, generate_series(1, ${PER_QUEUE}) n`,
    );
    await db.sql(
      `INSERT INTO ${db.table('queues')} (name, last_updated_utc)
       SELECT 'locks-' || q, now() FROM generate_series(0, ${QUEUES - 1}) q`,
    );
  });

  async function lockableLeft(): Promise<number> {
    const { rows } = await other.query<{ n: string }>(
      `SELECT count(*) AS n FROM (SELECT id FROM ${db.table('hot')} WHERE status = 0
         FOR UPDATE SKIP LOCKED) x`,
    );
    return Number(rows[0].n);
  }

  it.each(['unbudgeted', 'budgeted'] as const)(
    'the %s claim of 5 over 8 queues locks 5 rows and claims the best 5',
    async (variant) => {
      const request = {
        workerId: 'locks',
        leaseId: `lease-${variant}`,
        limit: LIMIT,
        start: LIMIT,
        handled: { queues, types: [] },
      };
      const params =
        variant === 'budgeted'
          ? fetchNextBatchBudgetedParams(request, [])
          : fetchNextBatchParams(request);
      await claimer.query('BEGIN');
      try {
        const { rows } = await claimer.query<{ queue: string; enqueued_at_utc: number }>(
          fetchNextBatch(quoteSchema(db.schema), variant),
          params,
        );
        expect(rows.map((r) => r.queue)).toEqual(Array(LIMIT).fill('locks-0'));
        // Every row the claim did not take can still be locked by another claimer.
        expect(await lockableLeft()).toBe(QUEUES * PER_QUEUE - LIMIT);
      } finally {
        await claimer.query('ROLLBACK');
      }
    },
  );

  it('skips rows another claimer holds and still fills its share from the same queue', async () => {
    // Another session holds queue 0's two oldest rows.
    await other.query('BEGIN');
    try {
      await other.query(
        `SELECT id FROM ${db.table('hot')} WHERE id IN (
           SELECT id FROM ${db.table('hot')} WHERE queue = 'locks-0'
           ORDER BY enqueued_at_utc LIMIT 2) FOR UPDATE`,
      );
      const { rows } = await claimer.query<{ queue: string }>(
        fetchNextBatch(quoteSchema(db.schema), 'unbudgeted'),
        fetchNextBatchParams({
          workerId: 'locks',
          leaseId: 'lease-skip',
          limit: LIMIT,
          start: LIMIT,
          handled: { queues, types: [] },
        }),
      );
      expect(rows).toHaveLength(LIMIT);
      expect(rows.map((r) => r.queue)).toEqual(Array(LIMIT).fill('locks-0'));
    } finally {
      await other.query('ROLLBACK');
    }
  });
});
