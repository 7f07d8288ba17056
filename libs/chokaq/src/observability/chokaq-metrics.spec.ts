import { metrics as otelMetrics } from '@opentelemetry/api';
import type { LoggerService } from '@nestjs/common';
import { meterHarness, pointLines } from '../../../../test/support/metric-reader';
import { CollectingMetricReader, collectPoints } from '../../../../test/support/metric-reader';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { JobOutcome } from '../interfaces/job-outcome.interface';
import { FailureReason } from '../interfaces/job-status.enum';
import type { RescuedZombie } from '../interfaces/job.interface';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import { ChokaQMetrics } from './chokaq-metrics';
import type { QueueGaugeReading } from './queue-gauges';

const ON: ResolvedChokaQOptions['metrics'] = {
  enabled: true,
  maxAttributeValues: 100,
  queueGauges: true,
};

function outcome(extra: Partial<JobOutcome> & Pick<JobOutcome, 'outcome'>): JobOutcome {
  return { id: 'j', leaseId: 'l', queue: 'q', type: 't', attempt: 1, ...extra };
}

function zombie(queue: string, type: string, pillar: 'dlq' | 'hot'): RescuedZombie {
  return { pillar, job: { id: `${queue}-${type}`, queue, type } } as unknown as RescuedZombie;
}

/** A logger that keeps the event names it was given. */
function eventLogger(): LoggerService & { events: string[] } {
  const events: string[] = [];
  const keep = (record: unknown) => events.push(String((record as { event?: string }).event));
  return { events, log: keep, warn: keep, error: keep };
}

