import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import {
  activeOf,
  claim,
  closeClaimers,
  openClaimers,
  newWorkerId,
  ownersOf,
  queues,
  retryUnavailable,
  uniqueQueue,
} from './helpers';

/** SPEC §8 invariants 1, 4 and 5, and claim order: what `fetchNextBatch` may and may not take. */
describeEachDialect('storage contract: claiming', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  it('claims due Pending rows and returns them Fetched with the claim token', async () => {
    const queue = uniqueQueue();
    const { id } = await db.storage.enqueue({
      queue,
      type: 'x.v1',
      payload: { a: [1, 'two'] },
      tags: ['t1', 't2'],
      priority: 7,
      idempotencyKey: `k-${queue}`,
      createdBy: 'tester',
    });
    const c = await claim(db.storage, queue, 10);
    expect(c.rows).toHaveLength(1);
    const row = c.rows[0];
    expect(row).toMatchObject({
      id,
      queue,
      type: 'x.v1',
      payload: { a: [1, 'two'] },
      tags: ['t1', 't2'],
      priority: 7,
      status: JobStatus.Fetched,
      workerId: c.workerId,
      leaseId: c.leaseId,
      attemptCount: 0,
      idempotencyKey: `k-${queue}`,
      createdBy: 'tester',
    });
    expect(row.lastUpdatedUtc).toBeInstanceOf(Date);
    expect((await db.storage.getJob(id))?.status).toBe(JobStatus.Fetched);
    expect(await claim(db.storage, queue, 10)).toMatchObject({ rows: [] });
  });

  it('a claimed row reads as getJob reads it, every instant to the same millisecond', async () => {
    const queue = uniqueQueue();
    const jobs = await db.storage.enqueueMany(
      Array.from({ length: 8 }, (_, i) => ({ queue, type: 'x.v1', payload: { i } })),
    );
    const c = await claim(db.storage, queue, 8, undefined, { start: 4 });
    expect(c.rows.map((r) => r.id).sort()).toEqual(jobs.map((j) => j.id).sort());
    for (const row of c.rows) {
      const view = await db.storage.getJob(row.id);
      const { pillar, ...stored } = view!;
      expect(pillar).toBe('hot');
      // Every field of the claimed row, as the view has it (the view has a few of its own).
      expect(stored).toMatchObject({ ...row });
      expect(Object.keys(row).every((k) => k in stored)).toBe(true);
    }
    // Started ones carry their start and heartbeat; Fetched ones none.
    expect(c.rows.filter((r) => r.startedAtUtc !== null)).toHaveLength(4);
  });

  it('limit 0 claims nothing; a claim never returns more than limit rows', async () => {
    const queue = uniqueQueue();
    await db.storage.enqueueMany(Array.from({ length: 5 }, () => ({ queue })));
    expect((await claim(db.storage, queue, 0)).rows).toEqual([]);
    expect((await claim(db.storage, queue, 2)).rows).toHaveLength(2);
    expect((await claim(db.storage, queue, 10)).rows).toHaveLength(3);
  });

  it('claim order: priority desc', async () => {
    const queue = uniqueQueue();
    for (const priority of [1, 50, 10, -5, 100, 10]) {
      await db.storage.enqueue({ queue, priority });
    }
    const seen: number[] = [];
    for (let i = 0; i < 6; i++) {
      const c = await claim(db.storage, queue, 1);
      expect(c.rows).toHaveLength(1);
      seen.push(c.rows[0].priority);
    }
    expect(seen).toEqual([100, 50, 10, 10, 1, -5]);

    const q2 = uniqueQueue();
    await db.storage.enqueueMany([1, 9, 3, 7, 5].map((priority) => ({ queue: q2, priority })));
    const top = await claim(db.storage, q2, 2);
    expect(top.rows.map((r) => r.priority).sort()).toEqual([7, 9]);
  });

  it('invariant 1: N concurrent claimers over 1,200 pending jobs claim every job exactly once', async () => {
    const qa = uniqueQueue('inv1a');
    const qb = uniqueQueue('inv1b');
    const results = await db.storage.enqueueMany(
      Array.from({ length: 1_200 }, (_, i) => ({ queue: i % 2 ? qa : qb, priority: i % 5 })),
    );
    const all = new Set(results.map((r) => r.id));
    expect(all.size).toBe(1_200);

    const storages = await openClaimers(db, 8, 4);
    const claimedBy = new Map<string, string>();
    const duplicates: string[] = [];
    const tokenErrors: string[] = [];
    let total = 0;
    const deadline = Date.now() + 45_000;
    try {
      await Promise.all(
        storages.map(async (storage, k) => {
          const workerId = newWorkerId(`claimer${k}`);
          const limit = [7, 13, 25, 50][k % 4];
          let empty = 0;
          while (total < all.size && Date.now() < deadline && empty < 200) {
            const c = await retryUnavailable(() => claim(storage, queues(qa, qb), limit, workerId));
            if (c.rows.length === 0) {
              empty += 1;
              await new Promise((resolve) => setTimeout(resolve, 5));
              continue;
            }
            expect(c.rows.length).toBeLessThanOrEqual(limit);
            for (const row of c.rows) {
              if (claimedBy.has(row.id)) duplicates.push(row.id);
              claimedBy.set(row.id, workerId);
              if (row.workerId !== workerId || row.leaseId !== c.leaseId) tokenErrors.push(row.id);
              total += 1;
            }
          }
        }),
      );
    } finally {
      await closeClaimers(db, storages);
    }

    expect(duplicates).toEqual([]);
    expect(tokenErrors).toEqual([]);
    expect(claimedBy.size).toBe(all.size);
    expect([...claimedBy.keys()].filter((id) => !all.has(id))).toEqual([]);
    // The database agrees: each row is owned by the claimer that got it (no later overwrite).
    const owners = new Map([...(await ownersOf(db, qa)), ...(await ownersOf(db, qb))]);
    const mismatched = [...claimedBy].filter(([id, w]) => owners.get(id) !== w);
    expect(mismatched).toEqual([]);
    expect(await activeOf(db.storage, qa)).toBe(600);
    expect(await activeOf(db.storage, qb)).toBe(600);
  });

  it('invariant 4: MaxWorkers holds within a single claim (limit 50, max_workers 3 → 3) and frees up after finalisation', async () => {
    const queue = uniqueQueue('inv4');
    await db.storage.enqueueMany(Array.from({ length: 20 }, () => ({ queue })));
    await db.storage.updateQueue(queue, { maxWorkers: 3 });

    const first = await claim(db.storage, queue, 50);
    expect(first.rows).toHaveLength(3);
    expect((await claim(db.storage, queue, 50)).rows).toHaveLength(0);
    expect(await activeOf(db.storage, queue)).toBe(3);

    // Processing counts against the budget too.
    expect(await db.storage.markAsProcessing([first.leases[0]])).toEqual([first.leases[0].id]);
    expect((await claim(db.storage, queue, 50)).rows).toHaveLength(0);

    // Finalising one and releasing one frees exactly two slots.
    expect(await db.storage.archiveSucceeded([{ ...first.leases[0], durationMs: 3 }])).toEqual([
      { id: first.leases[0].id, leaseId: first.leases[0].leaseId },
    ]);
    expect(await db.storage.release([first.leases[1]])).toBe(1);
    const second = await claim(db.storage, queue, 50);
    expect(second.rows).toHaveLength(2);
    expect(await activeOf(db.storage, queue)).toBe(3);

    // A DLQ move frees one; clearing the budget makes the queue unlimited.
    expect(
      await db.storage.moveToDlq(second.leases[0], {
        reason: FailureReason.FatalError,
        error: 'fatal',
      }),
    ).toBe(1);
    expect((await claim(db.storage, queue, 50)).rows).toHaveLength(1);
    await db.storage.updateQueue(queue, { maxWorkers: null });
    expect((await claim(db.storage, queue, 50)).rows).toHaveLength(20 - 1 - 3 - 1);
  });

  it('invariant 4: a claim over a budgeted and an unbudgeted queue fills the rest from the unbudgeted one', async () => {
    const budgeted = uniqueQueue('inv4b');
    const free = uniqueQueue('inv4f');
    await db.storage.enqueueMany([
      ...Array.from({ length: 10 }, () => ({ queue: budgeted, priority: 100 })),
      ...Array.from({ length: 10 }, () => ({ queue: free, priority: 1 })),
    ]);
    await db.storage.updateQueue(budgeted, { maxWorkers: 2 });
    const c = await claim(db.storage, queues(budgeted, free), 8);
    expect(c.rows.filter((r) => r.queue === budgeted)).toHaveLength(2);
    expect(c.rows.filter((r) => r.queue === free)).toHaveLength(6);
  });

  it('invariant 4: MaxWorkers holds across concurrent claimers, round after round', async () => {
    const queue = uniqueQueue('inv4c');
    const max = 5;
    await db.storage.enqueueMany(Array.from({ length: 100 }, () => ({ queue })));
    await db.storage.updateQueue(queue, { maxWorkers: max });
    const storages = await openClaimers(db, 8, 4);
    try {
      const held: {
        storage: JobStorage;
        lease: { id: string; workerId: string; leaseId: string };
      }[] = [];
      for (let round = 0; round < 4; round++) {
        const before = await activeOf(db.storage, queue);
        const claims = await Promise.all(
          storages.map((s, k) =>
            retryUnavailable(() => claim(s, queue, 10, newWorkerId(`r${round}c${k}`))).then(
              (c) => ({
                c,
                s,
              }),
            ),
          ),
        );
        const got = claims.reduce((n, { c }) => n + c.rows.length, 0);
        expect(got).toBeLessThanOrEqual(max - before);
        expect(await activeOf(db.storage, queue)).toBeLessThanOrEqual(max);
        for (const { c, s } of claims)
          for (const lease of c.leases) held.push({ storage: s, lease });
        // Start half of what we hold, finalise two (one success, one failure) to free budget.
        const [a, b] = held.splice(0, 2);
        if (a) {
          await a.storage.markAsProcessing([a.lease]);
          expect(await a.storage.archiveSucceeded([{ ...a.lease, durationMs: 1 }])).toEqual([
            { id: a.lease.id, leaseId: a.lease.leaseId },
          ]);
        }
        if (b) {
          expect(
            await b.storage.moveToDlq(b.lease, { reason: FailureReason.FatalError, error: 'x' }),
          ).toBe(1);
        }
      }
      // A single claimer now sees exactly the freed budget.
      const active = await activeOf(db.storage, queue);
      const last = await claim(db.storage, queue, 50);
      expect(last.rows).toHaveLength(max - active);
      expect(await activeOf(db.storage, queue)).toBe(max);
    } finally {
      await closeClaimers(db, storages);
    }
  });

  it('invariant 4: concurrent claimers over several budgeted queues (listed in different orders) neither deadlock nor overspend', async () => {
    const a = uniqueQueue('inv4x');
    const b = uniqueQueue('inv4y');
    const c = uniqueQueue('inv4z');
    await db.storage.enqueueMany(
      [a, b, c].flatMap((queue) => Array.from({ length: 30 }, () => ({ queue }))),
    );
    await db.storage.updateQueue(a, { maxWorkers: 2 });
    await db.storage.updateQueue(b, { maxWorkers: 3 });
    await db.storage.updateQueue(c, { maxWorkers: 4 });
    const orders = [
      [a, b, c],
      [c, b, a],
      [b, a, c],
      [c, a, b],
    ];
    const storages = await openClaimers(db, 8, 4);
    try {
      const claimed = new Map<string, number>();
      for (let round = 0; round < 3; round++) {
        const claims = await Promise.all(
          storages.map((s, k) =>
            retryUnavailable(() => claim(s, queues(...orders[k % orders.length]), 5)),
          ),
        );
        for (const row of claims.flatMap((cl) => cl.rows)) {
          claimed.set(row.queue, (claimed.get(row.queue) ?? 0) + 1);
        }
        // Nothing is finalised, so everything ever claimed is still active.
        expect(claimed.get(a) ?? 0).toBeLessThanOrEqual(2);
        expect(claimed.get(b) ?? 0).toBeLessThanOrEqual(3);
        expect(claimed.get(c) ?? 0).toBeLessThanOrEqual(4);
        expect(await activeOf(db.storage, a)).toBeLessThanOrEqual(2);
        expect(await activeOf(db.storage, b)).toBeLessThanOrEqual(3);
        expect(await activeOf(db.storage, c)).toBeLessThanOrEqual(4);
      }
      // Sequentially, every budget is then spent exactly.
      await claim(db.storage, queues(a, b, c), 50);
      expect(await activeOf(db.storage, a)).toBe(2);
      expect(await activeOf(db.storage, b)).toBe(3);
      expect(await activeOf(db.storage, c)).toBe(4);
    } finally {
      await closeClaimers(db, storages);
    }
  });

  it('release with delayMs and rescheduleForRetry make the job Pending but not eligible before the delay', async () => {
    const queue = uniqueQueue('later');
    await db.storage.enqueueMany([{ queue }, { queue }]);
    const c = await claim(db.storage, queue, 2);
    const [released, retried] = c.leases;
    await db.storage.markAsProcessing([retried]);
    expect(await db.storage.release([released], 1_500)).toBe(1);
    expect(await db.storage.rescheduleForRetry(retried, 1_500, 'Error: later')).toBe(1);
    expect(await db.storage.getJob(released.id)).toMatchObject({
      status: JobStatus.Pending,
      attemptCount: 0, // an open circuit spends no attempt
      workerId: null,
      leaseId: null,
    });
    expect(await db.storage.getJob(retried.id)).toMatchObject({
      status: JobStatus.Pending,
      attemptCount: 1,
      lastError: 'Error: later',
      heartbeatUtc: null,
    });
    expect((await claim(db.storage, queue, 10)).rows).toEqual([]);
    const seen = new Set<string>();
    await waitFor(
      'delayed release and retry claimable',
      async () => {
        for (const row of (await claim(db.storage, queue, 10)).rows) {
          expect(row.lastUpdatedUtc.getTime()).toBeGreaterThanOrEqual(
            row.scheduledAtUtc!.getTime(),
          );
          seen.add(row.id);
        }
        return seen.size === 2;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
  });

  it('queue controls: concurrent upserts of one new queue are safe and the last patch wins per field', async () => {
    const queue = uniqueQueue('controls');
    const storages = await openClaimers(db, 4, 3);
    try {
      const results = await Promise.all(
        storages.map((s, k) => retryUnavailable(() => s.updateQueue(queue, { maxWorkers: 5 + k }))),
      );
      expect(results.every((r) => r.name === queue)).toBe(true);
      expect((await db.storage.getQueues()).filter((q) => q.name === queue)).toHaveLength(1);
      const info = await db.storage.updateQueue(queue, {
        zombieTimeoutSeconds: 30,
        executionTimeoutMs: 5_000,
        retryZombies: true,
      });
      expect(info).toMatchObject({
        isPaused: false,
        isActive: true,
        zombieTimeoutSeconds: 30,
        executionTimeoutMs: 5_000,
        retryZombies: true,
      });
      expect(info.maxWorkers).toBeGreaterThanOrEqual(5);
      // undefined leaves a field alone; null clears a nullable one.
      expect(
        await db.storage.updateQueue(queue, { maxWorkers: null, zombieTimeoutSeconds: undefined }),
      ).toMatchObject({
        maxWorkers: null,
        zombieTimeoutSeconds: 30,
        retryZombies: true,
      });
    } finally {
      await closeClaimers(db, storages);
    }
  });

  it('invariant 5: paused queues are never claimed; resume makes them claimable', async () => {
    const paused = uniqueQueue('paused');
    const open = uniqueQueue('open');
    await db.storage.enqueueMany([{ queue: paused }, { queue: paused }, { queue: open }]);
    const info = await db.storage.updateQueue(paused, { isPaused: true });
    expect(info).toMatchObject({ name: paused, isPaused: true, isActive: true });
    // Enqueueing into a paused queue must not unpause it (the Queues upsert keeps the controls).
    await db.storage.enqueue({ queue: paused });

    const c = await claim(db.storage, queues(paused, open), 50);
    expect(c.rows.map((r) => r.queue)).toEqual([open]);
    expect((await claim(db.storage, paused, 50)).rows).toEqual([]);
    expect((await db.storage.getQueues()).find((q) => q.name === paused)?.isPaused).toBe(true);

    await db.storage.updateQueue(paused, { isPaused: false });
    expect((await claim(db.storage, paused, 50)).rows).toHaveLength(3);
  });

  it('invariant 5: inactive queues are never claimed; reactivating makes them claimable', async () => {
    const retired = uniqueQueue('retired');
    await db.storage.enqueueMany([{ queue: retired }, { queue: retired }]);
    await db.storage.updateQueue(retired, { isActive: false });
    await db.storage.enqueue({ queue: retired });
    expect((await claim(db.storage, retired, 50)).rows).toEqual([]);
    await db.storage.updateQueue(retired, { isActive: true });
    expect((await claim(db.storage, retired, 50)).rows).toHaveLength(3);
  });

  it('invariant 5: delayed jobs (delayMs, runAt) are never claimed early and are claimed when due', async () => {
    const queue = uniqueQueue('delay');
    const dbNow = await db.storage.now();
    const delayed = await db.storage.enqueue({ queue, type: 'delay', delayMs: 1_500 });
    const runAt = new Date(dbNow.getTime() + 1_500);
    const scheduled = await db.storage.enqueue({ queue, type: 'runAt', runAt });
    const past = await db.storage.enqueue({
      queue,
      type: 'past',
      runAt: new Date(dbNow.getTime() - 60_000),
    });

    const first = await claim(db.storage, queue, 10);
    expect(first.rows.map((r) => r.id)).toEqual([past.id]);

    const view = await db.storage.getJob(delayed.id);
    expect(view?.scheduledAtUtc).toBeInstanceOf(Date);
    const delta = view!.scheduledAtUtc!.getTime() - view!.enqueuedAtUtc.getTime();
    expect(delta).toBeGreaterThanOrEqual(1_450);
    expect(delta).toBeLessThanOrEqual(1_600);
    // An absolute runAt is stored as given.
    expect((await db.storage.getJob(scheduled.id))?.scheduledAtUtc?.getTime()).toBe(
      runAt.getTime(),
    );

    const claimed = new Map<string, Date>();
    await waitFor(
      'both delayed jobs claimed',
      async () => {
        const c = await claim(db.storage, queue, 10);
        for (const row of c.rows) {
          // lastUpdatedUtc is the claim instant on the database clock.
          claimed.set(row.id, row.lastUpdatedUtc);
          expect(row.lastUpdatedUtc.getTime()).toBeGreaterThanOrEqual(
            row.scheduledAtUtc!.getTime(),
          );
        }
        return claimed.size === 2;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect([...claimed.keys()].sort()).toEqual([delayed.id, scheduled.id].sort());
  });

  it('invariant 5: a worker claims only the types it can run (handled.types pairs vs handled.queues)', async () => {
    const q1 = uniqueQueue('types1');
    const q2 = uniqueQueue('types2');
    await db.storage.enqueueMany([
      { queue: q1, type: 'a.v1' },
      { queue: q1, type: 'a.v1' },
      { queue: q1, type: 'b.v1' },
      { queue: q1, type: 'c.v2' },
      { queue: q2, type: 'a.v1' },
      { queue: q2, type: 'z.v1' },
    ]);

    // Nothing handled: nothing claimed.
    expect((await claim(db.storage, { queues: [], types: [] }, 50)).rows).toEqual([]);
    // A pair naming a type of another queue matches nothing here.
    expect(
      (await claim(db.storage, { queues: [], types: [{ queue: q2, type: 'b.v1' }] }, 50)).rows,
    ).toEqual([]);

    const onlyA = await claim(db.storage, { queues: [], types: [{ queue: q1, type: 'a.v1' }] }, 50);
    expect(onlyA.rows).toHaveLength(2);
    expect(onlyA.rows.every((r) => r.queue === q1 && r.type === 'a.v1')).toBe(true);

    const mixed = await claim(
      db.storage,
      { queues: [q2], types: [{ queue: q1, type: 'b.v1' }] },
      50,
    );
    expect(mixed.rows.map((r) => `${r.queue}/${r.type}`).sort()).toEqual(
      [`${q1}/b.v1`, `${q2}/a.v1`, `${q2}/z.v1`].sort(),
    );
    // c.v2 stays Pending: no live handler for it.
    const left = await db.storage.listActive({ filter: { queue: q1, status: JobStatus.Pending } });
    expect(left.items.map((r) => r.type)).toEqual(['c.v2']);
  });
});
