import type { AllocationSample } from './allocation-sampler';
import type { ArchivePartitioning } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import type { BenchDialect } from '../lib/args';

/** The job queues the bench workers run. */
export type SystemKind = 'chokaq' | 'graphile' | 'pgboss';

/** Everything a bench worker process needs, passed as JSON in `BENCH_WORKER_CONFIG`. */
export interface WorkerConfig {
  kind: SystemKind;
  /** `default`, `preset` (graphile-worker) or `best` (pg-boss). */
  variant: string;
  dialect: BenchDialect;
  /** PostgreSQL connection string (database `chokaq_bench`). */
  url?: string;
  /** SQLite file. */
  file?: string;
  /** PostgreSQL schema of this run (SQLite: table prefix). */
  schema: string;
  queue: string;
  /**
   * ChokaQ's scale scenario only: the queues its queue-wide handler runs (the seeded backlog's
   * queues). Absent: `queue` alone.
   */
  queues?: string[];
  concurrency: number;
  /** Profile mode: time every storage operation and every SQL statement in the worker. */
  timeStatements?: boolean;
  /** Profile mode: sample the worker's allocations from `start` to `stop` (its report's `allocations`). */
  sampleAllocations?: boolean;
  /**
   * PostgreSQL drains: count the worker's round trips and transactions (`pg` clients), from the
   * `start` message on, for the `counts` answer to `mark`.
   */
  countStatements?: boolean;
  /**
   * ChokaQ on PostgreSQL, the partitions scenario: `storage.partitioning`, as the schema was made,
   * so the worker is configured as an application of that schema would be (its retention would
   * make partitions by it; `autoCreateSchema` is off, so its start changes nothing). Absent: none.
   */
  partitioning?: ArchivePartitioning;
  /** Soak scenario only: ChokaQ's retention, so the maintenance loop deletes as it would in production. */
  retention?: { archiveMs: number; intervalMs: number };
  /** Profile experiments only: ChokaQ worker options other than the defaults. */
  chokaqWorker?: {
    batchSize?: number;
    prefetch?: number;
    pollIntervalMs?: number;
    startAhead?: number;
  };
  /**
   * Metrics A/B only (ChokaQ): `off` = `metrics.enabled: false`; `api` = the defaults with
   * `@opentelemetry/api` installed and no SDK registered; `sdk` = an SDK `MeterProvider` with the
   * Prometheus exporter registered globally first, as an application would. Absent: the worker
   * is built without metrics (what the other scenarios measure).
   */
  metrics?: MetricsVariant;
  /** ChokaQ only: the handler's shape (`--handler-batch`, `--handler-ms`, `--handler-sink`); absent: queue-wide. */
  handler?: { batch: number; callMs: number; sink: boolean };
  /**
   * Crash scenario only: the handler appends each job's payload `i` to this file, with a
   * synchronous write before it returns, so after a SIGKILL the file lists exactly the jobs whose
   * handler ran.
   */
  runsFile?: string;
}

/** How a ChokaQ bench worker is set up for metrics (see {@link WorkerConfig.metrics}). */
export type MetricsVariant = 'off' | 'api' | 'sdk';

/**
 * Parent → worker. `mark` asks for the statement counts so far (answered by `counts`), `memory`
 * for the process's memory now (answered by `memory`).
 */
export type ToWorker = { type: 'start' } | { type: 'stop' } | { type: 'mark' } | { type: 'memory' };

/** A worker process's memory, MB: now, and its RSS's peak since the previous `memory` message. */
export interface WorkerMemory {
  rssMb: number;
  /** Sampled every 250 ms (and now), from the previous `memory` message or the process's start. */
  peakRssMb: number;
  heapUsedMb: number;
}

/** Round trips and committed transactions of the worker's `pg` clients since `start`. */
export interface StatementCounts {
  roundTrips: number;
  transactions: number;
}

/** Accumulated time of one operation or statement. */
export interface Timing {
  count: number;
  totalMs: number;
  maxMs: number;
  /**
   * Statements only: CPU time the server's backend spent while the statement was in flight, from
   * Linux's `/proc/<backend pid>/schedstat` (the bench's server runs on the same host).
   */
  serverMs?: number;
}

/** What a worker reports when it stops. */
export interface WorkerReport {
  handled: number;
  /** Peak resident set size of the process, from `process.resourceUsage().maxRSS` (KiB). */
  maxRssKb: number;
  /** Enqueue-to-handler-start latency of jobs whose payload carried `t` (epoch ms, sub-ms precision). */
  latenciesMs: number[];
  /** Profile mode only: per storage operation and per SQL statement. */
  timings?: { operations: Record<string, Timing>; statements: Record<string, Timing> };
  /** Profile mode only (`sampleAllocations`): what the worker allocated while it ran. */
  allocations?: AllocationSample;
}

/** Worker → parent. */
export type FromWorker =
  | { type: 'ready' }
  | { type: 'progress'; handled: number }
  | { type: 'report'; report: WorkerReport }
  | { type: 'counts'; counts: StatementCounts }
  | { type: 'memory'; memory: WorkerMemory }
  | { type: 'error'; message: string };

/** The payload every bench job carries; `t` only in the latency scenario. */
export interface BenchPayload {
  i?: number;
  t?: number;
}

/** A started worker of one system, as the bench worker process drives it. */
export interface SystemRunner {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Builds a runner; `onJob` must be called at the start of every handler run. */
export type RunnerFactory = (
  config: WorkerConfig,
  onJob: (payload: BenchPayload) => void,
) => Promise<SystemRunner>;
