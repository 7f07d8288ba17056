import type { HandledJobs } from './job.interface';

/*
 * The Workers table: what each worker process reports with its heartbeat, and what operators read
 * back (`ChokaQAdmin.listWorkers`). Types only; the rules that check them live in `validation/`.
 */

/** State of one job type's circuit breaker in one process. @publicApi */
export type CircuitState = 'closed' | 'open' | 'half-open';

/**
 * What a worker process writes into its row of the Workers table with every heartbeat
 * (`JobStore.upsertWorker`). Times are not part of it: the database clock stamps them.
 *
 * @publicApi
 */
export interface WorkerHeartbeat {
  /** The worker id (`worker.workerId`), the row's key. */
  workerId: string;
  /** Host name of the process. */
  host: string;
  /** Process id. */
  pid: number;
  /** Version of `@chokaq/nestjs` the process runs. */
  libraryVersion: string;
  /** Handlers it may run at once. */
  concurrency: number;
  /** Handlers running now. */
  running: number;
  /** What it claims: queue-wide handlers and exact `(queue, type)` handlers. */
  handled: HandledJobs;
  /** Circuits that are not closed, by `queue/type`. */
  circuits: Readonly<Record<string, CircuitState>>;
  /** True once its graceful shutdown began: it claims nothing new and finishes what it runs. */
  draining: boolean;
  /**
   * True on the first report of a run of the process: `StartedAtUtc` is set to now and a stop
   * recorded under the same worker id (a fixed `worker.workerId` reused) is cleared. Later
   * reports keep both.
   */
  starting: boolean;
}

/**
 * Where a worker is in its life, as `listWorkers` computes it:
 * - `running`: it reported within the lost threshold and is not draining;
 * - `draining`: its graceful shutdown began (it finishes running jobs, claims none);
 * - `stopped`: it shut down cleanly and said so;
 * - `lost`: it has not reported for longer than the lost threshold (the zombie timeout) and never
 *   said it stopped: crashed, killed, or cut off from the database. Its running jobs become
 *   zombies for the rescue loop.
 *
 * @publicApi
 */
export type WorkerState = 'running' | 'draining' | 'stopped' | 'lost';

/** One row of the Workers table, with its computed {@link WorkerState}. @publicApi */
export interface WorkerInfo {
  workerId: string;
  host: string;
  pid: number;
  libraryVersion: string;
  /** When this run of the worker first reported (database clock). */
  startedAtUtc: Date;
  /** Its last report (database clock). */
  lastSeenUtc: Date;
  /** When it reported a clean stop; null unless `state` is `stopped`. */
  stoppedAtUtc: Date | null;
  concurrency: number;
  /** Handlers running at its last report (0 once stopped). */
  running: number;
  handled: HandledJobs;
  /** Circuits that were not closed at its last report, by `queue/type`. */
  circuits: Record<string, CircuitState>;
  /** It reported that its graceful shutdown began. */
  draining: boolean;
  state: WorkerState;
}

/** Arguments of `listWorkers`. @publicApi */
export interface WorkerQuery {
  /**
   * A worker not seen for longer than this (in ms, by the database clock) and not stopped is
   * `lost`. `ChokaQAdmin.listWorkers` passes `rescue.zombieTimeoutMs`; a direct storage call
   * defaults to the default zombie timeout (600,000).
   */
  lostAfterMs?: number;
  /** At most this many rows, the most recently seen first: 1 to 10,000, default 1,000. */
  limit?: number;
}

/**
 * Where this process's worker is in its life, as `ChokaQAdmin.localWorkerHealth` reads it:
 * - `starting`: the application is bootstrapping it; its loops do not run yet;
 * - `running`: its loops run (it claims, runs and heartbeats);
 * - `draining`: its graceful shutdown began (it claims nothing new, finishes what it runs);
 * - `stopped`: its shutdown is over.
 *
 * @publicApi
 */
export type LocalWorkerState = 'starting' | 'running' | 'draining' | 'stopped';

/**
 * This process's worker as a health check sees it, read from the process's memory (no database
 * read, so it answers at once whatever the database does). @publicApi
 */
export interface LocalWorkerHealth {
  workerId: string;
  state: LocalWorkerState;
  /**
   * How long ago the last complete heartbeat reached the database, in ms (by this process's
   * clock): the leases it owns renewed (or none to renew) and its row of the Workers table
   * written. Counted from the start of the loops until the first beat; null before they start.
   * It grows without bound while the database is unreachable.
   */
  heartbeatAgeMs: number | null;
  /** `heartbeat.intervalMs` of this process: a beat is due about this often (±20 %). */
  heartbeatIntervalMs: number;
  /** Consecutive failed lease renewals (0 when the last one succeeded). */
  heartbeatFailures: number;
  /** Claimed jobs waiting in its buffer. */
  buffered: number;
  /** Handlers running now. */
  running: number;
  /** Handlers it may run at once. */
  concurrency: number;
}
