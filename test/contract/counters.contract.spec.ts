import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { backdate, claim, countRows, countersOf, startJob, statsOf, uniqueQueue } from './helpers';

/**
 * SPEC §8 invariant 8: lifetime counters equal the moves performed, whatever purges and retention do
 * later; plus the telemetry reads built on counters and buckets (health, throughput, top errors).
 */
describeEachDialect('storage contract: counters and telemetry', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  const HOUR = 3_600_000;

  it('invariant 8: 20 concurrent archives → SucceededTotal + 20 (per queue and in the summary)', async () => {
    const queue = uniqueQueue('inv8');
    const others: JobStorage[] = await Promise.all([
      db.openAnother({ poolSize: 4 }),
      db.openAnother({ poolSize: 4 }),
    ]);
    try {
      await db.storage.enqueueMany(Array.from({ length: 20 }, () => ({ queue })));
      const c = await claim(db.storage, queue, 20);
      expect(c.rows).toHaveLength(20);
      expect(await db.storage.markAsProcessing(c.leases)).toHaveLength(20);
      const before = await countersOf(db.storage, queue);
      const summaryBefore = await db.storage.getSummary();

      const storages = [db.storage, ...others];
      const results = await Promise.all(
        c.leases.map((lease, i) =>
          storages[i % storages.length].archiveSucceeded([{ ...lease, durationMs: 10 + i }]),
        ),
      );
      expect(
        results
          .flat()
          .map((r) => r.id)
          .sort(),
      ).toEqual(c.leases.map((l) => l.id).sort());

      expect(await countersOf(db.storage, queue)).toEqual({
        ...before,
        succeededTotal: before.succeededTotal + 20,
      });
      const summary = await db.storage.getSummary();
      expect(summary.succeededTotal).toBe(summaryBefore.succeededTotal + 20);
      // Exact where the dialect keeps the count (SQLite); an estimate elsewhere.
      if (!summary.estimated.archived) expect(summary.archived).toBe(summaryBefore.archived + 20);
      expect(summary.processing).toBe(summaryBefore.processing - 20);
      expect(await db.storage.countExactly({ pillar: 'archive', filter: { queue } })).toBe(20);
    } finally {
      await Promise.all(others.map((s) => s.close()));
    }
  });

  it('invariant 8: retried, failed, cancelled and resurrected totals equal the moves, unchanged by purgeDlq and applyRetention', async () => {
    const queue = uniqueQueue('inv8.all');
    await db.storage.enqueueMany(Array.from({ length: 16 }, () => ({ queue })));
    const expected = {
      succeededTotal: 0,
      failedTotal: 0,
      cancelledTotal: 0,
      retriedTotal: 0,
      deferredTotal: 0,
      resurrectedTotal: 0,
    };
    const check = async () => expect(await countersOf(db.storage, queue)).toEqual(expected);
    await check();

    // 10 concurrent retries.
    let c = await claim(db.storage, queue, 10);
    await db.storage.markAsProcessing(c.leases);
    const retried = await Promise.all(
      c.leases.map((l) => db.storage.rescheduleForRetry(l, 0, 'Error: retry')),
    );
    expect(retried).toEqual(Array(10).fill(1));
    expected.retriedTotal += 10;
    await check();

    // Release with a delay (an open circuit) counts as a deferral, not a retry; without a delay
    // it counts as neither.
    c = await claim(db.storage, queue, 3);
    expect(await db.storage.release(c.leases.slice(0, 2), 10)).toBe(2);
    expect(await db.storage.release(c.leases.slice(2))).toBe(1);
    expected.deferredTotal += 2;
    await check();

    // Failures of every kind: MaxRetries, Fatal, Zombie → FailedTotal; Cancelled → CancelledTotal.
    c = await claim(db.storage, queue, 4);
    await db.storage.markAsProcessing(c.leases);
    const dlqMoves = await Promise.all([
      db.storage.moveToDlq(c.leases[0], { reason: FailureReason.MaxRetriesExceeded, error: 'a' }),
      db.storage.moveToDlq(c.leases[1], { reason: FailureReason.FatalError, error: 'b' }),
      db.storage.moveToDlq(c.leases[2], { reason: FailureReason.Cancelled, error: 'c' }),
    ]);
    expect(dlqMoves).toEqual([1, 1, 1]);
    expected.failedTotal += 2;
    expected.cancelledTotal += 1;
    await check();
    await backdate(db, 'hot', 'heartbeat_utc', [c.leases[3].id], HOUR);
    expect((await db.storage.archiveZombies(600_000)).dlq).toEqual([c.leases[3].id]);
    expected.failedTotal += 1;
    await check();

    const pending = (await db.storage.listActive({ filter: { queue }, limit: 100 })).items
      .filter((j) => j.status === JobStatus.Pending)
      .map((j) => j.id);
    expect((await db.storage.cancel(pending.slice(0, 2))).cancelled).toHaveLength(2);
    expected.cancelledTotal += 2;
    await check();

    const dlqIds = (await db.storage.listDlq({ filter: { queue }, limit: 100 })).items.map(
      (j) => j.id,
    );
    expect(dlqIds).toHaveLength(6);
    expect(await db.storage.resurrect(dlqIds[0])).toBe(1);
    expect(await db.storage.resurrectMany([dlqIds[1], dlqIds[2]])).toHaveLength(2);
    expected.resurrectedTotal += 3;
    await check();

    // Succeed a few, then purge and retention: the counters stay.
    c = await claim(db.storage, queue, 3);
    await db.storage.markAsProcessing(c.leases);
    expect(
      await db.storage.archiveSucceeded(c.leases.map((l) => ({ ...l, durationMs: 1 }))),
    ).toHaveLength(3);
    expected.succeededTotal += 3;
    await check();

    expect(await db.storage.purgeDlq(dlqIds.slice(3))).toBe(3);
    const archiveIds = c.leases.map((l) => l.id);
    await backdate(db, 'archive', 'finished_at_utc', archiveIds, 30 * 24 * HOUR);
    const retention = await db.storage.applyRetention({
      archiveMs: HOUR,
      dlqMs: HOUR,
      metricsMs: 1,
    });
    expect(retention.archive).toBeGreaterThanOrEqual(3);
    await check();
    expect(await db.storage.countExactly({ pillar: 'archive', filter: { queue } })).toBe(0);
    expect(await db.storage.countExactly({ pillar: 'dlq', filter: { queue } })).toBe(0);
  });

  it('retention removes old archive, DLQ and metric rows in batches, keeps recent rows and never changes counters', async () => {
    const queue = uniqueQueue('retention');
    const archived: string[] = [];
    for (let i = 0; i < 4; i++) {
      const lease = await startJob(db.storage, queue);
      await db.storage.archiveSucceeded([{ ...lease, durationMs: 5 }]);
      archived.push(lease.id);
    }
    const failed: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { id } = await db.storage.enqueue({ queue });
      await db.storage.moveToDlq({ id }, { reason: FailureReason.FatalError, error: 'x' });
      failed.push(id);
    }
    await backdate(db, 'archive', 'finished_at_utc', archived.slice(0, 3), 2 * HOUR);
    await backdate(db, 'dlq', 'failed_at_utc', failed.slice(0, 3), 2 * HOUR);
    const before = await countersOf(db.storage, queue);

    const result = await db.storage.applyRetention({
      archiveMs: HOUR,
      dlqMs: HOUR,
      metricsMs: 7 * 24 * HOUR,
      batchSize: 1,
    });
    expect(result).toMatchObject({ archive: 3, dlq: 3 });
    expect(await countRows(db, 'archive', { queue })).toBe(1);
    expect(await countRows(db, 'dlq', { queue })).toBe(1);
    expect(await db.storage.getJob(archived[3])).not.toBeNull();
    expect(await db.storage.getJob(failed[3])).not.toBeNull();
    expect(await db.storage.getJob(archived[0])).toBeNull();
    expect(await countersOf(db.storage, queue)).toEqual(before);

    // Metric buckets age out too (1-second buckets: wait until this second's bucket is old).
    expect(await countRows(db, 'buckets', { queue })).toBeGreaterThan(0);
    let removed = 0;
    await waitFor(
      'metric buckets pruned',
      async () => {
        removed += (
          await db.storage.applyRetention({ archiveMs: 24 * HOUR, dlqMs: 24 * HOUR, metricsMs: 1 })
        ).metricBuckets;
        return (await countRows(db, 'buckets', { queue })) === 0;
      },
      { timeoutMs: 5_000, intervalMs: 100 },
    );
    expect(removed).toBeGreaterThan(0);
    expect(await countersOf(db.storage, queue)).toEqual(before);
    expect(await countRows(db, 'archive', { queue })).toBe(1);
  });

  it('getThroughput counts completions from buckets (cancellations are not failures)', async () => {
    const queue = uniqueQueue('throughput');
    for (let i = 0; i < 5; i++) {
      const lease = await startJob(db.storage, queue);
      await db.storage.archiveSucceeded([{ ...lease, durationMs: 20 }]);
    }
    for (let i = 0; i < 2; i++) {
      const lease = await startJob(db.storage, queue);
      await db.storage.moveToDlq(lease, {
        reason: FailureReason.MaxRetriesExceeded,
        error: 'x',
        durationMs: 3,
      });
    }
    const { id } = await db.storage.enqueue({ queue });
    await db.storage.cancel([id]);

    const t = await db.storage.getThroughput(queue);
    expect(t).toMatchObject({ succeeded1m: 5, failed1m: 2, succeeded5m: 5, failed5m: 2 });
    // One-minute buckets: the windows are the current minute plus one (60–120 s) or five whole
    // minutes before it (300–360 s), and the rates divide by that span.
    expect(t.perSecond1m).toBeGreaterThan(8 / 120);
    expect(t.perSecond1m).toBeLessThanOrEqual(8 / 60);
    expect(t.perSecond5m).toBeGreaterThan(8 / 360);
    expect(t.perSecond5m).toBeLessThanOrEqual(8 / 300);
    const all = await db.storage.getThroughput();
    expect(all.succeeded1m).toBeGreaterThanOrEqual(5);
    expect(all.failed1m).toBeGreaterThanOrEqual(2);
    expect(all.perSecond1m).toBeGreaterThan(0);
    expect(await db.storage.getThroughput(uniqueQueue('idle'))).toMatchObject({
      perSecond1m: 0,
      perSecond5m: 0,
      succeeded1m: 0,
      failed1m: 0,
    });
  });

  it('getQueueHealth reports due pending, lag and saturation', async () => {
    const queue = uniqueQueue('health');
    const free = uniqueQueue('health.free');
    await db.storage.updateQueue(queue, { maxWorkers: 4 });
    await db.storage.enqueueMany([
      ...Array.from({ length: 5 }, () => ({ queue })),
      { queue, delayMs: HOUR },
    ]);
    await db.storage.enqueue({ queue: free });
    const c = await claim(db.storage, queue, 2);
    expect(c.rows).toHaveLength(2);
    const pending = (
      await db.storage.listActive({ filter: { queue, status: JobStatus.Pending }, limit: 10 })
    ).items;
    const old = pending.find((j) => j.scheduledAtUtc === null)!;
    await backdate(db, 'hot', 'enqueued_at_utc', [old.id], 60_000);

    const health = await db.storage.getQueueHealth();
    const h = health.find((x) => x.queue === queue)!;
    expect(h).toMatchObject({ queue, duePending: 3, active: 2, maxWorkers: 4, saturation: 0.5 });
    expect(h.maxLagMs).toBeGreaterThanOrEqual(59_000);
    expect(h.maxLagMs).toBeLessThan(HOUR);
    expect(h.avgLagMs).toBeGreaterThanOrEqual(59_000 / 3 - 1_000);
    expect(h.avgLagMs).toBeLessThanOrEqual(h.maxLagMs);
    expect(health.find((x) => x.queue === free)).toMatchObject({
      duePending: 1,
      active: 0,
      saturation: null,
    });
  });

  it('getTopDlqErrors groups by the first line of the error, most frequent first', async () => {
    const queue = uniqueQueue('toperr');
    const errors = [
      'Error: boom\n    at a (a.js:1:1)',
      'Error: boom\n    at b (b.js:2:2)',
      'Error: boom',
      'TypeError: bad input\n    at c (c.js:3:3)',
    ];
    const ids: string[] = [];
    for (const error of errors) {
      const { id } = await db.storage.enqueue({ queue });
      await db.storage.moveToDlq({ id }, { reason: FailureReason.FatalError, error });
      ids.push(id);
    }
    const top = await db.storage.getTopDlqErrors(10, { queue });
    expect(top.map(({ error, count }) => ({ error, count }))).toEqual([
      { error: 'Error: boom', count: 3 },
      { error: 'TypeError: bad input', count: 1 },
    ]);
    // The newest failure of each family, to the millisecond, as the job's own view has it.
    const failedAt = async (id: string) => (await db.storage.getJob(id))!.failedAtUtc!.getTime();
    const boom = Math.max(...(await Promise.all(ids.slice(0, 3).map(failedAt))));
    expect(top[0].lastFailedAtUtc.getTime()).toBe(boom);
    expect(top[1].lastFailedAtUtc.getTime()).toBe(await failedAt(ids[3]));
    expect(await db.storage.getTopDlqErrors(1, { queue })).toHaveLength(1);
  });

  it('getSummary and getQueueStats count rows per pillar and status', async () => {
    const queue = uniqueQueue('stats');
    const made = await db.storage.enqueueMany(Array.from({ length: 6 }, () => ({ queue })));
    // Waiting on one of them: counted as waiting, never claimed.
    await db.storage.enqueue({ queue, dependsOn: [made[5].id] });
    const c = await claim(db.storage, queue, 3);
    await db.storage.markAsProcessing([c.leases[0]]);
    await db.storage.archiveSucceeded([{ ...c.leases[0], durationMs: 1 }]);
    await db.storage.moveToDlq(c.leases[1], { reason: FailureReason.FatalError, error: 'x' });
    await db.storage.markAsProcessing([c.leases[2]]);
    await claim(db.storage, queue, 1);
    const stats = await statsOf(db.storage, queue);
    expect(stats).toEqual({
      queue,
      pending: 2,
      fetched: 1,
      processing: 1,
      waiting: 1,
      succeededTotal: 1,
      failedTotal: 1,
      cancelledTotal: 0,
      retriedTotal: 0,
      deferredTotal: 0,
      resurrectedTotal: 0,
      lastActivityUtc: expect.any(Date),
      isPaused: false,
      isActive: true,
      maxWorkers: null,
    });
    const summary = await db.storage.getSummary();
    expect(summary.pending).toBeGreaterThanOrEqual(2);
    expect(summary.waiting).toBeGreaterThanOrEqual(1);
    expect(summary.succeededTotal).toBeGreaterThanOrEqual(1);
    expect(await db.storage.countExactly({ pillar: 'archive', filter: { queue } })).toBe(1);
    expect(await db.storage.countExactly({ pillar: 'dlq', filter: { queue } })).toBe(1);
  });
});
