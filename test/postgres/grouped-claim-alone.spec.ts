import { Client } from 'pg';
import { claim, newWorkerId } from '../contract/helpers';
import { PG_URL } from '../support/env';
import { createTestSchema, describePostgres } from '../support/test-database';
import { waitFor } from '../support/wait-for';

/**
 * A grouped queue's claim as one autocommit statement (PostgreSQL): its snapshot is taken before
 * it is granted the queue's row lock, so a claim that commits in between is not in it. The
 * statement sees that the row it locked is newer than the one its snapshot shows, writes nothing,
 * and the store claims in the transaction instead, whose snapshot follows the lock. Here a
 * transaction plays that other claim: it locks the queue's row, starts one job of group `a` (the
 * group's concurrency is 1) and turns the cursor, as a claim does; the store's claim starts while
 * it is open and waits on the lock. Had the claim used its snapshot, it would have started
 * another of `a`'s jobs.
 */
describePostgres('PostgreSQL grouped claim: one statement, overtaken by another claim', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 2 } });
  let other: Client;

  beforeAll(async () => {
    await db.openStorage();
    other = new Client({ connectionString: PG_URL });
    await other.connect();
  });

  afterAll(async () => {
    await other?.end();
    await db.close();
  });

  it('the claim sees the other claim’s start and keeps the group within its concurrency', async () => {
    const storage = await db.openStorage();
    const queue = 'alone';
    await storage.updateQueue(queue, { groupConcurrency: 1 });
    const ids = (
      await storage.enqueueMany([
        { queue, group: 'a' },
        { queue, group: 'a' },
        { queue, group: 'a' },
        { queue, group: 'b' },
      ])
    ).map((r) => r.id);
    const workerId = newWorkerId();
    // The first claim (in the transaction) finds the queue grouped; it takes a's first job.
    const first = await claim(storage, queue, 1, workerId, { start: 1 });
    expect(first.rows.map((r) => r.id)).toEqual([ids[0]]);
    await storage.archiveSucceeded([{ ...first.leases[0], durationMs: 1 }]);

    await other.query('BEGIN');
    await other.query(`SELECT name FROM ${db.table('queues')} WHERE name = $1 FOR NO KEY UPDATE`, [
      queue,
    ]);
    await other.query(
      `UPDATE ${db.table('hot')} SET status = 2, attempt_count = attempt_count + 1,
         worker_id = 'other', lease_id = 'other-lease', started_at_utc = now(), heartbeat_utc = now()
       WHERE id = $1`,
      [ids[1]],
    );
    await other.query(`UPDATE ${db.table('queues')} SET group_cursor = 'a' WHERE name = $1`, [
      queue,
    ]);
    const claiming = claim(storage, queue, 5, workerId, { start: 5 });
    await waitFor(
      'the claim to wait on the queue’s row lock',
      async () =>
        (
          await db.sql<{ n: string }>(
            `SELECT count(*) AS n FROM pg_stat_activity
             WHERE wait_event_type = 'Lock' AND query LIKE '%group_cursor%'
               AND datname = current_database()`,
          )
        )[0].n === '1',
      { timeoutMs: 10_000, intervalMs: 10 },
    );
    await other.query('COMMIT');

    const taken = await claiming;
    expect(taken.rows.map((r) => r.group)).toEqual(['b']);
    const running = await db.sql<{ n: string }>(
      `SELECT count(*) AS n FROM ${db.table('hot')} WHERE queue = $1 AND group_key = 'a' AND status IN (1, 2)`,
      [queue],
    );
    expect(running[0].n).toBe('1');
  });
});
