import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  ChokaQAdmin,
  ChokaQFatalError,
  JobClient,
  JobContext,
  JobHandler,
  defineJob,
  getJobStorageToken,
} from '../../libs/chokaq/src';
import type { JobStorage } from '../../libs/chokaq/src/storage';
import { meterHarness, pointLines, type MetricPoint } from '../support/metric-reader';
import { TestSchema, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';

const Ok = defineJob<{ n: number }>('metrics', 'ok.v1');
const Flaky = defineJob<{ n: number }>('metrics', 'flaky.v1');
const Fatal = defineJob<{ n: number }>('metrics', 'fatal.v1');
const Lost = defineJob<{ n: number }>('metrics', 'lost.v1');

@Injectable()
class MetricHandlers {
  @JobHandler(Ok)
  async ok(): Promise<void> {}

  /** Fails its first attempt: one retry, then a success. */
  @JobHandler(Flaky)
  async flaky(_payload: { n: number }, ctx: JobContext): Promise<void> {
    if (ctx.attempt === 1) throw new Error('downstream timeout');
  }

  @JobHandler(Fatal)
  async fatal(): Promise<void> {
    throw new ChokaQFatalError('bad payload');
  }
}

/** The sum of `name`'s points (all attribute sets). */
function total(points: readonly MetricPoint[], name: string): number {
  return points.filter((p) => p.name === name).reduce((sum, p) => sum + p.value, 0);
}

/**
 * Metrics end to end, on a real app and database, read the way an exporter reads them (the SDK's
 * MeterProvider with a reader, passed as `metrics.meterProvider`): a drain, a retry, a DLQ move
 * and a zombie produce exactly the expected data points, and the queue gauges read the database.
 */
describeEachDialect('metrics', ({ name: dialect }) => {
  let db: TestSchema;
  beforeEach(() => (db = e2eDatabase(dialect)));
  afterEach(async () => db.close());

  it('a drain, a retry, a DLQ move and a zombie produce exactly the expected data points', async () => {
    // A producer without metrics makes the zombie: a job claimed and started by a worker now gone.
    const producer = await bootApp(db, { options: { worker: { enabled: false } } });
    const zombie = await producer.get(JobClient).enqueue(Lost, { n: 0 });
    await producer.get<JobStorage>(getJobStorageToken()).fetchNextBatch({
      workerId: 'gone-worker',
      leaseId: randomUUID(),
      limit: 1,
      start: 1,
      handled: { queues: [], types: [{ queue: 'metrics', type: 'lost.v1' }] },
    });
    await producer.close();

    const { provider, collect } = meterHarness();
    const app = await bootApp(db, {
      providers: [MetricHandlers],
      options: {
        // Only the zombie timeout is short: buffered jobs keep FAST_OPTIONS' 5 s (no conflicts).
        rescue: { intervalMs: 200, zombieTimeoutMs: 1_000 },
        metrics: { meterProvider: provider },
      },
    });
    const jobs = app.get(JobClient);
    await jobs.enqueueMany(Ok, [
      { payload: { n: 1 } },
      { payload: { n: 2 } },
      { payload: { n: 3 } },
    ]);
    await jobs.enqueue(Flaky, { n: 4 });
    await jobs.enqueue(Fatal, { n: 5 });

    // The counters are written after each move commits: wait for the last of them. The DLQ gauge
    // is read from the database while a collection runs, so a move that commits during that read
    // can be counted but not yet seen: wait for one collection that has both.
    const points = await waitFor(
      'four completions, two DLQ moves (counted and seen) and no handler running',
      async () => {
        const now = await collect();
        const done =
          total(now, 'chokaq.jobs.completed') === 4 &&
          total(now, 'chokaq.jobs.dlq') === 2 &&
          total(now, 'chokaq.queue.dlq_size') === 2 &&
          total(now, 'chokaq.workers.active') === 0;
        return done ? now : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    );
    expect((await jobs.getJob(zombie))?.pillar).toBe('dlq');
    const q = 'queue=metrics';
    const counters = [
      `chokaq.jobs.completed{${q},type=flaky.v1} 1`,
      `chokaq.jobs.completed{${q},type=ok.v1} 3`,
      `chokaq.jobs.dlq{${q},reason=FatalError,type=fatal.v1} 1`,
      `chokaq.jobs.dlq{${q},reason=Zombie,type=lost.v1} 1`,
      `chokaq.jobs.enqueued{${q},type=fatal.v1} 1`,
      `chokaq.jobs.enqueued{${q},type=flaky.v1} 1`,
      `chokaq.jobs.enqueued{${q},type=ok.v1} 3`,
      `chokaq.jobs.failed{${q},type=fatal.v1} 1`,
      `chokaq.jobs.failed{${q},type=flaky.v1} 1`,
      // Histograms: how many values were recorded.
      `chokaq.jobs.processing_duration{outcome=failed,${q},type=fatal.v1} 1`,
      `chokaq.jobs.processing_duration{outcome=retried,${q},type=flaky.v1} 1`,
      `chokaq.jobs.processing_duration{outcome=succeeded,${q},type=flaky.v1} 1`,
      `chokaq.jobs.processing_duration{outcome=succeeded,${q},type=ok.v1} 3`,
      `chokaq.jobs.queue_lag{${q},type=fatal.v1} 1`,
      `chokaq.jobs.queue_lag{${q},type=flaky.v1} 2`,
      `chokaq.jobs.queue_lag{${q},type=ok.v1} 3`,
      `chokaq.jobs.retried{${q},type=flaky.v1} 1`,
      `chokaq.workers.active{${q}} 0`,
    ];
    // Read from the database at collection: nothing due, the fatal job and the zombie in the DLQ.
    const gauges = [
      `chokaq.queue.dlq_size{${q}} 2`,
      `chokaq.queue.oldest_due_age{${q}} 0`,
      `chokaq.queue.pending{${q}} 0`,
    ];
    expect(pointLines(points)).toEqual([...counters, ...gauges].sort());
    // Run times and lags are real measurements, never negative.
    for (const p of points.filter((p) => p.histogram))
      expect(p.histogram!.min).toBeGreaterThanOrEqual(0);

    await closeAndCheck(app, db);
    // Closed: a collection no longer reads the closed storage (a read would fail and log
    // QueueGaugesReadFailed). The SDK still reports each series' last value, counters and gauges.
    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      expect(pointLines(await collect())).toEqual([...counters, ...gauges].sort());
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it('enqueues count in a producer-only process, whose queue gauges read pending, oldest due age and DLQ size; queueGauges: false turns them off', async () => {
    const { provider, collect } = meterHarness();
    const app = await bootApp(db, {
      options: { worker: { enabled: false }, metrics: { meterProvider: provider } },
    });
    const jobs = app.get(JobClient);
    await jobs.enqueue(Ok, { n: 1 });
    await jobs.enqueue(Ok, { n: 2 });
    await jobs.enqueue(Ok, { n: 3 }, { delayMs: 3_600_000 }); // not due: not pending yet
    const cancelled = await jobs.enqueue(Flaky, { n: 4 });
    await jobs.cancel(cancelled);
    // A recurring job run now, outside its schedule: an enqueue too.
    const admin = app.get(ChokaQAdmin);
    await admin.upsertRecurringJob({
      name: 'nightly',
      cron: '0 3 * * *',
      queue: 'metrics',
      type: 'ok.v1',
    });
    await admin.triggerRecurringJob('nightly');

    const oldest = await waitFor('the oldest due job to have waited', async () => {
      const point = (await collect()).find((p) => p.name === 'chokaq.queue.oldest_due_age');
      return point && point.value > 0 ? point.value : undefined;
    });
    const points = await collect();
    expect(pointLines(points.filter((p) => p.name !== 'chokaq.queue.oldest_due_age'))).toEqual([
      'chokaq.jobs.enqueued{queue=metrics,type=flaky.v1} 1',
      'chokaq.jobs.enqueued{queue=metrics,type=ok.v1} 4',
      'chokaq.queue.dlq_size{queue=metrics} 1',
      'chokaq.queue.pending{queue=metrics} 3',
    ]);
    expect(
      points.find((p) => p.name === 'chokaq.queue.oldest_due_age')!.value,
    ).toBeGreaterThanOrEqual(oldest);
    await closeAndCheck(app, db);

    const off = meterHarness();
    const quiet = await bootApp(db, {
      options: {
        worker: { enabled: false },
        metrics: { meterProvider: off.provider, queueGauges: false },
      },
    });
    expect(await off.collect()).toEqual([]);
    await closeAndCheck(quiet, db);
  });
});
