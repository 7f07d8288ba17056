import { randomUUID } from 'node:crypto';
import { JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import {
  activeOf,
  claim,
  countersOf,
  expectValidationError,
  newWorkerId,
  queues,
  statsOf,
  uniqueQueue,
} from './helpers';

/**
 * Starting ahead (`worker.startAhead`, issue 26): a claim that starts rows beyond the caller's free
 * slots (`FetchRequest.ahead`) takes them only from queues with neither budget nor rate limit, and
 * a started row whose handler never ran goes back to Pending with its attempt refunded
 * (`unstart`). `unstart` is on every dialect (the runtime hands rows back through it wherever it
 * starts ahead); `ahead` where the storage says `startsAhead`, refused elsewhere.
 */
describeEachDialect('storage contract: starting ahead', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  /** Claims `n` jobs of a fresh queue, all started by the claim. */
  async function startedRows(prefix: string, n: number) {
    const queue = uniqueQueue(prefix);
    await db.storage.enqueueMany(Array.from({ length: n }, () => ({ queue })));
    const c = await claim(db.storage, queue, n, newWorkerId(), { start: n });
    expect(c.rows.map((r) => r.status)).toEqual(Array(n).fill(JobStatus.Processing));
    return { queue, ...c };
  }

  it('unstart hands started rows back to Pending with the attempt refunded and nothing recorded', async () => {
    const { queue, leases } = await startedRows('unstart', 3);
    const before = await countersOf(db.storage, queue);
    expect(await db.storage.unstart(leases.slice(0, 2))).toBe(2);
    for (const lease of leases.slice(0, 2)) {
      const view = await db.storage.getJob(lease.id, { attempts: true });
      expect(view).toMatchObject({
        pillar: 'hot',
        status: JobStatus.Pending,
        attemptCount: 0,
        workerId: null,
        leaseId: null,
        startedAtUtc: null,
        attempts: [],
      });
    }
    expect(await countersOf(db.storage, queue)).toEqual(before);
    expect(await statsOf(db.storage, queue)).toMatchObject({ pending: 2, processing: 1 });
    // Due at once: the next claim takes them again, as a first attempt.
    const again = await claim(db.storage, queue, 5, newWorkerId(), { start: 5 });
    expect(again.rows.map((r) => r.attemptCount)).toEqual([1, 1]);
  });

  it('unstart with a delay makes the rows due later, held, and counts a deferral, as release does', async () => {
    const { queue, leases } = await startedRows('unstart-delay', 2);
    expect(await db.storage.unstart(leases, 60_000)).toBe(2);
    expect(await countersOf(db.storage, queue)).toMatchObject({
      deferredTotal: 2,
      retriedTotal: 0,
    });
    expect((await db.storage.getQueueHealth()).find((h) => h.queue === queue)).toMatchObject({
      heldPending: 2,
      duePending: 0,
    });
    expect((await claim(db.storage, queue, 5)).rows).toEqual([]);
    const view = await db.storage.getJob(leases[0].id);
    expect(view?.scheduledAtUtc?.getTime()).toBeGreaterThan(Date.now() + 30_000);
  });

  it('unstart refuses a stale lease and a row that is only Fetched, changing nothing', async () => {
    const { queue, leases } = await startedRows('unstart-fence', 1);
    const stale = { ...leases[0], leaseId: randomUUID() };
    expect(await db.storage.unstart([stale])).toBe(0);
    expect(await db.storage.unstart([{ ...leases[0], workerId: newWorkerId() }])).toBe(0);
    await db.storage.enqueue({ queue });
    const fetched = await claim(db.storage, queue, 1);
    expect(fetched.rows[0].status).toBe(JobStatus.Fetched);
    expect(await db.storage.unstart(fetched.leases)).toBe(0);
    expect(await statsOf(db.storage, queue)).toMatchObject({ fetched: 1, processing: 1 });
    expect((await db.storage.getJob(leases[0].id))?.attemptCount).toBe(1);
  });

  it('unstart validates its leases and delay before writing', async () => {
    const { leases } = await startedRows('unstart-bad', 1);
    await expectValidationError(db.storage.unstart([{ ...leases[0], leaseId: '' }]), 'leases[0]');
    await expectValidationError(db.storage.unstart(leases, -1), 'delayMs');
    expect((await db.storage.getJob(leases[0].id))?.status).toBe(JobStatus.Processing);
  });

  it('a claim ahead must start every row it takes', async () => {
    const queue = uniqueQueue('ahead-shape');
    await db.storage.enqueue({ queue });
    const request = {
      workerId: newWorkerId(),
      leaseId: randomUUID(),
      handled: queues(queue),
      limit: 2,
      start: 1,
      ahead: true,
    };
    await expectValidationError(db.storage.fetchNextBatch(request), 'ahead');
    expect(await activeOf(db.storage, queue)).toBe(0);
  });

  it('says which claim options it honours: PostgreSQL starts ahead and reports rate-limit waits', () => {
    // Capabilities the worker reads from the storage, through the validating edge.
    expect(db.storage.startsAhead).toBe(fixture.name === 'postgres');
    expect(db.storage.reportsRateLimitWait).toBe(fixture.name !== 'mssql');
  });

  if (fixture.name === 'postgres') {
    it('a claim ahead starts every row it takes, and never from a budgeted or rate-limited queue', async () => {
      const budgeted = uniqueQueue('ahead-budget');
      const limited = uniqueQueue('ahead-rate');
      const free = uniqueQueue('ahead-free');
      await db.storage.enqueueMany(
        [budgeted, limited, free].flatMap((queue) =>
          Array.from({ length: 4 }, () => ({ queue, priority: queue === free ? 1 : 50 })),
        ),
      );
      await db.storage.updateQueue(budgeted, { maxWorkers: 10 });
      await db.storage.updateQueue(limited, { rateLimit: { max: 100, perMs: 1_000 } });
      // However the hint reads (stale: nothing budgeted; or told), the ahead claim skips both.
      for (const budgetedQueues of [[], [budgeted, limited]]) {
        const c = await claim(db.storage, queues(budgeted, limited, free), 2, newWorkerId(), {
          start: 2,
          budgetedQueues,
          ahead: true,
        });
        expect(c.rows.map((r) => [r.queue, r.status])).toEqual([
          [free, JobStatus.Processing],
          [free, JobStatus.Processing],
        ]);
      }
      expect(await activeOf(db.storage, budgeted)).toBe(0);
      expect(await activeOf(db.storage, limited)).toBe(0);
    });
  } else {
    it('refuses a claim ahead: this storage does not start ahead', async () => {
      const queue = uniqueQueue('ahead-refused');
      await db.storage.enqueue({ queue });
      await expectValidationError(
        claim(db.storage, queue, 1, newWorkerId(), { start: 1, ahead: true }),
        'ahead',
      );
      expect(await activeOf(db.storage, queue)).toBe(0);
    });
  }
});
