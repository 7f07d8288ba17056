import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { toError } from '../common/error-text';
import { jittered } from '../common/jitter';
import { logEvent } from '../common/log-events';
import { type JobLease } from '../interfaces/job.interface';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import type { ChokaQMetrics } from '../observability/chokaq-metrics';
import type { JobStore } from '../storage/job-storage';
import { MAX_ENQUEUE_MANY } from '../validation/limits';
import { Loop } from './loop';
import type { WorkerPresence } from './worker-presence';

/** What the heartbeat is built from. */
export interface HeartbeatDeps {
  storage: Pick<JobStore, 'keepAlive'>;
  options: ResolvedChokaQOptions;
  workerId: string;
  /** Every lease this process owns now (buffered, running, awaiting completion). */
  leases: () => JobLease[];
  /** Jobs whose cancellation was requested (from `keepAlive`). */
  onCancelRequested: (ids: string[]) => void;
  /** `failureThreshold` consecutive failures were reached (called once per outage). */
  onThresholdReached: () => void;
  logger: ChokaQLogger;
  /**
   * Writes this worker's row of the Workers table; called on every beat after the leases, with or
   * without leases (it never rejects). Default: no row.
   */
  presence?: Pick<WorkerPresence, 'beat'>;
  /** Where failed heartbeats are counted (`chokaq.jobs.heartbeat_failures`). Default: nowhere. */
  metrics?: Pick<ChokaQMetrics, 'heartbeatFailed'>;
  /** The clock of {@link HeartbeatLoop.ageMs} (this process's, in ms). Default `Date.now`. */
  clock?: () => number;
}

/**
 * One batched `keepAlive` per process every `heartbeat.intervalMs` ±20 % (SPEC §4), then the
 * worker's row of the Workers table (one statement more per beat, idle or not). The `keepAlive`
 * covers Fetched rows too (so a slow buffer never loses its claims to `recoverAbandoned`) and
 * completions waiting for their batch. Its failures are handled here rather than by the loop's
 * error backoff: the heartbeat keeps its cadence during an outage (a late heartbeat is how jobs
 * become zombies), logs the outage once, and reacts once at `failureThreshold`. The row's writes
 * are not part of that count: a job is never aborted for them.
 */
export class HeartbeatLoop {
  private readonly loop: Loop;
  private failures = 0;
  private beats = 0;
  private degraded = false;
  private readonly clock: () => number;
  /** When the last complete beat ended, or the loop started while none has (the age's origin). */
  private lastBeatAt: number | undefined;

  constructor(private readonly deps: HeartbeatDeps) {
    this.clock = deps.clock ?? Date.now;
    this.loop = new Loop({
      name: 'ChokaQ heartbeat',
      logger: deps.logger,
      tick: () => this.tick(),
      intervalMs: () => jittered(deps.options.heartbeat.intervalMs, 0.2),
      initialDelayMs: jittered(deps.options.heartbeat.intervalMs, 0.2),
    });
  }

  /** Consecutive failed heartbeats (0 when healthy). */
  get consecutiveFailures(): number {
    return this.failures;
  }

  /** Successful heartbeats over the loop's life. */
  get beatCount(): number {
    return this.beats;
  }

  /** True after `failureThreshold` consecutive failures, until a heartbeat succeeds. */
  get isDegraded(): boolean {
    return this.degraded;
  }

  /**
   * How long ago the last complete beat reached the database, in ms: its leases renewed (or none
   * to renew) and this worker's row written. Counted from `start()` until the first beat, and
   * undefined before it. What a health check compares with its staleness threshold: during an
   * outage it grows by the clock, whatever the failure count says.
   */
  ageMs(): number | undefined {
    return this.lastBeatAt === undefined ? undefined : this.clock() - this.lastBeatAt;
  }

  start(): void {
    this.lastBeatAt ??= this.clock();
    this.loop.start();
  }

  /** Beat now (e.g. right after a large claim). */
  nudge(): void {
    this.loop.nudge();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /**
   * One heartbeat: the leases first (what keeps running jobs from becoming zombies), then this
   * worker's row. Exposed for tests and for a final beat during shutdown.
   */
  async tick(): Promise<void> {
    const renewed = await this.renewLeases();
    const written = (await this.deps.presence?.beat()) ?? true;
    if (renewed && written) this.lastBeatAt = this.clock();
  }

  /** Renews every owned lease; false when the renewal failed (true when there was none). */
  private async renewLeases(): Promise<boolean> {
    const leases = this.deps.leases();
    // Nothing to keep alive: no statement runs, so an outage streak neither ends nor grows.
    if (leases.length === 0) return true;
    try {
      // One statement per process in the normal case; a process owning more leases than one
      // storage call takes (prefetch can be large) beats in consecutive chunks.
      const cancelRequested: string[] = [];
      for (let i = 0; i < leases.length; i += MAX_ENQUEUE_MANY) {
        const chunk = leases.slice(i, i + MAX_ENQUEUE_MANY);
        const result = await this.deps.storage.keepAlive(this.deps.workerId, chunk);
        cancelRequested.push(...result.cancelRequested);
      }
      this.beats++;
      this.recovered();
      if (cancelRequested.length > 0) this.deps.onCancelRequested(cancelRequested);
      return true;
    } catch (error) {
      this.failures++;
      this.deps.metrics?.heartbeatFailed();
      const workerId = this.deps.workerId;
      if (this.failures === 1) {
        const message = toError(error).message;
        logEvent(
          this.deps.logger,
          'HeartbeatFailed',
          `Heartbeat failed: ${message}. Further failures are counted, not logged.`,
          { workerId, error: message },
        );
      }
      if (this.failures === this.deps.options.heartbeat.failureThreshold) {
        this.degraded = true;
        const abortRunning = this.deps.options.heartbeat.cancelOnHeartbeatFailure;
        logEvent(
          this.deps.logger,
          'HeartbeatThresholdReached',
          `Heartbeat failed ${this.failures} times in a row; ` +
            (abortRunning
              ? 'aborting running jobs (another process may take them over as zombies).'
              : 'continuing degraded (heartbeat.cancelOnHeartbeatFailure is false).'),
          { workerId, failures: this.failures, abortRunning },
        );
        this.deps.onThresholdReached();
      }
      return false;
    }
  }

  private recovered(): void {
    if (this.failures > 0) {
      logEvent(
        this.deps.logger,
        'HeartbeatRecovered',
        `Heartbeat recovered after ${this.failures} failed attempt(s)`,
        { workerId: this.deps.workerId, failures: this.failures },
      );
    }
    this.failures = 0;
    this.degraded = false;
  }
}
