import { randomUUID } from 'node:crypto';
import { JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import {
  activeOf,
  claim,
  closeClaimers,
  expectValidationError,
  newWorkerId,
  openClaimers,
  queues,
  retryUnavailable,
  statsOf,
  uniqueQueue,
} from './helpers';

/**
 * The claim's two throughput options (`FetchRequest.start` and `budgetedQueues`): rows started by
 * their own claim are exactly what `markAsProcessing` would have made of them, and neither option
 * weakens invariants 1, 4 or 5.
 */
describeEachDialect('storage contract: claiming straight into Processing', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  it('starts the first `start` rows in claim order and leaves the rest Fetched', async () => {
    const queue = uniqueQueue('start');
    await db.storage.enqueueMany([1, 5, 3, 9, 7].map((priority) => ({ queue, priority })));
    const c = await claim(db.storage, queue, 5, newWorkerId(), { start: 2 });
    expect(c.rows.map((r) => r.priority)).toEqual([9, 7, 5, 3, 1]);
    for (const row of c.rows.slice(0, 2)) {
      expect(row).toMatchObject({
        status: JobStatus.Processing,
        attemptCount: 1,
        workerId: c.workerId,
        leaseId: c.leaseId,
      });
      expect(row.startedAtUtc).toBeInstanceOf(Date);
      expect(row.heartbeatUtc).toBeInstanceOf(Date);
    }
    for (const row of c.rows.slice(2)) {
      expect(row).toMatchObject({ status: JobStatus.Fetched, attemptCount: 0, startedAtUtc: null });
    }
    const stats = await statsOf(db.storage, queue);
    expect({ fetched: stats.fetched, processing: stats.processing }).toEqual({
      fetched: 3,
      processing: 2,
    });

    // A started row is owned like one started by markAsProcessing: starting it again counts no
    // second attempt, it finishes normally, and a Fetched row of the same claim starts as before.
    const [started, , buffered] = c.leases;
    expect(await db.storage.markAsProcessing([started, buffered])).toEqual(
      expect.arrayContaining([started.id, buffered.id]),
    );
    expect((await db.storage.getJob(started.id))?.attemptCount).toBe(1);
    expect(await db.storage.archiveSucceeded([{ ...started, durationMs: 2 }])).toEqual([
      { id: started.id, leaseId: started.leaseId },
    ]);
    expect((await db.storage.getJob(started.id))?.pillar).toBe('archive');
  });

  it('start = limit starts every row; start 0 (the default) starts none', async () => {
    const queue = uniqueQueue('start-all');
    await db.storage.enqueueMany(Array.from({ length: 6 }, () => ({ queue })));
    const all = await claim(db.storage, queue, 3, newWorkerId(), { start: 3 });
    expect(all.rows.map((r) => r.status)).toEqual(Array(3).fill(JobStatus.Processing));
    const none = await claim(db.storage, queue, 3);
    expect(none.rows.map((r) => r.status)).toEqual(Array(3).fill(JobStatus.Fetched));
  });

  it('rejects a start outside 0…limit and a malformed budgetedQueues, claiming nothing', async () => {
    const queue = uniqueQueue('start-bad');
    await db.storage.enqueue({ queue });
    const base = { workerId: newWorkerId(), leaseId: randomUUID(), handled: queues(queue) };
    await expectValidationError(
      db.storage.fetchNextBatch({ ...base, limit: 2, start: 3 }),
      'start',
    );
    await expectValidationError(
      db.storage.fetchNextBatch({ ...base, limit: 2, start: -1 }),
      'start',
    );
    await expectValidationError(
      db.storage.fetchNextBatch({ ...base, limit: 2, start: 1.5 }),
      'start',
    );
    await expectValidationError(
      db.storage.fetchNextBatch({
        ...base,
        limit: 2,
        budgetedQueues: 'q' as unknown as string[],
      }),
      'budgetedQueues',
    );
    await expectValidationError(
      db.storage.fetchNextBatch({ ...base, limit: 2, budgetedQueues: [''] }),
      'budgetedQueues[0]',
    );
    expect(await activeOf(db.storage, queue)).toBe(0);
  });

  it('invariant 1: concurrent claimers that start what they claim, hinted "no budgets", take every job exactly once', async () => {
    const qa = uniqueQueue('start-inv1a');
    const qb = uniqueQueue('start-inv1b');
    const ids = new Set(
      (
        await db.storage.enqueueMany(
          Array.from({ length: 600 }, (_, i) => ({ queue: i % 2 ? qa : qb, priority: i % 3 })),
        )
      ).map((r) => r.id),
    );
    const storages = await openClaimers(db, 6, 3);
    const seen = new Map<string, number>();
    const deadline = Date.now() + 45_000;
    try {
      await Promise.all(
        storages.map(async (storage, k) => {
          const limit = [5, 11, 20][k % 3];
          while (seen.size < ids.size && Date.now() < deadline) {
            const c = await retryUnavailable(() =>
              claim(storage, queues(qa, qb), limit, newWorkerId(`s${k}`), {
                start: limit,
                budgetedQueues: [],
              }),
            );
            for (const row of c.rows) {
              expect(row.status).toBe(JobStatus.Processing);
              seen.set(row.id, (seen.get(row.id) ?? 0) + 1);
            }
            if (c.rows.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
          }
        }),
      );
    } finally {
      await closeClaimers(db, storages);
    }
    expect([...seen.values()].filter((n) => n > 1)).toEqual([]);
    expect(seen.size).toBe(ids.size);
    expect((await statsOf(db.storage, qa)).processing).toBe(300);
    expect((await statsOf(db.storage, qb)).processing).toBe(300);
  });

  it('invariant 4: a claim hinted that no queue is budgeted (a stale hint) never overspends a budget', async () => {
    const budgeted = uniqueQueue('start-inv4');
    const free = uniqueQueue('start-free');
    await db.storage.enqueueMany([
      ...Array.from({ length: 30 }, () => ({ queue: budgeted, priority: 10 })),
      ...Array.from({ length: 30 }, () => ({ queue: free })),
    ]);
    await db.storage.updateQueue(budgeted, { maxWorkers: 3 });
    const storages = await openClaimers(db, 6, 3);
    try {
      for (let round = 0; round < 3; round++) {
        // Half the claimers believe nothing is budgeted, half know; all start what they claim.
        await Promise.all(
          storages.map((s, k) =>
            retryUnavailable(() =>
              claim(s, queues(budgeted, free), 4, newWorkerId(`b${round}.${k}`), {
                start: 4,
                budgetedQueues: k % 2 ? [] : [budgeted],
              }),
            ),
          ),
        );
        expect(await activeOf(db.storage, budgeted)).toBeLessThanOrEqual(3);
      }
      // Told about the budget, a claim spends exactly what is left of it.
      const left = 3 - (await activeOf(db.storage, budgeted));
      const told = await claim(db.storage, budgeted, 10, newWorkerId(), {
        start: 10,
        budgetedQueues: [budgeted],
      });
      expect(told.rows).toHaveLength(left);
      expect(await activeOf(db.storage, budgeted)).toBe(3);
    } finally {
      await closeClaimers(db, storages);
    }
  });

  it('invariant 4: a one-queue claim hinted "no budget" never overspends that queue', async () => {
    const queue = uniqueQueue('start-one');
    await db.storage.enqueueMany(Array.from({ length: 8 }, () => ({ queue })));
    await db.storage.updateQueue(queue, { maxWorkers: 2 });
    const stale = await claim(db.storage, queue, 8, newWorkerId(), {
      start: 8,
      budgetedQueues: [],
    });
    expect(stale.rows.length).toBeLessThanOrEqual(2);
    const told = await claim(db.storage, queue, 8, newWorkerId(), {
      start: 8,
      budgetedQueues: [queue],
    });
    expect(stale.rows.length + told.rows.length).toBe(2);
    expect(await activeOf(db.storage, queue)).toBe(2);
    // Unbudgeted again: the one-queue claim takes the rest, highest priority first.
    await db.storage.updateQueue(queue, { maxWorkers: null });
    const rest = await claim(db.storage, queue, 8, newWorkerId(), { start: 3, budgetedQueues: [] });
    expect(rest.rows).toHaveLength(6);
    expect(rest.rows.filter((r) => r.status === JobStatus.Processing)).toHaveLength(3);
  });

  it('invariant 5: paused and inactive queues are never claimed, whatever the hint', async () => {
    const paused = uniqueQueue('start-paused');
    const retired = uniqueQueue('start-retired');
    await db.storage.enqueueMany([{ queue: paused }, { queue: retired }]);
    await db.storage.updateQueue(paused, { isPaused: true });
    await db.storage.updateQueue(retired, { isActive: false });
    for (const budgetedQueues of [[], undefined]) {
      const c = await claim(db.storage, queues(paused, retired), 5, newWorkerId(), {
        start: 5,
        budgetedQueues,
      });
      expect(c.rows).toEqual([]);
      // One queue at a time too (SQLite's one-queue claim).
      for (const queue of [paused, retired]) {
        const one = await claim(db.storage, queue, 5, newWorkerId(), { start: 5, budgetedQueues });
        expect(one.rows).toEqual([]);
      }
    }
  });
});
