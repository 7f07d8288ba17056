import { randomUUID } from 'node:crypto';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { JobLease } from '../../libs/chokaq/src/interfaces/job.interface';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import {
  backdate,
  claim,
  countersOf,
  expectOnlyIn,
  leaseOf,
  newWorkerId,
  pillarsOf,
  startJob,
  uniqueQueue,
} from './helpers';

/**
 * SPEC §8 invariant 3: ownership is the fencing token (Id, WorkerId, LeaseId). A stale owner can
 * neither start, heartbeat, release, retry nor finalise, and its attempts change nothing.
 */
describeEachDialect('storage contract: ownership (fencing token)', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  /** Tries every worker-owned operation with `stale`; each must return zero / empty and change nothing. */
  async function expectStaleRejected(stale: JobLease, queue: string): Promise<void> {
    const state = async () => ({
      job: await db.storage.getJob(stale.id),
      pillars: await pillarsOf(db, stale.id),
      counters: await countersOf(db.storage, queue),
    });
    const before = await state();
    expect(await db.storage.markAsProcessing([stale])).toEqual([]);
    expect(await db.storage.keepAlive(stale.workerId, [stale])).toEqual({
      touched: 0,
      cancelRequested: [],
    });
    expect(await db.storage.reportProgress(stale, 50)).toBe(0);
    expect(await db.storage.release([stale])).toBe(0);
    expect(await db.storage.release([stale], 1_000)).toBe(0);
    expect(await db.storage.rescheduleForRetry(stale, 1_000, 'Error: stale retry')).toBe(0);
    expect(await db.storage.archiveSucceeded([{ ...stale, durationMs: 1 }])).toEqual([]);
    expect(
      await db.storage.moveToDlq(stale, {
        reason: FailureReason.MaxRetriesExceeded,
        error: 'stale',
      }),
    ).toBe(0);
    expect(await state()).toEqual(before);
  }

  /** The current owner still owns the row after the stale attempts: it can finalise it. */
  async function expectOwnerCanFinish(lease: JobLease): Promise<void> {
    expect(await db.storage.archiveSucceeded([{ ...lease, durationMs: 2 }])).toEqual([
      { id: lease.id, leaseId: lease.leaseId },
    ]);
    await expectOnlyIn(db, lease.id, 'archive');
  }

  it('invariant 3: a wrong workerId (with the right leaseId) can do nothing', async () => {
    const queue = uniqueQueue('own.worker');
    const lease = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    const stale = leaseOf(lease.id, newWorkerId('intruder'), lease.leaseId);
    await expectStaleRejected(stale, queue);
    expect(await db.storage.markAsProcessing([lease])).toEqual([lease.id]);
    await expectStaleRejected(stale, queue);
    await expectOwnerCanFinish(lease);
    await expectStaleRejected(stale, queue);
  });

  it('invariant 3: a wrong leaseId (with the right workerId) can do nothing', async () => {
    const queue = uniqueQueue('own.lease');
    const lease = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    const stale = leaseOf(lease.id, lease.workerId, randomUUID());
    await expectStaleRejected(stale, queue);
    expect(await db.storage.markAsProcessing([lease])).toEqual([lease.id]);
    await expectStaleRejected(stale, queue);
    await expectOwnerCanFinish(lease);
  });

  it('invariant 3: released, then re-claimed by the SAME worker id with a new lease: the old lease is stale', async () => {
    const queue = uniqueQueue('own.release');
    const old = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    expect(await db.storage.release([old])).toBe(1);
    await expectStaleRejected(old, queue);
    const again = await claim(db.storage, queue, 1, old.workerId);
    expect(again.rows.map((r) => r.id)).toEqual([old.id]);
    expect(again.leaseId).not.toBe(old.leaseId);
    const current = again.leases[0];
    await expectStaleRejected(old, queue);
    expect(await db.storage.markAsProcessing([current])).toEqual([old.id]);
    await expectStaleRejected(old, queue);

    // Retried (Processing → Pending) and re-claimed by the same worker: the previous lease is stale too.
    expect(await db.storage.rescheduleForRetry(current, 0, 'Error: retry')).toBe(1);
    await expectStaleRejected(current, queue);
    const third = (await claim(db.storage, queue, 1, old.workerId)).leases[0];
    expect(third.id).toBe(old.id);
    await db.storage.markAsProcessing([third]);
    await expectStaleRejected(current, queue);
    await expectStaleRejected(old, queue);
    await expectOwnerCanFinish(third);
  });

  it('invariant 3: rescued by recoverAbandoned, then re-claimed by the same worker: the old lease is stale', async () => {
    const queue = uniqueQueue('own.recover');
    const old = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    await backdate(db, 'hot', 'last_updated_utc', [old.id], 3_600_000);
    expect(await db.storage.recoverAbandoned(600_000)).toBeGreaterThanOrEqual(1);
    expect((await db.storage.getJob(old.id))?.status).toBe(JobStatus.Pending);
    await expectStaleRejected(old, queue);
    const current = (await claim(db.storage, queue, 1, old.workerId)).leases[0];
    await expectStaleRejected(old, queue);
    await db.storage.markAsProcessing([current]);
    await expectStaleRejected(old, queue);
    await expectOwnerCanFinish(current);
  });

  it('invariant 3: rescued as a zombie (to Pending with RetryZombies, or to DLQ): the old lease is stale', async () => {
    const queue = uniqueQueue('own.zombie');
    await db.storage.updateQueue(queue, { retryZombies: true });
    const old = await startJob(db.storage, queue);
    await backdate(db, 'hot', 'heartbeat_utc', [old.id], 3_600_000);
    expect((await db.storage.archiveZombies(600_000)).retried).toContain(old.id);
    await expectStaleRejected(old, queue);
    const current = (await claim(db.storage, queue, 1, old.workerId)).leases[0];
    await expectStaleRejected(old, queue);
    await db.storage.markAsProcessing([current]);
    await expectStaleRejected(old, queue);
    await expectOwnerCanFinish(current);

    const dlqQueue = uniqueQueue('own.zombie.dlq');
    const dead = await startJob(db.storage, dlqQueue);
    await backdate(db, 'hot', 'heartbeat_utc', [dead.id], 3_600_000);
    expect((await db.storage.archiveZombies(600_000)).dlq).toContain(dead.id);
    await expectStaleRejected(dead, dlqQueue);
  });

  it('invariant 3: cancelled, resurrected and re-claimed by the same worker: the old lease is stale', async () => {
    const queue = uniqueQueue('own.cancel');
    // Fetched and cancelled: moved to the DLQ at once.
    const old = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    expect((await db.storage.cancel([old.id])).cancelled).toEqual([old.id]);
    await expectStaleRejected(old, queue);
    expect(await db.storage.resurrect(old.id)).toBe(1);
    await expectStaleRejected(old, queue);
    const current = (await claim(db.storage, queue, 1, old.workerId)).leases[0];
    expect(current.id).toBe(old.id);
    await expectStaleRejected(old, queue);
    await db.storage.markAsProcessing([current]);
    await expectStaleRejected(old, queue);

    // Processing, cancel requested, moved to DLQ by its owner, resurrected and re-claimed by the
    // same process while the first run is (in this story) still going: that run cannot finalise.
    expect((await db.storage.cancel([current.id])).cancelRequested).toEqual([current.id]);
    expect(
      await db.storage.moveToDlq(current, { reason: FailureReason.Cancelled, error: 'cancelled' }),
    ).toBe(1);
    expect(await db.storage.resurrect(current.id)).toBe(1);
    const newest = (await claim(db.storage, queue, 1, old.workerId)).leases[0];
    await db.storage.markAsProcessing([newest]);
    await expectStaleRejected(current, queue);
    await expectStaleRejected(old, queue);
    // The resurrected job starts clean: no cancel request carried over.
    expect(await db.storage.keepAlive(newest.workerId, [newest])).toEqual({
      touched: 1,
      cancelRequested: [],
    });
    await expectOwnerCanFinish(newest);
  });

  it('invariant 3: a finalised job cannot be touched by its last lease', async () => {
    const queue = uniqueQueue('own.final');
    const archived = await startJob(db.storage, queue);
    await db.storage.archiveSucceeded([{ ...archived, durationMs: 1 }]);
    await expectStaleRejected(archived, queue);
    const failed = await startJob(db.storage, queue);
    await db.storage.moveToDlq(failed, { reason: FailureReason.FatalError, error: 'x' });
    await expectStaleRejected(failed, queue);
  });

  it('invariant 3: a batch mixing owned and stale leases applies only the owned ones', async () => {
    const queue = uniqueQueue('own.batch');
    await db.storage.enqueueMany(Array.from({ length: 4 }, () => ({ queue })));
    const c = await claim(db.storage, queue, 4);
    const [a, b, x, y] = c.leases;
    const staleX = leaseOf(x.id, x.workerId, randomUUID());
    const staleY = leaseOf(y.id, newWorkerId('other'), y.leaseId);
    expect((await db.storage.markAsProcessing([a, staleX, b, staleY])).sort()).toEqual(
      [a.id, b.id].sort(),
    );
    expect((await db.storage.getJob(x.id))?.status).toBe(JobStatus.Fetched);
    expect((await db.storage.keepAlive(c.workerId, [a, staleX, b])).touched).toBe(2);
    expect(
      await db.storage.archiveSucceeded([
        { ...a, durationMs: 1 },
        { ...staleX, durationMs: 1 },
        { ...staleY, durationMs: 1 },
      ]),
    ).toEqual([{ id: a.id, leaseId: a.leaseId }]);
    expect(await db.storage.release([x, staleY, b])).toBe(1); // b is Processing: release needs Fetched
    expect((await db.storage.getJob(x.id))?.status).toBe(JobStatus.Pending);
    expect((await db.storage.getJob(y.id))?.status).toBe(JobStatus.Fetched);
    expect((await db.storage.getJob(b.id))?.status).toBe(JobStatus.Processing);
  });

  it('keepAlive refreshes heartbeat (Processing) and LastUpdatedUtc (Fetched) and returns cancel-requested ids', async () => {
    const queue = uniqueQueue('keepalive');
    await db.storage.enqueueMany([{ queue }, { queue }, { queue }]);
    const c = await claim(db.storage, queue, 3);
    const [running, buffered, cancelled] = c.leases;
    await db.storage.markAsProcessing([running, cancelled]);
    await backdate(db, 'hot', 'heartbeat_utc', [running.id, cancelled.id], 3_600_000);
    await backdate(db, 'hot', 'last_updated_utc', [buffered.id], 3_600_000);
    expect((await db.storage.cancel([cancelled.id])).cancelRequested).toEqual([cancelled.id]);

    const foreign = await startJob(db.storage, queue, {}, {});
    const beat = await db.storage.keepAlive(c.workerId, [running, buffered, cancelled]);
    expect(beat.touched).toBe(3);
    expect(beat.cancelRequested).toEqual([cancelled.id]);

    const now = (await db.storage.now()).getTime();
    const runningView = await db.storage.getJob(running.id);
    expect(now - runningView!.heartbeatUtc!.getTime()).toBeLessThan(60_000);
    const bufferedView = await db.storage.getJob(buffered.id);
    expect(now - bufferedView!.lastUpdatedUtc!.getTime()).toBeLessThan(60_000);
    // Refreshed rows are neither abandoned nor zombies.
    await db.storage.recoverAbandoned(600_000);
    await db.storage.archiveZombies(600_000);
    expect((await db.storage.getJob(buffered.id))?.status).toBe(JobStatus.Fetched);
    expect((await db.storage.getJob(running.id))?.status).toBe(JobStatus.Processing);

    // Another worker's lease in the list is not touched.
    expect(
      await db.storage.keepAlive(c.workerId, [running, { ...foreign, workerId: c.workerId }]),
    ).toEqual({
      touched: 1,
      cancelRequested: [],
    });
    expect(await db.storage.keepAlive(c.workerId, [])).toEqual({ touched: 0, cancelRequested: [] });
  });

  it('reportProgress writes progress only for the owner of a Processing row', async () => {
    const queue = uniqueQueue('own.progress');
    const lease = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    expect(await db.storage.reportProgress(lease, 10)).toBe(0); // Fetched: not started yet
    expect(await db.storage.markAsProcessing([lease])).toEqual([lease.id]);
    expect(await db.storage.reportProgress(lease, 42.4)).toBe(1);
    expect((await db.storage.getJob(lease.id))?.progress).toBe(42);
    await expect(db.storage.reportProgress(lease, 101)).rejects.toThrow(/percent/);
    await expectOwnerCanFinish(lease);
  });

  it('reportProgress stores its note with the percentage; a report without one clears it; the note travels with the job', async () => {
    const queue = uniqueQueue('own.progress-note');
    const note = 'step 2 of 5: ünïcödé, "quoted", 50% done';
    const done = await startJob(db.storage, queue);
    expect(await db.storage.reportProgress(done, 40, note)).toBe(1);
    expect(await db.storage.getJob(done.id)).toMatchObject({ progress: 40, progressNote: note });
    expect(await db.storage.reportProgress(done, 60)).toBe(1);
    expect(await db.storage.getJob(done.id)).toMatchObject({ progress: 60, progressNote: null });
    expect(await db.storage.reportProgress(done, 90, 'almost')).toBe(1);
    // A stale lease writes neither.
    const stale = leaseOf(done.id, done.workerId, randomUUID());
    expect(await db.storage.reportProgress(stale, 10, 'stale')).toBe(0);
    expect(await db.storage.archiveSucceeded([{ ...done, durationMs: 1 }])).toHaveLength(1);
    expect(await db.storage.getJob(done.id)).toMatchObject({
      pillar: 'archive',
      progress: 90,
      progressNote: 'almost',
    });

    const failed = await startJob(db.storage, queue);
    await db.storage.reportProgress(failed, 30, 'uploading part 3');
    await db.storage.moveToDlq(failed, { reason: FailureReason.Timeout, error: 'Error: slow' });
    expect(await db.storage.getJob(failed.id)).toMatchObject({
      pillar: 'dlq',
      progressNote: 'uploading part 3',
    });
    // Resurrected, it starts afresh: no progress, no note.
    expect(await db.storage.resurrect(failed.id)).toBe(1);
    expect(await db.storage.getJob(failed.id)).toMatchObject({
      pillar: 'hot',
      progress: null,
      progressNote: null,
    });
    // A note is text without NUL (the runtime replaces it before it gets here).
    const running = await startJob(db.storage, queue);
    await expect(db.storage.reportProgress(running, 5, 'a\u0000b')).rejects.toThrow(/note/);
  });

  it('markAsProcessing is idempotent for its own lease (a retry after an ambiguous commit)', async () => {
    const queue = uniqueQueue('own.retry-start');
    const lease = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    expect(await db.storage.markAsProcessing([lease])).toEqual([lease.id]);
    // The reply of the first call was "lost": the caller retries with the same lease.
    expect(await db.storage.markAsProcessing([lease])).toEqual([lease.id]);
    expect((await db.storage.getJob(lease.id))?.attemptCount).toBe(1);
    // Any other lease still gets nothing.
    const stale = leaseOf(lease.id, lease.workerId, randomUUID());
    expect(await db.storage.markAsProcessing([stale])).toEqual([]);
    await expectOwnerCanFinish(lease);
  });
});
