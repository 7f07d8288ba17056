import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { StreamLogger } from '../common/stream-logger';
import { toError } from '../common/error-text';
import { logEvent } from '../common/log-events';
import { libraryVersion } from '../common/version';
import type { JobOutcome } from '../interfaces/job-outcome.interface';
import { FailureReason } from '../interfaces/job-status.enum';
import type { RescuedZombie } from '../interfaces/job.interface';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import { AttributeBudget } from './attribute-budget';
import { CHOKAQ_METER_NAME, CHOKAQ_METRICS, type ChokaQMetricName } from './metric-instruments';
import {
  loadOtelApi,
  type OtelApi,
  type OtelAttributes,
  type OtelBatchObservableCallback,
  type OtelCounter,
  type OtelHistogram,
  type OtelInstrumentOptions,
  type OtelMeter,
  type OtelMeterProvider,
  type OtelObservable,
} from './otel-api';
import type { QueueGaugeReading, QueueGaugeSource } from './queue-gauges';

/** What a state transition conflict refused: a run's outcome, or its start. */
export type ConflictOutcome = JobOutcome['outcome'] | 'started';

/** A circuit breaker event, as the `outcome` attribute of `chokaq.circuits.events`. */
export type CircuitEvent = 'opened' | 'half-opened' | 'closed' | 'rejected';

/** What a run's start is measured from: its row as claimed. */
interface StartedRun {
  queue: string;
  type: string;
  scheduledAtUtc: Date | null;
  enqueuedAtUtc: Date;
}

/**
 * Millisecond buckets of both histograms: the SDK's default stops at 10 s, and job run times and
 * queue lags run from milliseconds to the 15-minute default timeout and beyond.
 */
export const DURATION_BUCKETS_MS = [
  0, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000,
  3_600_000,
];

/** The synchronous instruments, created once per {@link ChokaQMetrics}. */
interface Instruments {
  enqueued: OtelCounter;
  completed: OtelCounter;
  failed: OtelCounter;
  retried: OtelCounter;
  dlq: OtelCounter;
  processingDuration: OtelHistogram;
  queueLag: OtelHistogram;
  active: OtelCounter;
  heartbeatFailures: OtelCounter;
  conflicts: OtelCounter;
  circuits: OtelCounter;
}

/**
 * ChokaQ's OpenTelemetry instruments (meter `chokaq`, the table {@link CHOKAQ_METRICS}) behind the
 * calls the runtime and the producer make at each event: a run started or ended, an outcome
 * written, a zombie rescued, a conflict, a failed heartbeat, a circuit event, an enqueue.
 *
 * **Off costs nothing measurable.** Without `@opentelemetry/api`, without a `MeterProvider` (the
 * API's global one is a no-op until an SDK registers), or with `metrics.enabled: false`, the
 * instance is disabled: every method returns at its first line, and no attribute object is built.
 * The bench's metrics A/B measures the drain with and without (bench/RESULTS.md).
 *
 * Attribute values pass through one {@link AttributeBudget} per attribute key, shared by every
 * instrument, so `queue` takes the same values on the counters and on the gauges.
 *
 * Not a Nest provider by itself: the module creates it from the resolved options, the runtime
 * gets it through the worker's dependencies (a no-op one by default).
 */
export class ChokaQMetrics {
  /** False when nothing is recorded (see the class comment). */
  readonly enabled: boolean;
  private readonly instruments: Instruments | undefined;
  private readonly budgets: Record<'queue' | 'type' | 'reason' | 'outcome', AttributeBudget>;
  private readonly observers = new Set<() => void>();

  private constructor(
    private readonly meter: OtelMeter | undefined,
    maxAttributeValues: number,
    private readonly logger: ChokaQLogger,
  ) {
    this.enabled = meter !== undefined;
    this.budgets = {
      queue: new AttributeBudget(maxAttributeValues),
      type: new AttributeBudget(maxAttributeValues),
      reason: new AttributeBudget(maxAttributeValues),
      outcome: new AttributeBudget(maxAttributeValues),
    };
    this.instruments = meter && createInstruments(meter);
  }

  /** An instance that records nothing (a worker built without metrics, tests). */
  static disabled(): ChokaQMetrics {
    return new ChokaQMetrics(undefined, 1, new StreamLogger('ChokaQ'));
  }

  /**
   * The instruments for `options`: on the given `meterProvider`, else on the global one of
   * `@opentelemetry/api` (loaded here, at most once per call; `loadApi` is for tests). Disabled
   * when the options say so, when the API is not installed, or when the global provider is still
   * the API's no-op one (no SDK registered yet).
   */
  static create(
    options: ResolvedChokaQOptions['metrics'],
    logger: ChokaQLogger = new StreamLogger('ChokaQ'),
    loadApi: () => OtelApi | undefined = loadOtelApi,
  ): ChokaQMetrics {
    if (!options.enabled) return ChokaQMetrics.disabled();
    let provider = options.meterProvider as OtelMeterProvider | undefined;
    let noop: OtelMeter | undefined;
    if (!provider) {
      const api = loadApi();
      if (!api) return ChokaQMetrics.disabled();
      provider = api.metrics.getMeterProvider();
      noop = api.createNoopMeter();
    }
    const meter = provider.getMeter(CHOKAQ_METER_NAME, libraryVersion());
    if (meter === noop) return ChokaQMetrics.disabled();
    return new ChokaQMetrics(meter, options.maxAttributeValues, logger);
  }