describe('ChokaQMetrics', () => {
  describe('disabled: nothing is recorded and no instrument is created', () => {
    it('with metrics.enabled false, even when a MeterProvider is given', async () => {
      const { provider, collect } = meterHarness();
      const metrics = ChokaQMetrics.create({ ...ON, enabled: false, meterProvider: provider });
      expect(metrics.enabled).toBe(false);
      metrics.enqueued('q', 't');
      metrics.outcome(outcome({ outcome: 'succeeded', applied: true, durationMs: 1 }));
      metrics.observeQueues(async () => [
        { queue: 'q', pending: 1, oldestDueAgeMs: 1, dlqSize: 1 },
      ]);
      expect(await collect()).toEqual([]);
    });

    it('without @opentelemetry/api and without a MeterProvider', () => {
      const metrics = ChokaQMetrics.create(ON, undefined, () => undefined);
      expect(metrics.enabled).toBe(false);
    });

    it('while the global MeterProvider is the API no-op one (no SDK registered)', () => {
      otelMetrics.disable();
      expect(ChokaQMetrics.create(ON).enabled).toBe(false);
    });
  });

  it('records into the global MeterProvider an SDK registered before the module was created', async () => {
    const { provider, collect } = meterHarness();
    expect(otelMetrics.setGlobalMeterProvider(provider)).toBe(true);
    try {
      const metrics = ChokaQMetrics.create(ON);
      expect(metrics.enabled).toBe(true);
      metrics.enqueued('emails', 'welcome.v1', 2);
      expect(pointLines(await collect())).toEqual([
        'chokaq.jobs.enqueued{queue=emails,type=welcome.v1} 2',
      ]);
    } finally {
      otelMetrics.disable();
    }
  });

  it('turns outcomes into the counters and the run-time histogram, as lifecycle events do', async () => {
    const { provider, collect } = meterHarness();
    const metrics = ChokaQMetrics.create({ ...ON, meterProvider: provider });
    metrics.outcome(outcome({ outcome: 'succeeded', applied: true, durationMs: 12 }));
    // A handler failure retried, then one moved to the DLQ, then one that never ran (no handler).
    metrics.outcome(
      outcome({ outcome: 'retried', applied: true, durationMs: 3, retryDelayMs: 50 }),
    );
    metrics.outcome(
      outcome({ outcome: 'failed', applied: true, durationMs: 4, reason: FailureReason.Timeout }),
    );
    metrics.outcome(outcome({ outcome: 'failed', applied: true, reason: FailureReason.NoHandler }));
    metrics.outcome(
      outcome({
        outcome: 'cancelled',
        applied: true,
        durationMs: 5,
        reason: FailureReason.Cancelled,
      }),
    );
    // Refused by the storage: its run time counts, its move does not.
    metrics.outcome(outcome({ outcome: 'succeeded', applied: false, durationMs: 6 }));
    // Handed back by the worker: nothing.
    metrics.outcome(outcome({ outcome: 'released', applied: true, retryDelayMs: 1_000 }));

    expect(pointLines(await collect())).toEqual([
      'chokaq.jobs.completed{queue=q,type=t} 1',
      'chokaq.jobs.dlq{queue=q,reason=Cancelled,type=t} 1',
      'chokaq.jobs.dlq{queue=q,reason=NoHandler,type=t} 1',
      'chokaq.jobs.dlq{queue=q,reason=Timeout,type=t} 1',
      'chokaq.jobs.failed{queue=q,type=t} 2',
      'chokaq.jobs.processing_duration{outcome=cancelled,queue=q,type=t} 1',
      'chokaq.jobs.processing_duration{outcome=failed,queue=q,type=t} 1',
      'chokaq.jobs.processing_duration{outcome=retried,queue=q,type=t} 1',
      'chokaq.jobs.processing_duration{outcome=succeeded,queue=q,type=t} 2',
      'chokaq.jobs.retried{queue=q,type=t} 1',
    ]);
  });

  it('measures queue lag from the due time on the given clock, and counts running handlers', async () => {
    const { provider, collect } = meterHarness();
    const metrics = ChokaQMetrics.create({ ...ON, meterProvider: provider });
    const enqueuedAtUtc = new Date(10_000);
    metrics.runStarted({ queue: 'q', type: 't', scheduledAtUtc: null, enqueuedAtUtc }, 10_250);
    metrics.runStarted(
      { queue: 'q', type: 't', scheduledAtUtc: new Date(20_000), enqueuedAtUtc },
      20_040,
    );
    // A clock estimate behind the due time is never a negative lag.
    metrics.runStarted(
      { queue: 'q', type: 't', scheduledAtUtc: new Date(30_000), enqueuedAtUtc },
      29_990,
    );
    metrics.runEnded('q');
    const points = await collect();
    expect(pointLines(points)).toEqual([
      'chokaq.jobs.queue_lag{queue=q,type=t} 3',
      'chokaq.workers.active{queue=q} 2',
    ]);
    expect(points.find((p) => p.name === 'chokaq.jobs.queue_lag')?.histogram).toEqual({
      sum: 290,
      min: 0,
      max: 250,
    });
  });

  it('counts zombies, conflicts, heartbeat failures and circuit events', async () => {
    const { provider, collect } = meterHarness();
    const metrics = ChokaQMetrics.create({ ...ON, meterProvider: provider });
    metrics.zombies([zombie('q', 't', 'dlq'), zombie('q', 't', 'hot'), zombie('q', 'u', 'dlq')]);
    metrics.conflict({ queue: 'q', type: 't' }, 'started');
    metrics.conflict({ queue: 'q', type: 't' }, 'succeeded');
    metrics.conflict(undefined, 'released', 2);
    metrics.heartbeatFailed();
    metrics.heartbeatFailed();
    metrics.circuit('q', 't', 'opened');
    metrics.circuit('q', 't', 'rejected');
    metrics.circuit('q', 't', 'rejected');
    expect(pointLines(await collect())).toEqual([
      'chokaq.circuits.events{outcome=opened,queue=q,type=t} 1',
      'chokaq.circuits.events{outcome=rejected,queue=q,type=t} 2',
      'chokaq.jobs.dlq{queue=q,reason=Zombie,type=t} 1',
      'chokaq.jobs.dlq{queue=q,reason=Zombie,type=u} 1',
      'chokaq.jobs.heartbeat_failures{} 2',
      'chokaq.jobs.retried{queue=q,type=t} 1',
      'chokaq.jobs.state_transition_conflicts{outcome=released} 2',
      'chokaq.jobs.state_transition_conflicts{outcome=started,queue=q,type=t} 1',
      'chokaq.jobs.state_transition_conflicts{outcome=succeeded,queue=q,type=t} 1',
    ]);
  });

  it('records a value past the cardinality budget as "other", per attribute, on every instrument', async () => {
    const { provider, collect } = meterHarness();
    const metrics = ChokaQMetrics.create({ ...ON, maxAttributeValues: 2, meterProvider: provider });
    for (const queue of ['a', 'b', 'c', 'd']) metrics.enqueued(queue, 'x');
    metrics.enqueued('a', 'y');
    metrics.enqueued('a', 'z'); // a third type
    metrics.enqueued('c', 'z'); // both over budget
    for (const reason of [FailureReason.Timeout, FailureReason.FatalError, FailureReason.Zombie]) {
      metrics.outcome(outcome({ queue: 'b', type: 'x', outcome: 'failed', applied: true, reason }));
    }
    // The gauges share the queue budget: queues past it report as one `other` series.
    metrics.observeQueues(async () => [
      { queue: 'a', pending: 1, oldestDueAgeMs: 10, dlqSize: 0 },
      { queue: 'c', pending: 2, oldestDueAgeMs: 30, dlqSize: 4 },
      { queue: 'e', pending: 3, oldestDueAgeMs: 20, dlqSize: 5 },
    ]);
    expect(pointLines(await collect())).toEqual([
      'chokaq.jobs.dlq{queue=b,reason=FatalError,type=x} 1',
      'chokaq.jobs.dlq{queue=b,reason=Timeout,type=x} 1',
      'chokaq.jobs.dlq{queue=b,reason=other,type=x} 1',
      'chokaq.jobs.enqueued{queue=a,type=other} 1',
      'chokaq.jobs.enqueued{queue=a,type=x} 1',
      'chokaq.jobs.enqueued{queue=a,type=y} 1',
      'chokaq.jobs.enqueued{queue=b,type=x} 1',
      'chokaq.jobs.enqueued{queue=other,type=other} 1',
      'chokaq.jobs.enqueued{queue=other,type=x} 2',
      'chokaq.queue.dlq_size{queue=a} 0',
      'chokaq.queue.dlq_size{queue=other} 9',
      'chokaq.queue.oldest_due_age{queue=a} 10',
      'chokaq.queue.oldest_due_age{queue=other} 30',
      'chokaq.queue.pending{queue=a} 1',
      'chokaq.queue.pending{queue=other} 5',
    ]);
  });

  describe('queue gauges', () => {
    const reading: QueueGaugeReading = {
      queue: 'q',
      pending: 3,
      oldestDueAgeMs: 1_500,
      dlqSize: 2,
    };

    it('read the database once per collection for all three gauges, and overlapping collections share a read', async () => {
      const first = new CollectingMetricReader();
      const second = new CollectingMetricReader();
      const provider = new MeterProvider({ readers: [first, second] });
      const metrics = ChokaQMetrics.create({ ...ON, meterProvider: provider });
      let reads = 0;
      let release: () => void = () => undefined;
      metrics.observeQueues(async () => {
        reads++;
        await new Promise<void>((resolve) => (release = resolve));
        return [reading];
      });

      // Two readers collect at once (a scrape and a periodic export): one read serves both.
      const both = Promise.all([collectPoints(first), collectPoints(second)]);
      await waitUntil(() => reads > 0);
      release();
      const [a, b] = await both;
      expect(reads).toBe(1);
      const expected = [
        'chokaq.queue.dlq_size{queue=q} 2',
        'chokaq.queue.oldest_due_age{queue=q} 1500',
        'chokaq.queue.pending{queue=q} 3',
      ];
      expect(pointLines(a)).toEqual(expected);
      expect(pointLines(b)).toEqual(expected);

      // A later collection reads again: the values are never older than their collection.
      const third = collectPoints(first);
      await waitUntil(() => reads > 1);
      release();
      expect(pointLines(await third)).toEqual(expected);
      expect(reads).toBe(2);
    });

    it('observe nothing while the read fails, logging once per outage', async () => {
      const { provider, collect } = meterHarness();
      const logger = eventLogger();
      const metrics = ChokaQMetrics.create({ ...ON, meterProvider: provider }, logger);
      let fail = true;
      metrics.observeQueues(async () => {
        if (fail) throw new Error('connection refused');
        return [reading];
      });
      expect(await collect()).toEqual([]);
      expect(await collect()).toEqual([]);
      fail = false;
      expect(pointLines(await collect())).toHaveLength(3);
      expect(logger.events).toEqual(['QueueGaugesReadFailed', 'QueueGaugesReadRecovered']);
    });

    it('are unregistered by close(), so no collection reads a closed storage', async () => {
      const { provider, collect } = meterHarness();
      const metrics = ChokaQMetrics.create({ ...ON, meterProvider: provider });
      let reads = 0;
      metrics.observeQueues(async () => {
        reads++;
        return [reading];
      });
      expect(await collect()).toHaveLength(3);
      metrics.close();
      metrics.close();
      await collect();
      expect(reads).toBe(1);
    });
  });
});

/** Waits (bounded) until `condition` holds, yielding to the event loop between checks. */
async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !condition(); i++) await new Promise((r) => setImmediate(r));
  if (!condition()) throw new Error('condition not met');
}
