import { FailureReason, JobStatus } from '../../libs/chokaq/src/storage/job-status';
import { TestDatabase, describeEachDialect } from '../support/dialects';
import {
  backdate,
  claim,
  countersOf,
  expectOnlyIn,
  newWorkerId,
  startJob,
  uniqueQueue,
} from './helpers';
import { waitFor } from '../support/wait-for';

/**
 * SPEC §8 invariant 6: Fetched rows untouched past the timeout return to Pending; Processing rows
 * whose heartbeat expired go to the DLQ as Zombie (or back to Pending where RetryZombies is set),
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

    expect(await db.storage.archiveZombies(600_000)).toEqual({ dlq: [zombie.id], retried: [] });
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

    expect(await db.storage.archiveZombies(600_000)).toEqual({ dlq: [s.id], retried: [] });
    expect(await db.storage.archiveZombies(1_000)).toEqual({ dlq: [p.id], retried: [] });
    expect((await db.storage.getJob(l.id))?.status).toBe(JobStatus.Processing);
  });

  it('invariant 6: with RetryZombies an expired row returns to Pending with LastError, and its old lease cannot finalise it', async () => {
    const queue = uniqueQueue('zombie.retry');
    await db.storage.updateQueue(queue, { retryZombies: true });
    expect((await db.storage.getQueues()).find((q) => q.name === queue)?.retryZombies).toBe(true);
    const old = await startJob(db.storage, queue);
    await backdate(db, 'hot', 'heartbeat_utc', [old.id], HOUR);
    const before = await countersOf(db.storage, queue);

    expect(await db.storage.archiveZombies(600_000)).toEqual({ dlq: [], retried: [old.id] });
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
