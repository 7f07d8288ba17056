import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import {
  CountQuery,
  ThroughputPoint,
  ThroughputSeriesQuery,
} from '../../libs/chokaq/src/interfaces/job-view.interface';
import { MAX_SERIES_POINTS } from '../../libs/chokaq/src/validation/limits';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import {
  backdate,
  backdateDue,
  claim,
  countRows,
  expectValidationError,
  startJob,
  statsOf,
  uniqueQueue,
} from './helpers';

const MINUTE = 60_000;
const HOUR = 3_600_000;

/**
 * The reads a dashboard polls (issue "Reads that stay cheap at any size"): `getSummary` without a
 * count of the archive or the DLQ (exact on SQLite through a maintained count, estimates elsewhere,
 * and says which), `countExactly` on request, the throughput series from metric buckets (retries
 * and starts included), the start lag written with the start, and DLQ error families over a
 * bounded window.
 */
describeEachDialect('storage contract: dashboard reads', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  /** Exact rows of each pillar, by raw SQL (independent of the storage's reads). */
  async function rawTotals(): Promise<{ archived: number; dlq: number }> {
    return { archived: await countRows(db, 'archive'), dlq: await countRows(db, 'dlq') };
  }

  /** A series of one queue around now: one step of 20 minutes holds everything this test did. */
  async function seriesNow(queue: string): Promise<ThroughputPoint> {
    const now = (await db.storage.now()).getTime();
    const points = await db.storage.getThroughputSeries({
      queue,
      from: new Date(now - 10 * MINUTE),
      // One millisecond more, so the range is longer than one step even when `from` falls on a
      // minute.
      to: new Date(now + 10 * MINUTE + 1),
      stepMs: 20 * MINUTE,
    });
    expect(points).toHaveLength(2);
    expect(points[1]).toMatchObject({ succeeded: 0, failed: 0, started: 0, meanDurationMs: null });
    return points[0];
  }

  it('replicationLagMs is null on a database that is not a hot standby (every test database)', async () => {
    await expect(db.storage.replicationLagMs()).resolves.toBeNull();
  });

  it('getSummary says which figures are estimates; SQLite keeps the archive and DLQ counts exact through every move, purge and retention', async () => {
    const queue = uniqueQueue('summary');
    // Archive, DLQ with a lease and by id, cancel, zombie, resurrect, purge by id and by filter,
    // retention: every way a row enters or leaves the archive or the DLQ.
    for (let i = 0; i < 3; i++) {
      const lease = await startJob(db.storage, queue);
      await db.storage.archiveSucceeded([{ ...lease, durationMs: 5 }]);
    }
    const failed = await startJob(db.storage, queue);
    await db.storage.moveToDlq(failed, { reason: FailureReason.FatalError, error: 'x' });
    const byId = await db.storage.enqueue({ queue });
    await db.storage.moveToDlq({ id: byId.id }, { reason: FailureReason.FatalError, error: 'y' });
    const cancelled = await db.storage.enqueueMany([{ queue }, { queue }, { queue }]);
    await db.storage.cancel(cancelled.map((c) => c.id));
    const zombie = await startJob(db.storage, queue);
    await backdate(db, 'hot', 'heartbeat_utc', [zombie.id], HOUR);
    expect((await db.storage.archiveZombies(600_000)).dlq).toContain(zombie.id);
    expect(await db.storage.resurrect(byId.id)).toBe(1);
    expect(await db.storage.purgeDlq([failed.id])).toBe(1);
    expect(await db.storage.purgeDlqByFilter({ queue, reason: FailureReason.Cancelled }, 2)).toBe(
      2,
    );
    const old = await startJob(db.storage, queue);
    await db.storage.archiveSucceeded([{ ...old, durationMs: 1 }]);
    await backdate(db, 'archive', 'finished_at_utc', [old.id], 400 * 24 * HOUR);
    const keep = 300 * 24 * HOUR;
    const retention = await db.storage.applyRetention({
      archiveMs: keep,
      dlqMs: keep,
      metricsMs: keep,
    });
    expect(retention.archive).toBe(1);

    expect(await db.storage.countExactly({ pillar: 'archive', filter: { queue } })).toBe(3);
    expect(await db.storage.countExactly({ pillar: 'dlq', filter: { queue } })).toBe(2);

    const summary = await db.storage.getSummary();
    const exact = db.dialect === 'sqlite';
    expect(summary.estimated).toEqual({ archived: !exact, dlq: !exact });
    const totals = await rawTotals();
    if (exact) {
      expect({ archived: summary.archived, dlq: summary.dlq }).toEqual(totals);
    } else {
      for (const figure of [summary.archived, summary.dlq]) {
        expect(Number.isInteger(figure)).toBe(true);
        expect(figure).toBeGreaterThanOrEqual(0);
      }
    }
    if (db.dialect === 'postgres') {
      // After ANALYZE the planner's statistics know the tables: the estimate is the count.
      await db.sql(`ANALYZE ${db.table('archive')}`);
      await db.sql(`ANALYZE ${db.table('dlq')}`);
      const analysed = await db.storage.getSummary();
      expect({ archived: analysed.archived, dlq: analysed.dlq }).toEqual(totals);
    }
    expect(summary).toMatchObject({
      pending: expect.any(Number),
      succeededTotal: expect.any(Number),
      failedTotal: expect.any(Number),
    });
  });

  it('getQueueStats has no per-queue archive or DLQ count (countExactly gives one)', async () => {
    const queue = uniqueQueue('qstats');
    const lease = await startJob(db.storage, queue);
    await db.storage.archiveSucceeded([{ ...lease, durationMs: 1 }]);
    const stats = await statsOf(db.storage, queue);
    expect(stats).not.toHaveProperty('archived');
    expect(stats).not.toHaveProperty('dlq');
    expect(stats.succeededTotal).toBe(1);
    expect(await db.storage.countExactly({ pillar: 'archive', filter: { queue } })).toBe(1);
  });

  it('countExactly counts one pillar with the filters of its list, exactly', async () => {
    const queue = uniqueQueue('exact');
    const ids = (
      await db.storage.enqueueMany([
        { queue, type: 'a', tags: ['x'] },
        { queue, type: 'a' },
        { queue, type: 'b', tags: ['x'] },
        { queue, type: 'b' },
        { queue, type: 'b' },
      ])
    ).map((r) => r.id);
    await claim(db.storage, { queues: [], types: [{ queue, type: 'b' }] }, 2);
    const count = (q: CountQuery) => db.storage.countExactly(q);
    expect(await count({ pillar: 'hot', filter: { queue } })).toBe(5);
    expect(await count({ pillar: 'hot', filter: { queue, type: 'b' } })).toBe(3);
    expect(await count({ pillar: 'hot', filter: { queue, status: JobStatus.Fetched } })).toBe(2);
    expect(await count({ pillar: 'hot', filter: { queue, tag: 'x' } })).toBe(2);
    expect(await count({ pillar: 'hot', filter: { queue, search: ids[0].slice(-12) } })).toBe(1);

    await db.storage.cancel(ids.slice(0, 2));
    const now = await db.storage.now();
    expect(await count({ pillar: 'dlq', filter: { queue } })).toBe(2);
    expect(await count({ pillar: 'dlq', filter: { queue, reason: FailureReason.Cancelled } })).toBe(
      2,
    );
    expect(await count({ pillar: 'dlq', filter: { queue, reason: FailureReason.Zombie } })).toBe(0);
    expect(await count({ pillar: 'dlq', filter: { queue, ids: [ids[0]] } })).toBe(1);
    expect(
      await count({ pillar: 'dlq', filter: { queue, from: new Date(now.getTime() + HOUR) } }),
    ).toBe(0);
    expect(await count({ pillar: 'archive', filter: { queue } })).toBe(0);
    expect(await count({ pillar: 'hot', filter: { queue } })).toBe(3);

    await expectValidationError(count({ pillar: 'nowhere' } as never), 'query.pillar');
    await expectValidationError(
      count({ pillar: 'dlq', filter: { reason: 'toString' as never } }),
      'query.filter.reason',
    );
    await expectValidationError(count(null as never), 'query');
  });

  it('getThroughputSeries: succeeded, failed, retried, cancelled, mean run time and starts with their lag, per step', async () => {
    const queue = uniqueQueue('series');
    await db.storage.updateQueue(queue, { retryZombies: true });
    // Three successes (10, 20, 30 ms) and one failure (40 ms): the mean run time is 25 ms.
    for (const durationMs of [10, 20, 30]) {
      const lease = await startJob(db.storage, queue);
      await db.storage.archiveSucceeded([{ ...lease, durationMs }]);
    }
    const failing = await startJob(db.storage, queue);
    await db.storage.moveToDlq(failing, {
      reason: FailureReason.MaxRetriesExceeded,
      error: 'x',
      durationMs: 40,
    });
    // Retries: a failed run rescheduled and a zombie returned to Pending. An open circuit's
    // release (with a delay) is a deferral, not a retry; a release without one is neither.
    const retry = await startJob(db.storage, queue);
    expect(await db.storage.rescheduleForRetry(retry, 60 * MINUTE, 'Error: again')).toBe(1);
    const released = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    expect(await db.storage.release([released], 60 * MINUTE)).toBe(1);
    expect(
      await db.storage.release([await startJob(db.storage, queue, {}, { fetchedOnly: true })]),
    ).toBe(1);
    const zombie = await startJob(db.storage, queue);
    await backdate(db, 'hot', 'heartbeat_utc', [zombie.id], HOUR);
    expect((await db.storage.archiveZombies(600_000)).retried).toContain(zombie.id);
    // A cancellation.
    const { id } = await db.storage.enqueue({ queue, delayMs: HOUR });
    await db.storage.cancel([id]);

    const point = await seriesNow(queue);
    expect(point).toMatchObject({
      succeeded: 3,
      failed: 1,
      retried: 2,
      cancelled: 1,
      meanDurationMs: 25,
      // startJob starts each run: 3 + 1 + 1 (retry) + 1 (zombie); the two releases never started.
      started: 6,
    });
    expect(point.meanStartLagMs).toEqual(expect.any(Number));
    expect(point.maxStartLagMs).toBeGreaterThanOrEqual(point.meanStartLagMs!);
    // The lifetime counters agree with the buckets.
    expect(await statsOf(db.storage, queue)).toMatchObject({
      succeededTotal: 3,
      failedTotal: 1,
      retriedTotal: 2,
      deferredTotal: 1,
      cancelledTotal: 1,
    });
    // All queues together hold at least this queue's counts.
    const now = (await db.storage.now()).getTime();
    const all = await db.storage.getThroughputSeries({
      from: new Date(now - 10 * MINUTE),
      to: new Date(now + 10 * MINUTE),
      stepMs: 20 * MINUTE,
    });
    expect(all[0].succeeded).toBeGreaterThanOrEqual(3);
    expect(all[0].started).toBeGreaterThanOrEqual(6);
  });

  it('getThroughputSeries: one-minute steps and longer steps over the same range agree, for one queue and for all', async () => {
    const queue = uniqueQueue('series.steps');
    for (const durationMs of [5, 7]) {
      const lease = await startJob(db.storage, queue);
      await db.storage.archiveSucceeded([{ ...lease, durationMs }]);
    }
    const failing = await startJob(db.storage, queue);
    await db.storage.moveToDlq(failing, {
      reason: FailureReason.FatalError,
      error: 'x',
      durationMs: 9,
    });
    const now = (await db.storage.now()).getTime();
    const from = new Date(now - 10 * MINUTE);
    const to = new Date(now + 10 * MINUTE);
    const sum = (points: ThroughputPoint[]) => ({
      succeeded: points.reduce((n, p) => n + p.succeeded, 0),
      failed: points.reduce((n, p) => n + p.failed, 0),
      retried: points.reduce((n, p) => n + p.retried, 0),
      cancelled: points.reduce((n, p) => n + p.cancelled, 0),
      started: points.reduce((n, p) => n + p.started, 0),
      maxStartLagMs: points.reduce<number | null>(
        (m, p) => (p.maxStartLagMs === null ? m : Math.max(m ?? 0, p.maxStartLagMs)),
        null,
      ),
    });
    for (const q of [queue, undefined]) {
      const minutes = await db.storage.getThroughputSeries({ queue: q, from, to, stepMs: MINUTE });
      const whole = await db.storage.getThroughputSeries({
        queue: q,
        from,
        to,
        stepMs: 20 * MINUTE,
      });
      expect(minutes).toHaveLength(whole.length === 1 ? 20 : 21);
      expect(sum(minutes)).toEqual(sum(whole));
      if (q !== undefined) {
        expect(sum(whole)).toMatchObject({ succeeded: 2, failed: 1, started: 3 });
        expect(whole[0].meanDurationMs).toBe(7);
      }
    }
  });

  it('getThroughputSeries: one point per step from the minute of `from`, zeros where nothing happened', async () => {
    const queue = uniqueQueue('series.empty');
    const now = (await db.storage.now()).getTime();
    const from = new Date(now - 6 * HOUR + 12_345);
    const points = await db.storage.getThroughputSeries({
      queue,
      from,
      to: new Date(now),
      stepMs: MINUTE,
    });
    const first = Math.floor(from.getTime() / MINUTE) * MINUTE;
    expect(points).toHaveLength(Math.ceil((now - first) / MINUTE));
    points.forEach((p, i) => {
      expect(p.at.getTime()).toBe(first + i * MINUTE);
      expect(p).toMatchObject({
        succeeded: 0,
        failed: 0,
        retried: 0,
        cancelled: 0,
        started: 0,
        meanDurationMs: null,
        meanStartLagMs: null,
        maxStartLagMs: null,
      });
    });
  });

  it('getThroughputSeries: the step is a whole number of minutes, from before to, at most 10,000 points', async () => {
    const now = new Date();
    const series = (q: Partial<ThroughputSeriesQuery>) =>
      db.storage.getThroughputSeries({
        from: new Date(now.getTime() - HOUR),
        to: now,
        stepMs: MINUTE,
        ...q,
      });
    await expectValidationError(series({ stepMs: 30_000 }), 'query.stepMs');
    await expectValidationError(series({ stepMs: 90_000 }), 'query.stepMs');
    await expectValidationError(series({ stepMs: 0 }), 'query.stepMs');
    await expectValidationError(series({ stepMs: 1.5 * MINUTE }), 'query.stepMs');
    await expectValidationError(series({ to: new Date(now.getTime() - 2 * HOUR) }), 'query.to');
    await expectValidationError(series({ to: new Date(now.getTime() - HOUR) }), 'query.to');
    await expectValidationError(series({ from: new Date(Number.NaN) }), 'query.from');
    await expectValidationError(series({ to: 'now' as never }), 'query.to');
    await expectValidationError(series({ queue: 'bad queue name' }), 'query.queue');
    await expectValidationError(
      series({ from: new Date(now.getTime() - (MAX_SERIES_POINTS + 1) * MINUTE) }),
      'query.stepMs',
    );
    expect(
      await series({ from: new Date(now.getTime() - (MAX_SERIES_POINTS - 1) * MINUTE) }),
    ).toHaveLength(MAX_SERIES_POINTS);
    await expectValidationError(db.storage.getThroughputSeries(null as never), 'query');
  });

  it('start lag: written by the claim that starts rows and by markAsProcessing, read by getQueueHealth and the series', async () => {
    const queue = uniqueQueue('lag');
    const ids = (await db.storage.enqueueMany([{ queue }, { queue }, { queue }])).map((r) => r.id);
    // Due a minute ago (the first), two minutes ago (the other two).
    await backdateDue(db, [ids[0]], MINUTE);
    await backdateDue(db, ids.slice(1), 2 * MINUTE);
    // The claim starts one row itself, the other two are Fetched and started by markAsProcessing.
    const c = await claim(db.storage, queue, 3, undefined, { start: 1 });
    expect(c.rows.filter((r) => r.status === JobStatus.Processing)).toHaveLength(1);
    const fetched = c.rows.filter((r) => r.status === JobStatus.Fetched);
    expect(
      await db.storage.markAsProcessing(fetched.map((r) => c.leases.find((l) => l.id === r.id)!)),
    ).toHaveLength(2);
    // Returned again to a retry after an ambiguous commit, but not counted twice.
    expect(await db.storage.markAsProcessing(c.leases)).toHaveLength(3);

    const health = (await db.storage.getQueueHealth()).find((h) => h.queue === queue)!;
    expect(health.startLag.started).toBe(3);
    expect(health.startLag.maxMs).toBeGreaterThanOrEqual(2 * MINUTE);
    expect(health.startLag.maxMs).toBeLessThan(2 * MINUTE + MINUTE);
    expect(health.startLag.meanMs).toBeGreaterThanOrEqual((MINUTE + 4 * MINUTE) / 3);
    expect(health.startLag.meanMs).toBeLessThanOrEqual(health.startLag.maxMs!);
    const point = await seriesNow(queue);
    expect(point.started).toBe(3);
    expect(point.maxStartLagMs).toBe(health.startLag.maxMs);
    expect(point.meanStartLagMs).toBeCloseTo(health.startLag.meanMs!, 6);

    // A queue that started nothing: no lag at all.
    const idle = uniqueQueue('lag.idle');
    await db.storage.enqueue({ queue: idle });
    expect((await db.storage.getQueueHealth()).find((h) => h.queue === idle)!.startLag).toEqual({
      started: 0,
      meanMs: null,
      maxMs: null,
    });
  });

  it('getQueueOutcomes: succeeded, failed, cancelled and retried per queue over the window, every queue listed', async () => {
    const queue = uniqueQueue('outcomes');
    const idle = uniqueQueue('outcomes.idle');
    await db.storage.enqueue({ queue: idle });
    for (const durationMs of [10, 20]) {
      const lease = await startJob(db.storage, queue);
      await db.storage.archiveSucceeded([{ ...lease, durationMs }]);
    }
    await db.storage.moveToDlq(await startJob(db.storage, queue), {
      reason: FailureReason.MaxRetriesExceeded,
      error: 'x',
    });
    const zombie = await startJob(db.storage, queue);
    await db.storage.moveToDlq({ id: zombie.id }, { reason: FailureReason.Zombie, error: 'z' });
    const retry = await startJob(db.storage, queue);
    expect(await db.storage.rescheduleForRetry(retry, HOUR, 'Error: again')).toBe(1);
    const { id } = await db.storage.enqueue({ queue, delayMs: HOUR });
    await db.storage.cancel([id]);

    const before = (await db.storage.now()).getTime();
    const all = await db.storage.getQueueOutcomes();
    const after = (await db.storage.now()).getTime();
    const mine = all.find((o) => o.queue === queue)!;
    expect(mine).toEqual({
      queue,
      minutes: 5,
      fromUtc: expect.any(Date),
      succeeded: 2,
      // A zombie is a failure too; a cancellation is not.
      failed: 2,
      cancelled: 1,
      retried: 1,
    });
    // The window starts 5 whole minutes before the current one (database clock).
    const minuteOf = (ms: number) => Math.floor(ms / MINUTE) * MINUTE;
    expect([minuteOf(before) - 5 * MINUTE, minuteOf(after) - 5 * MINUTE]).toContain(
      mine.fromUtc.getTime(),
    );
    expect(all.find((o) => o.queue === idle)).toMatchObject({
      succeeded: 0,
      failed: 0,
      cancelled: 0,
      retried: 0,
    });
    // One row per queue of the Queues table, in one read.
    const names = (await db.storage.getQueues()).map((q) => q.name).sort();
    expect(all.map((o) => o.queue).sort()).toEqual(names);
    expect(new Set(all.map((o) => o.fromUtc.getTime())).size).toBe(1);
  });

  it('getQueueOutcomes: a bucket counts while it is in the window (minutes 1–1,440, default 5)', async () => {
    const queue = uniqueQueue('outcomes.window');
    const lease = await startJob(db.storage, queue);
    await db.storage.archiveSucceeded([{ ...lease, durationMs: 1 }]);
    // The queue's buckets, ten minutes older (the database clock cannot move; rows can).
    const bucket = db.column('bucket_utc');
    const older =
      db.dialect === 'sqlite'
        ? `${bucket} = ${bucket} - ${10 * MINUTE}`
        : db.dialect === 'postgres'
          ? `${bucket} = ${bucket} - interval '10 minutes'`
          : `${bucket} = DATEADD(MINUTE, -10, ${bucket})`;
    await db.sql(
      `UPDATE ${db.table('buckets')} SET ${older} WHERE ${db.column('queue')} = ${db.param(1)}`,
      [queue],
    );
    const [row] = await db.sql<Record<string, unknown>>(
      `SELECT ${bucket} AS at FROM ${db.table('buckets')} WHERE ${db.column('queue')} = ${db.param(1)} AND ${db.column('outcome')} = 0`,
      [queue],
    );
    const at = new Date(row.at as Date | number).getTime();
    for (const minutes of [1, 5, 9, 10, 11, 15, 1_440]) {
      const mine = (await db.storage.getQueueOutcomes({ minutes })).find((o) => o.queue === queue)!;
      expect(mine.minutes).toBe(minutes);
      // In the window exactly when the bucket starts at or after the window's start.
      expect([minutes, mine.succeeded]).toEqual([minutes, at >= mine.fromUtc.getTime() ? 1 : 0]);
      if (minutes <= 9) expect(mine.succeeded).toBe(0);
      if (minutes >= 11) expect(mine.succeeded).toBe(1);
    }
    for (const minutes of [0, 1_441, 2.5, '5', -1]) {
      await expectValidationError(
        db.storage.getQueueOutcomes({ minutes: minutes as number }),
        'query.minutes',
      );
    }
    await expectValidationError(db.storage.getQueueOutcomes('5' as never), 'query');
  });

  it('getQueueHealth: the age of the oldest due pending job is live, from the hot table', async () => {
    const queue = uniqueQueue('oldest');
    const ids = (
      await db.storage.enqueueMany([{ queue }, { queue }, { queue, delayMs: HOUR }])
    ).map((r) => r.id);
    await backdateDue(db, [ids[0]], 5 * MINUTE);
    const h = (await db.storage.getQueueHealth()).find((x) => x.queue === queue)!;
    expect(h.duePending).toBe(2);
    expect(h.maxLagMs).toBeGreaterThanOrEqual(5 * MINUTE);
    expect(h.maxLagMs).toBeLessThan(6 * MINUTE);
    // Once the oldest starts, the next one is the oldest.
    await claim(db.storage, { queues: [queue], types: [] }, 1);
    const after = (await db.storage.getQueueHealth()).find((x) => x.queue === queue)!;
    expect(after.duePending).toBe(1);
    expect(after.maxLagMs).toBeLessThan(MINUTE);
  });

  it('top errors: messages that differ only in ids, numbers, UUIDs, hex, quoted values or times are one family', async () => {
    const queue = uniqueQueue('families');
    const errors = [
      'Error: job 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b timed out after 3000 ms\n    at a (a.js:1:1)',
      'Error: job 0191ffff-0000-7000-8000-000000000001 timed out after 15 ms\n    at b (b.js:2:2)',
      "Error: user 'alice' not found at 2026-01-02T03:04:05.678Z (object 507f1f77bcf86cd799439011)",
      "Error: user 'bob' not found at 2025-12-31T23:59:59Z (object 65a1b2c3d4e5f60718293a4b)",
      "Error: user 'carol' not found at 2026-02-03T04:05:06.000Z (object 0x7ffee4b8)",
      'TypeError: cannot read properties of undefined',
    ];
    for (const error of errors) {
      const { id } = await db.storage.enqueue({ queue });
      await db.storage.moveToDlq({ id }, { reason: FailureReason.FatalError, error });
    }
    const top = await db.storage.getTopDlqErrors(10, { queue });
    expect(top.map(({ error, count }) => ({ error, count }))).toEqual([
      { error: "Error: user '…' not found at <time> (object <hex>)", count: 3 },
      { error: 'Error: job <uuid> timed out after <n> ms', count: 2 },
      { error: 'TypeError: cannot read properties of undefined', count: 1 },
    ]);
    // The sample is the newest error of the family, as stored (first line).
    expect(top[0].sample).toBe(
      "Error: user 'carol' not found at 2026-02-03T04:05:06.000Z (object 0x7ffee4b8)",
    );
    expect(top[1].sample).toBe(
      'Error: job 0191ffff-0000-7000-8000-000000000001 timed out after 15 ms',
    );
    expect(top[0].lastFailedAtUtc).toBeInstanceOf(Date);
    expect(await db.storage.getTopDlqErrors(1, { queue })).toHaveLength(1);
  });

  it('top errors: the window is the last 24 hours (and at most the newest 10,000 rows)', async () => {
    const queue = uniqueQueue('window');
    const recent = await db.storage.enqueue({ queue });
    await db.storage.moveToDlq(
      { id: recent.id },
      { reason: FailureReason.FatalError, error: 'Error: now' },
    );
    const old = await db.storage.enqueue({ queue });
    await db.storage.moveToDlq(
      { id: old.id },
      { reason: FailureReason.FatalError, error: 'Error: then' },
    );
    await backdate(db, 'dlq', 'failed_at_utc', [old.id], 25 * HOUR);
    expect((await db.storage.getTopDlqErrors(10, { queue })).map((f) => f.error)).toEqual([
      'Error: now',
    ]);
    // The old row is still in the DLQ: only the window leaves it out.
    expect(await db.storage.countExactly({ pillar: 'dlq', filter: { queue } })).toBe(2);
  });
});
