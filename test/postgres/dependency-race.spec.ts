import { Client } from 'pg';
import { JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { claim } from '../contract/helpers';
import { PG_URL } from '../support/env';
import { createTestSchema, describePostgres } from '../support/test-database';
import { waitFor } from '../support/wait-for';

/**
 * PostgreSQL's one case of a move that cannot see an edge (docs/storage.md, "Dependencies"): a
 * move's statement reads the edges as of its start. An enqueue that waits on a hot job locks that
 * job's row (its mark); a move of the job that starts before the enqueue commits waits on that lock,
 * then deletes the row, and its settle step, reading the edges as of before the commit, settles
 * nothing. The edge was written marked for the check, which then settles it. Both halves are
 * asserted: the race leaves the job Waiting (so the test sees the case it means to), and the check
 * releases it.
 */
describePostgres('PostgreSQL dependencies: an edge written while its dependency moves', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 2 } });
  let producer: Client;

  beforeAll(async () => {
    await db.openStorage();
    producer = new Client({ connectionString: PG_URL });
    await producer.connect();
  });

  afterAll(async () => {
    await producer?.end();
    await db.close();
  });

  it('the move settles nothing; the check settles the edge and releases the job', async () => {
    const storage = await db.openStorage();
    const mover = await db.openStorage({ autoCreateSchema: false });
    const { id: a } = await storage.enqueue({ queue: 'race', type: 'a' });
    const c = await claim(storage, 'race', 1);
    await storage.markAsProcessing(c.leases);

    await producer.query('BEGIN');
    const { id: b } = await storage.enqueue(
      { queue: 'race', type: 'b', dependsOn: [a] },
      { transaction: producer },
    );
    // The archive starts now, before the enqueue commits, and waits on the row lock of its mark.
    const archived = mover.archiveSucceeded([{ ...c.leases[0], durationMs: 1 }]);
    await waitFor(
      'the archive to wait on the lock of the mark',
      async () =>
        (
          await db.sql<{ n: string }>(
            `SELECT count(*) AS n FROM pg_stat_activity
             WHERE wait_event_type = 'Lock' AND query LIKE '%jobs_archive%' AND datname = current_database()`,
          )
        )[0].n === '1',
      { timeoutMs: 10_000, intervalMs: 10 },
    );
    await producer.query('COMMIT');
    expect((await archived).map((r) => r.id)).toEqual([a]);

    // The race: the move could not see the edge.
    expect(await storage.getJob(b)).toMatchObject({ status: JobStatus.Waiting, waitingOn: 1 });
    const check = await storage.checkDependencies();
    expect(check).toEqual({ settled: 1, cancelled: [] });
    expect(await storage.getJob(b)).toMatchObject({ status: JobStatus.Pending, waitingOn: 0 });
    expect((await storage.getDependencies(b)).dependsOn[0]).toMatchObject({ state: 'succeeded' });
    // Nothing is left for the next pass.
    expect(await storage.checkDependencies()).toEqual({ settled: 0, cancelled: [] });
  });
});