  // ------------------------------------------------------------------ producer

  /** `count` jobs of `(queue, type)` were enqueued (created, not idempotent duplicates). */
  enqueued(queue: string, type: string, count = 1): void {
    if (!this.instruments || count <= 0) return;
    this.instruments.enqueued.add(count, this.job(queue, type));
  }

  // ------------------------------------------------------------------ runs

  /** A handler started: its queue lag (due → start, on the database clock) and one more active. */
  runStarted(job: StartedRun, dbNowMs: number): void {
    if (!this.instruments) return;
    const due = (job.scheduledAtUtc ?? job.enqueuedAtUtc).getTime();
    this.instruments.queueLag.record(Math.max(0, dbNowMs - due), this.job(job.queue, job.type));
    this.instruments.active.add(1, { queue: this.budgets.queue.value(job.queue) });
  }

  /** The handler of a run started with {@link runStarted} settled (or was given up). */
  runEnded(queue: string): void {
    if (!this.instruments) return;
    this.instruments.active.add(-1, { queue: this.budgets.queue.value(queue) });
  }

  /**
   * A run's outcome. Its handler's run time whenever the handler ran; the counters only for a
   * move the storage applied, as lifecycle events: a success is `completed`; a failed run (it
   * carries a duration) is `failed`, then `retried` or `dlq` by reason; a job sent to the DLQ
   * without running (no handler, circuit open past its age) is only `dlq`; a cancellation only
   * `dlq` with reason `Cancelled`. A release (the worker handed the job back) counts nothing.
   */
  outcome(outcome: JobOutcome): void {
    const instruments = this.instruments;
    if (!instruments) return;
    const attributes = this.job(outcome.queue, outcome.type);
    const ran = outcome.durationMs !== undefined;
    if (ran) {
      instruments.processingDuration.record(outcome.durationMs!, {
        ...attributes,
        outcome: this.budgets.outcome.value(outcome.outcome),
      });
    }
    if (outcome.applied !== true) return;
    switch (outcome.outcome) {
      case 'succeeded':
        instruments.completed.add(1, attributes);
        return;
      case 'retried':
        if (ran) instruments.failed.add(1, attributes);
        instruments.retried.add(1, attributes);
        return;
      case 'failed':
      case 'cancelled': {
        const reason = outcome.reason ?? FailureReason.MaxRetriesExceeded;
        if (ran && reason !== FailureReason.Cancelled) instruments.failed.add(1, attributes);
        instruments.dlq.add(1, { ...attributes, reason: this.reason(reason) });
        return;
      }
      case 'released':
        return;
    }
  }

  /** Zombies the rescue loop of this process moved: to the DLQ as `Zombie`, or retried. */
  zombies(rescued: readonly RescuedZombie[]): void {
    const instruments = this.instruments;
    if (!instruments) return;
    for (const { job, pillar } of rescued) {
      const attributes = this.job(job.queue, job.type);
      if (pillar === 'dlq') {
        instruments.dlq.add(1, { ...attributes, reason: this.reason(FailureReason.Zombie) });
      } else {
        instruments.retried.add(1, attributes);
      }
    }
  }

  /**
   * `count` transitions of `job`'s runs the storage refused (the lease no longer matched).
   * Without a job (a batch of mixed jobs whose refused rows are not known), without `queue` and
   * `type`.
   */
  conflict(job: { queue: string; type: string } | undefined, outcome: ConflictOutcome, count = 1) {
    if (!this.instruments || count <= 0) return;
    const base: OtelAttributes = job ? this.job(job.queue, job.type) : {};
    this.instruments.conflicts.add(count, {
      ...base,
      outcome: this.budgets.outcome.value(outcome),
    });
  }

  /** One batched heartbeat of this process failed. */
  heartbeatFailed(): void {
    this.instruments?.heartbeatFailures.add(1);
  }

  /** A circuit breaker event of `(queue, type)`. */
  circuit(queue: string, type: string, event: CircuitEvent): void {
    if (!this.instruments) return;
    this.instruments.circuits.add(1, {
      ...this.job(queue, type),
      outcome: this.budgets.outcome.value(event),
    });
  }

  // ------------------------------------------------------------------ gauges

