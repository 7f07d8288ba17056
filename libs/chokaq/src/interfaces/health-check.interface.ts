/*
 * Options of the Terminus health checks of `@chokaq/nestjs/health` (`ChokaQHealthIndicator`).
 * Types only; the rules that check them live in `validation/validate-health.ts`.
 */

/** Options of `ChokaQHealthIndicator.storage()`. @publicApi */
export interface StorageCheckOptions {
  /**
   * How long the check waits for the database, in ms, before it reports the storage down with
   * `reason: 'timeout'`. An integer ≥ 1. Default 3,000.
   */
  timeoutMs?: number;
}

/** Options of `ChokaQHealthIndicator.worker()`. @publicApi */
export interface WorkerCheckOptions {
  /**
   * The worker is down when its last complete heartbeat is older than this, in ms. An integer ≥ 1.
   * Default three heartbeat intervals (`heartbeat.intervalMs` × 3, 30,000 with the defaults): one
   * late or failed beat does not turn it down, an outage of a few beats does.
   */
  heartbeatStaleMs?: number;
}

/** Options of `ChokaQHealthIndicator.queues()`. @publicApi */
export interface QueuesCheckOptions {
  /**
   * A queue whose oldest due Pending job has waited this long (in ms) or longer is degraded: the
   * check stays up and says `level: 'degraded'`. An integer ≥ 0, at most `lagUnhealthyMs`.
   * Required.
   */
  lagDegradedMs: number;
  /**
   * A queue whose oldest due Pending job has waited this long (in ms) or longer is unhealthy: the
   * check is down (`level: 'unhealthy'`). An integer ≥ 0. Required.
   */
  lagUnhealthyMs: number;
  /**
   * The queues to check (valid queue names, at most 10,000). Default: every queue that is neither
   * paused nor retired (a paused queue lags by an operator's choice); a queue named here is checked
   * whatever its controls.
   */
  queues?: readonly string[];
  /**
   * How long the check waits for the database, in ms, before it reports down with
   * `reason: 'timeout'`. An integer ≥ 1. Default 3,000.
   */
  timeoutMs?: number;
}

/** How a queue's lag compares with the thresholds of `QueuesCheckOptions`. @publicApi */
export type QueueLagLevel = 'healthy' | 'degraded' | 'unhealthy';
