import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import type { ZombieRescueResult } from '../../libs/chokaq/src/interfaces/job.interface';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import {
  backdate,
  claim,
  countersOf,
  expectOnlyIn,
  expectValidationError,
  newWorkerId,
  startJob,
  uniqueQueue,
} from './helpers';

/**
 * SPEC §8 invariant 6: Fetched rows untouched past the timeout return to Pending; Processing rows
 * whose heartbeat expired go to the DLQ as Zombie (or back to Pending where RetryZombies is set, or
 * where the rescuer's handler rules resolve the row's `(queue, type)` to a handler that opts in),
 * and the rescued run's old lease can never finalise the job. Each test has its own database,
 * because rescue operations act on every queue.
 */
describeEachDialect('storage contract: rescue', (fixture) => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await fixture.create();
  });
  afterEach(async () => {
    await db?.close();
  });

  const HOUR = 3_600_000;

  /** The ids of a rescue, by where they went (the rows of `jobs` are checked where it matters). */
  const moved = async (
    result: Promise<ZombieRescueResult>,
  ): Promise<{ dlq: string[]; retried: string[] }> => {
    const { dlq, retried, jobs } = await result;
    expect(jobs.map((j) => j.job.id).sort()).toEqual([...dlq, ...retried].sort());
    return { dlq, retried };
  };

  it('invariant 6: recoverAbandoned returns stale Fetched rows to Pending and leaves fresh ones', async () => {
    const queue = uniqueQueue('abandon');
    await db.storage.enqueueMany(Array.from({ length: 6 }, () => ({ queue })));
    const stale = await claim(db.storage, queue, 3);
    const fresh = await claim(db.storage, queue, 2);
    const running = await claim(db.storage, queue, 1);
    await db.storage.markAsProcessing(running.leases);
    await backdate(
      db,
      'hot',
      'last_updated_utc',
      [...stale.rows, ...running.rows].map((r) => r.id),
      HOUR,
    );
    await backdate(
      db,
      'hot',
      'heartbeat_utc',
      running.rows.map((r) => r.id),
      60_000,
    );

    expect(await db.storage.recoverAbandoned(600_000)).toBe(3);
    for (const lease of stale.leases) {
      expect(await db.storage.getJob(lease.id)).toMatchObject({
        pillar: 'hot',
        status: JobStatus.Pending,
        workerId: null,
        leaseId: null,
        attemptCount: 0,
      });
    }
    for (const lease of fresh.leases) {
      expect(await db.storage.getJob(lease.id)).toMatchObject({
        status: JobStatus.Fetched,
        workerId: fresh.workerId,
        leaseId: fresh.leaseId,
      });
    }
    // Processing rows are never "abandoned": user code may have run.
    expect((await db.storage.getJob(running.leases[0].id))?.status).toBe(JobStatus.Processing);
    // The rescued claim is stale; the rows are claimable again.
    expect(await db.storage.markAsProcessing(stale.leases)).toEqual([]);
    expect((await claim(db.storage, queue, 10)).rows.map((r) => r.id).sort()).toEqual(
      stale.rows.map((r) => r.id).sort(),
    );
  });

  it('invariant 6: recoverAbandoned honours its limit', async () => {
    const queue = uniqueQueue('abandon.limit');
    await db.storage.enqueueMany(Array.from({ length: 5 }, () => ({ queue })));
    const c = await claim(db.storage, queue, 5);
    await backdate(
      db,
      'hot',
      'last_updated_utc',
      c.rows.map((r) => r.id),
      HOUR,
    );
    expect(await db.storage.recoverAbandoned(600_000, 2)).toBe(2);
    expect(await db.storage.recoverAbandoned(600_000, 100)).toBe(3);
    expect(await db.storage.recoverAbandoned(600_000, 100)).toBe(0);
  });

  it('invariant 6: recoverAbandoned with a 1 ms timeout takes a just-claimed row after a short bounded wait', async () => {
    const queue = uniqueQueue('abandon.fast');
    const lease = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    await waitFor('recovered', async () => (await db.storage.recoverAbandoned(1)) === 1, {
      timeoutMs: 5_000,
      intervalMs: 20,
    });
    expect((await db.storage.getJob(lease.id))?.status).toBe(JobStatus.Pending);
    expect(await db.storage.markAsProcessing([lease])).toEqual([]);
  });

  it('invariant 6: archiveZombies moves expired Processing rows to DLQ as Zombie and leaves fresh ones', async () => {
    const queue = uniqueQueue('zombie');
    const zombie = await startJob(db.storage, queue);
    const alive = await startJob(db.storage, queue);
    const buffered = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    await backdate(db, 'hot', 'heartbeat_utc', [zombie.id], HOUR);
    await backdate(db, 'hot', 'last_updated_utc', [zombie.id, buffered.id], HOUR);
    const before = await countersOf(db.storage, queue);

    const result = await db.storage.archiveZombies(600_000);
    expect(await moved(Promise.resolve(result))).toEqual({ dlq: [zombie.id], retried: [] });
    // The row as the rescue found it: its queue and type, the worker that lost it, no payload.
    expect(result.jobs).toEqual([
      {
        pillar: 'dlq',
        job: expect.objectContaining({
          id: zombie.id,
          queue,
          status: JobStatus.Processing,
          attemptCount: 1,
          workerId: zombie.workerId,
          leaseId: zombie.leaseId,
          heartbeatUtc: expect.any(Date),
          payload: null,
        }),
      },
    ]);
    expect(result.jobs[0].job.type).toMatch(/^started\./);
    await expectOnlyIn(db, zombie.id, 'dlq');
    expect(await db.storage.getJob(zombie.id)).toMatchObject({
      status: JobStatus.Zombie,
      failureReason: FailureReason.Zombie,
      attemptCount: 1,
    });
    expect((await countersOf(db.storage, queue)).failedTotal).toBe(before.failedTotal + 1);
    expect((await db.storage.getJob(alive.id))?.status).toBe(JobStatus.Processing);
    expect((await db.storage.getJob(buffered.id))?.status).toBe(JobStatus.Fetched);
    // The zombie's run can never finalise it now.
    expect(await db.storage.archiveSucceeded([{ ...zombie, durationMs: 1 }])).toEqual([]);
    expect(await db.storage.keepAlive(zombie.workerId, [zombie])).toEqual({
      touched: 0,
      cancelRequested: [],
    });
  });

  it('invariant 6: a queue ZombieTimeoutSeconds overrides the default in both directions', async () => {
    const short = uniqueQueue('zombie.short');
    const plain = uniqueQueue('zombie.plain');
    const long = uniqueQueue('zombie.long');
    await db.storage.updateQueue(short, { zombieTimeoutSeconds: 1 });
    await db.storage.updateQueue(long, { zombieTimeoutSeconds: 3_600 });
    const s = await startJob(db.storage, short);
    const p = await startJob(db.storage, plain);
    const l = await startJob(db.storage, long);
    await backdate(db, 'hot', 'heartbeat_utc', [s.id, p.id, l.id], 5_000);

    expect(await moved(db.storage.archiveZombies(600_000))).toEqual({ dlq: [s.id], retried: [] });
    expect(await moved(db.storage.archiveZombies(1_000))).toEqual({ dlq: [p.id], retried: [] });
    expect((await db.storage.getJob(l.id))?.status).toBe(JobStatus.Processing);
  });

  it('invariant 6: with RetryZombies an expired row returns to Pending with LastError, and its old lease cannot finalise it', async () => {
    const queue = uniqueQueue('zombie.retry');
    await db.storage.updateQueue(queue, { retryZombies: true });
    expect((await db.storage.getQueues()).find((q) => q.name === queue)?.retryZombies).toBe(true);
    const old = await startJob(db.storage, queue);
    await backdate(db, 'hot', 'heartbeat_utc', [old.id], HOUR);
    const before = await countersOf(db.storage, queue);

    const result = await db.storage.archiveZombies(600_000);
    expect(await moved(Promise.resolve(result))).toEqual({ dlq: [], retried: [old.id] });
    // The row before the move: the worker that lost it, though the job no longer names it.
    expect(result.jobs).toEqual([
      {
        pillar: 'hot',
        job: expect.objectContaining({
          id: old.id,
          queue,
          workerId: old.workerId,
          attemptCount: 1,
        }),
      },
    ]);
    await expectOnlyIn(db, old.id, 'hot');
    const view = await db.storage.getJob(old.id);
    expect(view).toMatchObject({
      status: JobStatus.Pending,
      workerId: null,
      leaseId: null,
      attemptCount: 1,
    });
    expect(view?.lastError).toEqual(expect.any(String));
    expect(view!.lastError!.length).toBeGreaterThan(0);
    const after = await countersOf(db.storage, queue);
    expect(after.failedTotal).toBe(before.failedTotal);

    // Re-claimed once by another worker; the old run is fenced out.
    const next = (await claim(db.storage, queue, 1, newWorkerId('next'))).leases[0];
    expect(next.id).toBe(old.id);
    expect(await db.storage.markAsProcessing([old])).toEqual([]);
    expect(await db.storage.markAsProcessing([next])).toEqual([old.id]);
    expect((await db.storage.getJob(old.id))?.attemptCount).toBe(2);
    expect(await db.storage.archiveSucceeded([{ ...old, durationMs: 1 }])).toEqual([]);
    expect(await db.storage.moveToDlq(old, { reason: FailureReason.Timeout, error: 'late' })).toBe(
      0,
    );
    expect(await db.storage.archiveSucceeded([{ ...next, durationMs: 1 }])).toEqual([
      { id: old.id, leaseId: next.leaseId },
    ]);
    await expectOnlyIn(db, old.id, 'archive');
  });

  it('invariant 6: a zombie whose handler opts into retryZombies returns to Pending; another type of the same queue goes to the DLQ', async () => {
    const queue = uniqueQueue('zombie.handler');
    const other = uniqueQueue('zombie.handler.other');
    const idempotent = await startJob(db.storage, queue, { type: 'idempotent.v1' });
    const charge = await startJob(db.storage, queue, { type: 'charge.v1' });
    // The same type on a queue without a rule: a rule is per (queue, type), not per type.
    const elsewhere = await startJob(db.storage, other, { type: 'idempotent.v1' });
    await backdate(db, 'hot', 'heartbeat_utc', [idempotent.id, charge.id, elsewhere.id], HOUR);
    const before = await countersOf(db.storage, queue);

    const result = await db.storage.archiveZombies(600_000, undefined, [
      { queue, type: 'idempotent.v1', retry: true },
      { queue, type: 'charge.v1', retry: false },
    ]);
    expect(result.retried).toEqual([idempotent.id]);
    expect(result.dlq.sort()).toEqual([charge.id, elsewhere.id].sort());

    await expectOnlyIn(db, idempotent.id, 'hot');
    expect(await db.storage.getJob(idempotent.id)).toMatchObject({
      status: JobStatus.Pending,
      workerId: null,
      leaseId: null,
      attemptCount: 1,
    });
    expect((await db.storage.getJob(idempotent.id))?.lastError).toMatch(/Zombie/);
    await expectOnlyIn(db, charge.id, 'dlq');
    expect(await db.storage.getJob(charge.id)).toMatchObject({
      status: JobStatus.Zombie,
      failureReason: FailureReason.Zombie,
    });
    const after = await countersOf(db.storage, queue);
    expect(after.retriedTotal).toBe(before.retriedTotal + 1);
    expect(after.failedTotal).toBe(before.failedTotal + 1);
    // The retried run is fenced out like any rescued run.
    expect(await db.storage.archiveSucceeded([{ ...idempotent, durationMs: 1 }])).toEqual([]);
  });

  it('invariant 6: handler rules resolve like a claim: the exact type wins over the queue-wide rule', async () => {
    const queue = uniqueQueue('zombie.wide');
    const wide = await startJob(db.storage, queue, { type: 'any.v1' });
    const optedOut = await startJob(db.storage, queue, { type: 'charge.v1' });
    await backdate(db, 'hot', 'heartbeat_utc', [wide.id, optedOut.id], HOUR);

    expect(
      await moved(
        db.storage.archiveZombies(600_000, undefined, [
          { queue, retry: true },
          { queue, type: 'charge.v1', retry: false },
        ]),
      ),
    ).toEqual({ dlq: [optedOut.id], retried: [wide.id] });
    expect((await db.storage.getJob(wide.id))?.status).toBe(JobStatus.Pending);
    await expectOnlyIn(db, optedOut.id, 'dlq');
  });

  it('invariant 6: a queue with RetryZombies retries its zombies whatever the handler rules say', async () => {
    const queue = uniqueQueue('zombie.queue-flag');
    await db.storage.updateQueue(queue, { retryZombies: true });
    const z = await startJob(db.storage, queue, { type: 'charge.v1' });
    await backdate(db, 'hot', 'heartbeat_utc', [z.id], HOUR);
    expect(
      await moved(
        db.storage.archiveZombies(600_000, undefined, [{ queue, type: 'charge.v1', retry: false }]),
      ),
    ).toEqual({ dlq: [], retried: [z.id] });
  });

  it('invariant 6: archiveZombies refuses bad handler rules before touching a row', async () => {
    const queue = uniqueQueue('zombie.rules');
    const z = await startJob(db.storage, queue, { type: 'a.v1' });
    await backdate(db, 'hot', 'heartbeat_utc', [z.id], HOUR);
    const rescue = (rules: unknown) =>
      db.storage.archiveZombies(600_000, undefined, rules as never);
    await expectValidationError(rescue('nope'), 'retryRules');
    await expectValidationError(
      rescue([{ queue, type: 'a.v1', retry: 'yes' }]),
      'retryRules[0].retry',
    );
    await expectValidationError(rescue([{ queue: '', retry: true }]), 'retryRules[0].queue');
    await expectValidationError(
      rescue([{ queue, type: 'x\u0000', retry: true }]),
      'retryRules[0].type',
    );
    await expectValidationError(
      rescue([
        { queue, type: 'a.v1', retry: true },
        { queue, type: 'a.v1', retry: false },
      ]),
      'retryRules[1]',
    );
    await expectValidationError(
      rescue(Array.from({ length: 10_001 }, (_, i) => ({ queue, type: `t${i}`, retry: true }))),
      'retryRules',
    );
    expect((await db.storage.getJob(z.id))?.status).toBe(JobStatus.Processing);
  });

  it('invariant 6: archiveZombies honours its limit, and a 1 ms default takes a fresh row after a short bounded wait', async () => {
    const queue = uniqueQueue('zombie.limit');
    const leases = [
      await startJob(db.storage, queue),
      await startJob(db.storage, queue),
      await startJob(db.storage, queue),
    ];
    await backdate(
      db,
      'hot',
      'heartbeat_utc',
      leases.map((l) => l.id),
      HOUR,
    );
    expect((await db.storage.archiveZombies(600_000, 2)).dlq).toHaveLength(2);
    expect((await db.storage.archiveZombies(600_000, 2)).dlq).toHaveLength(1);
    expect((await db.storage.archiveZombies(600_000, 2)).dlq).toHaveLength(0);

    const fresh = await startJob(db.storage, queue);
    await waitFor(
      'zombie rescued',
      async () => (await db.storage.archiveZombies(1)).dlq.includes(fresh.id),
      { timeoutMs: 5_000, intervalMs: 20 },
    );
    await expectOnlyIn(db, fresh.id, 'dlq');
  });
});