  /**
   * Registers the queue gauges, all three fed by one callback (a batch observable callback), so
   * `source` — the database read — runs once per collection, not once per gauge. Collections that
   * overlap (two metric readers, a scrape during a slow read) share the read in flight. A failed
   * read observes nothing and is logged once per outage. Returns the unregistering function;
   * {@link close} unregisters every one. A no-op when disabled.
   */
  observeQueues(source: QueueGaugeSource): () => void {
    const meter = this.meter;
    if (!meter) return () => undefined;
    const gauge = (name: ChokaQMetricName) =>
      meter.createObservableGauge(name, instrumentOptions(name));
    const pending = gauge('chokaq.queue.pending');
    const oldest = gauge('chokaq.queue.oldest_due_age');
    const dlq = gauge('chokaq.queue.dlq_size');
    const observables: OtelObservable[] = [pending, oldest, dlq];
    let inflight: Promise<QueueGaugeReading[] | undefined> | undefined;
    let failures = 0;
    const read = async (): Promise<QueueGaugeReading[] | undefined> => {
      try {
        const readings = await source();
        if (failures > 0) {
          logEvent(
            this.logger,
            'QueueGaugesReadRecovered',
            `Queue gauges read again after ${failures} failed collection(s)`,
            { failures },
          );
        }
        failures = 0;
        return readings;
      } catch (error) {
        failures++;
        if (failures === 1) {
          const message = toError(error).message;
          logEvent(
            this.logger,
            'QueueGaugesReadFailed',
            `Reading the queue gauges failed: ${message}. Collections observe no queue gauge until ` +
              'a read succeeds; further failures are counted, not logged.',
            { error: message },
          );
        }
        return undefined;
      }
    };
    const callback: OtelBatchObservableCallback = async (result) => {
      inflight ??= read().finally(() => (inflight = undefined));
      const readings = await inflight;
      if (!readings) return;
      for (const [queue, reading] of this.byQueueAttribute(readings)) {
        const attributes = { queue };
        result.observe(pending, reading.pending, attributes);
        result.observe(oldest, reading.oldestDueAgeMs, attributes);
        result.observe(dlq, reading.dlqSize, attributes);
      }
    };
    meter.addBatchObservableCallback(callback, observables);
    const remove = () => {
      if (!this.observers.delete(remove)) return;
      meter.removeBatchObservableCallback(callback, observables);
    };
    this.observers.add(remove);
    return remove;
  }

  /** Unregisters the gauges (before the storage they read closes). Idempotent. */
  close(): void {
    for (const remove of [...this.observers]) remove();
  }

  /**
   * Readings by `queue` attribute value: queues past the budget share `other`, which reports their
   * sums (pending, DLQ) and the oldest age among them, as one series must.
   */
  private byQueueAttribute(readings: readonly QueueGaugeReading[]): Map<string, QueueGaugeReading> {
    const out = new Map<string, QueueGaugeReading>();
    for (const reading of readings) {
      const queue = this.budgets.queue.value(reading.queue);
      const seen = out.get(queue);
      if (!seen) {
        out.set(queue, { ...reading, queue });
      } else {
        seen.pending += reading.pending;
        seen.dlqSize += reading.dlqSize;
        seen.oldestDueAgeMs = Math.max(seen.oldestDueAgeMs, reading.oldestDueAgeMs);
      }
    }
    return out;
  }

  private job(queue: string, type: string): OtelAttributes {
    return { queue: this.budgets.queue.value(queue), type: this.budgets.type.value(type) };
  }

  private reason(reason: FailureReason): string {
    return this.budgets.reason.value(FailureReason[reason] ?? String(reason));
  }
}

function instrumentOptions(name: ChokaQMetricName): OtelInstrumentOptions {
  const spec = CHOKAQ_METRICS[name];
  const options: OtelInstrumentOptions = { description: spec.description };
  if (spec.unit) options.unit = spec.unit;
  if (spec.kind === 'histogram') options.advice = { explicitBucketBoundaries: DURATION_BUCKETS_MS };
  return options;
}

function createInstruments(meter: OtelMeter): Instruments {
  const counter = (name: ChokaQMetricName) => meter.createCounter(name, instrumentOptions(name));
  const histogram = (name: ChokaQMetricName) =>
    meter.createHistogram(name, instrumentOptions(name));
  return {
    enqueued: counter('chokaq.jobs.enqueued'),
    completed: counter('chokaq.jobs.completed'),
    failed: counter('chokaq.jobs.failed'),
    retried: counter('chokaq.jobs.retried'),
    dlq: counter('chokaq.jobs.dlq'),
    processingDuration: histogram('chokaq.jobs.processing_duration'),
    queueLag: histogram('chokaq.jobs.queue_lag'),
    active: meter.createUpDownCounter(
      'chokaq.workers.active',
      instrumentOptions('chokaq.workers.active'),
    ),
    heartbeatFailures: counter('chokaq.jobs.heartbeat_failures'),
    conflicts: counter('chokaq.jobs.state_transition_conflicts'),
    circuits: counter('chokaq.circuits.events'),
  };
}
