import { JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import type { JobLease } from '../../libs/chokaq/src/interfaces/job.interface';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { backdate, backdateDue, claim, countersOf, startJob, uniqueQueue } from './helpers';

const MINUTE = 60_000;

/**
 * Jobs an open circuit breaker holds back: the release with a delay marks them held since they
 * were first due, the queue's health counts them in its lag, and a run that is rescheduled (a
 * failed run, a retried zombie) is no longer held. Every dialect.
 */
describeEachDialect('storage contract: jobs held by an open circuit', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  const healthOf = async (queue: string) =>
    (await db.storage.getQueueHealth()).find((h) => h.queue === queue)!;

  /** Moves a held row's due time back by `ms`, so the next claim takes it again. */
  const makeDue = (id: string, ms: number) => backdateDue(db, [id], ms, 'scheduled_at_utc');

  /** Enqueues one job of its own type, due a minute ago, and claims it (Fetched). */
  async function claimedMinuteOld(queue: string): Promise<JobLease> {
    const lease = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    await backdate(db, 'hot', 'enqueued_at_utc', [lease.id], MINUTE);
    await backdateDue(db, [lease.id], MINUTE, 'scheduled_at_utc');
    return lease;
  }

  it('a release with a delay holds the job since it was first due; health counts it in the lag; held again, it keeps that instant', async () => {
    const queue = uniqueQueue('held');
    const lease = await claimedMinuteOld(queue);
    const before = (await db.storage.getJob(lease.id))!;
    const firstDue = before.scheduledAtUtc ?? before.enqueuedAtUtc;
    expect(await db.storage.release([lease], 10 * MINUTE)).toBe(1);

    const held = (await db.storage.getJob(lease.id))!;
    expect(held.status).toBe(JobStatus.Pending);
    expect(held.heldSinceUtc?.getTime()).toBe(firstDue.getTime());
    expect(held.scheduledAtUtc!.getTime()).toBeGreaterThan(Date.now() + 5 * MINUTE);
    const [item] = (await db.storage.listActive({ filter: { queue }, limit: 5 })).items;
    expect(item.heldSinceUtc?.getTime()).toBe(firstDue.getTime());

    const h = await healthOf(queue);
    expect(h).toMatchObject({ duePending: 0, heldPending: 1 });
    expect(h.heldUntilUtc?.getTime()).toBe(held.scheduledAtUtc!.getTime());
    expect(h.maxLagMs).toBeGreaterThanOrEqual(MINUTE - 1_000);
    expect(h.maxLagMs).toBeLessThan(5 * MINUTE);
    expect(h.avgLagMs).toBe(h.maxLagMs);
    expect(await countersOf(db.storage, queue)).toMatchObject({
      deferredTotal: 1,
      retriedTotal: 0,
    });

    // Due again, claimed and held once more: still held since it was first due.
    await makeDue(lease.id, 11 * MINUTE);
    const again = await claim(db.storage, queue, 1);
    expect(again.rows.map((r) => r.id)).toEqual([lease.id]);
    expect(await db.storage.release(again.leases, 10 * MINUTE)).toBe(1);
    expect((await db.storage.getJob(lease.id))!.heldSinceUtc?.getTime()).toBe(firstDue.getTime());
    expect(await countersOf(db.storage, queue)).toMatchObject({ deferredTotal: 2 });
  });

  it('a release without a delay (pause, shutdown) neither holds the job nor counts a deferral', async () => {
    const queue = uniqueQueue('held.none');
    const lease = await claimedMinuteOld(queue);
    expect(await db.storage.release([lease])).toBe(1);
    expect((await db.storage.getJob(lease.id))!.heldSinceUtc).toBeNull();
    expect(await healthOf(queue)).toMatchObject({ duePending: 1, heldPending: 0 });
    expect(await countersOf(db.storage, queue)).toMatchObject({
      deferredTotal: 0,
      retriedTotal: 0,
    });
  });

  it('a held job that runs and is rescheduled after a failure is no longer held', async () => {
    const queue = uniqueQueue('held.retry');
    const lease = await claimedMinuteOld(queue);
    expect(await db.storage.release([lease], 10 * MINUTE)).toBe(1);
    await makeDue(lease.id, 11 * MINUTE);
    const run = await claim(db.storage, queue, 1);
    expect(await db.storage.markAsProcessing(run.leases)).toHaveLength(1);
    expect(await db.storage.rescheduleForRetry(run.leases[0], 10 * MINUTE, 'Error: again')).toBe(1);
    expect((await db.storage.getJob(lease.id))!.heldSinceUtc).toBeNull();
    expect(await healthOf(queue)).toMatchObject({ duePending: 0, heldPending: 0, maxLagMs: 0 });
  });

  it('a held job whose run became a zombie and is retried is no longer held', async () => {
    const queue = uniqueQueue('held.zombie');
    await db.storage.updateQueue(queue, { retryZombies: true });
    const lease = await claimedMinuteOld(queue);
    expect(await db.storage.release([lease], 10 * MINUTE)).toBe(1);
    await makeDue(lease.id, 11 * MINUTE);
    const run = await claim(db.storage, queue, 1);
    expect(await db.storage.markAsProcessing(run.leases)).toHaveLength(1);
    await backdate(db, 'hot', 'heartbeat_utc', [lease.id], 60 * MINUTE);
    expect((await db.storage.archiveZombies(600_000)).retried).toContain(lease.id);
    expect((await db.storage.getJob(lease.id))!.heldSinceUtc).toBeNull();
  });
});
