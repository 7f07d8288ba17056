/** The kind of an OpenTelemetry instrument. */
export type MetricInstrumentKind = 'counter' | 'upDownCounter' | 'histogram' | 'observableGauge';

/** An attribute ChokaQ puts on its data points; each has its own cardinality budget. */
export type MetricAttribute = 'queue' | 'type' | 'reason' | 'outcome';

/** One row of {@link CHOKAQ_METRICS}. */
export interface MetricInstrumentSpec {
  readonly kind: MetricInstrumentKind;
  /** UCUM unit (`ms`), or empty for a count, as the .NET ChokaQ declares them. */
  readonly unit: string;
  /** The attributes every data point carries, in this order. */
  readonly attributes: readonly MetricAttribute[];
  readonly description: string;
}

/** The name of ChokaQ's meter. */
export const CHOKAQ_METER_NAME = 'chokaq';

/**
 * Every instrument of the meter `chokaq`, by name. The names and units of the first eleven are
 * those of the .NET ChokaQ, so one dashboard serves both; the three gauges are read from the
 * database. Names, kinds, units and attributes are contract (a spec pins them): a dashboard or an
 * alert may key on them. The description may change.
 *
 * Attribute values: `queue` and `type` as stored; `reason` a `FailureReason` name
 * (`MaxRetriesExceeded`, `Zombie`, …); `outcome` a `JobOutcome` outcome (`succeeded`, `retried`,
 * `failed` — moved to the DLQ —, `cancelled`, `released`) or `started` for conflicts, and
 * `opened`, `half-opened`, `closed`, `rejected` for circuits. Each attribute takes at most
 * `metrics.maxAttributeValues` distinct values in a process; later ones are recorded as `other`.
 *
 * @publicApi
 */
export const CHOKAQ_METRICS = {
  'chokaq.jobs.enqueued': {
    kind: 'counter',
    unit: '',
    attributes: ['queue', 'type'],
    description:
      'Jobs this process enqueued (JobClient, recurring slots and triggers); an idempotent duplicate is not counted',
  },
  'chokaq.jobs.completed': {
    kind: 'counter',
    unit: '',
    attributes: ['queue', 'type'],
    description: 'Runs archived as succeeded',
  },
  'chokaq.jobs.failed': {
    kind: 'counter',
    unit: '',
    attributes: ['queue', 'type'],
    description:
      'Runs whose handler failed (threw, timed out, lost its heartbeat), whether retried or moved to the DLQ',
  },
  'chokaq.jobs.retried': {
    kind: 'counter',
    unit: '',
    attributes: ['queue', 'type'],
    description:
      'Jobs sent back to Pending to be tried again, zombies retried by the rescue included',
  },
  'chokaq.jobs.dlq': {
    kind: 'counter',
    unit: '',
    attributes: ['queue', 'type', 'reason'],
    description: 'Jobs this process moved to the DLQ, by failure reason (zombies included)',
  },
  'chokaq.jobs.processing_duration': {
    kind: 'histogram',
    unit: 'ms',
    attributes: ['queue', 'type', 'outcome'],
    description: 'Handler run time, by how the run ended',
  },
  'chokaq.jobs.queue_lag': {
    kind: 'histogram',
    unit: 'ms',
    attributes: ['queue', 'type'],
    description:
      'Time from when a job became due (its schedule, else its enqueue) to the start of its run',
  },
  'chokaq.workers.active': {
    kind: 'upDownCounter',
    unit: '',
    attributes: ['queue'],
    description: 'Handlers running now in this process',
  },
  'chokaq.jobs.heartbeat_failures': {
    kind: 'counter',
    unit: '',
    attributes: [],
    description: 'Failed heartbeats of this process (one batched statement covers all its jobs)',
  },
  'chokaq.jobs.state_transition_conflicts': {
    kind: 'counter',
    unit: '',
    attributes: ['queue', 'type', 'outcome'],
    description:
      'Transitions the storage refused because the lease no longer matched (cancelled, rescued or resurrected meanwhile), by the outcome refused',
  },
  'chokaq.circuits.events': {
    kind: 'counter',
    unit: '',
    attributes: ['queue', 'type', 'outcome'],
    description:
      "Circuit breaker events of this process's job types: opened, half-opened, closed, rejected (a job held back)",
  },
  'chokaq.queue.pending': {
    kind: 'observableGauge',
    unit: '',
    attributes: ['queue'],
    description:
      'Pending jobs that are due now (not those scheduled for later), read from the database',
  },
  'chokaq.queue.oldest_due_age': {
    kind: 'observableGauge',
    unit: 'ms',
    attributes: ['queue'],
    description:
      'How long the oldest due Pending job has waited since it became due, read from the database',
  },
  'chokaq.queue.dlq_size': {
    kind: 'observableGauge',
    unit: '',
    attributes: ['queue'],
    description: 'Jobs in the DLQ, read from the database (an index count of the queue’s DLQ rows)',
  },
} as const satisfies Record<string, MetricInstrumentSpec>;

/** The name of one of ChokaQ's instruments. @publicApi */
export type ChokaQMetricName = keyof typeof CHOKAQ_METRICS;
