import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { toError } from '../common/error-text';
import { jittered } from '../common/jitter';
import { logEvent } from '../common/log-events';
import { runAfter, type ScheduledCall } from './run-after';

/**
 * What a tick may resolve to: a delay in ms, nothing (the loop's interval), or {@link IDLE_TICK}.
 */
export type TickResult = number | void | typeof IDLE_TICK;

/**
 * A tick that had nothing to do and did not reach its resource (e.g. a fetcher with no free
 * capacity). It proves nothing about an outage: a failure streak stays open, and the next tick
 * waits the streak's backoff (or the interval when healthy).
 */
export const IDLE_TICK: unique symbol = Symbol('chokaq.idleTick');

/** How a {@link Loop} runs. */
export interface LoopOptions {
  /** Name used in logs, e.g. `fetcher`. */
  name: string;
  /**
   * One tick. Resolves to the delay before the next tick in ms, `undefined` for
   * {@link LoopOptions.intervalMs}, or {@link IDLE_TICK}. A rejection is an outage: logged once,
   * retried with backoff.
   */
  tick: () => Promise<TickResult>;
  /** Default delay between ticks (called each time, so it may jitter). */
  intervalMs: () => number;
  /** Delay before the first tick. Default 0. */
  initialDelayMs?: number;
  logger: ChokaQLogger;
  /** Backoff after failed ticks: `base × 2^(failures−1)`, capped, jittered ±20 %. Default 100 ms … 30 s. */
  errorBackoff?: { baseMs: number; maxMs: number };
  /**
   * Keep the process alive while the loop runs (a ref'd timer), as a listening server does.
   * Default false: the loop's timers are unref'd.
   */
  keepAlive?: boolean;
}

/**
 * A `setTimeout` chain (graphile-worker style) shared by every background loop of the worker.
 *
 * Why not `setInterval`: the next tick is scheduled only after the previous one settled, so ticks
 * never overlap, however slow the database is. `nudge()` runs the next tick now (or right after
 * the current one), which is how a same-process enqueue or a NOTIFY skips the poll interval.
 * `stop()` clears the timer and waits for a tick in flight, so after it resolves the loop holds no
 * timer and runs no code. Timers are unref'd unless `keepAlive` is set: only the loop that
 * says so (the fetcher) keeps a worker-only process alive, and `stop()` lets it exit.
 *
 * Failures are an outage, not a flood: the first one is logged with its error, the rest are only
 * counted until a tick succeeds again, which is logged once with the count. An idle tick
 * ({@link IDLE_TICK}) neither ends nor extends the streak.
 */
export class Loop {
  private timer: ScheduledCall | undefined;
  private current: Promise<void> | undefined;
  private started = false;
  private stopped = false;
  private nudged = false;
  private failures = 0;
  private totalFailures = 0;
  private ticks = 0;

  constructor(private readonly options: LoopOptions) {}

  /** True between `start()` and `stop()`. */
  get running(): boolean {
    return this.started && !this.stopped;
  }

  /** Ticks completed (successful or not). */
  get tickCount(): number {
    return this.ticks;
  }

  /** Failed ticks since the last success (0 when healthy). */
  get consecutiveFailures(): number {
    return this.failures;
  }

  /** Failed ticks over the loop's life. */
  get failureCount(): number {
    return this.totalFailures;
  }

  /** Schedules the first tick. Idempotent; a stopped loop does not restart. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.schedule(this.options.initialDelayMs ?? 0);
  }

  /** Runs the next tick as soon as possible: now if idle, right after the current tick otherwise. */
  nudge(): void {
    if (!this.running) return;
    if (this.current) {
      this.nudged = true;
      return;
    }
    if (this.timer !== undefined && this.timer.dueAt <= Date.now()) return; // already due
    this.schedule(0);
  }

  /** Stops scheduling, clears the timer and resolves once a tick in flight has settled. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clearTimer();
    await this.current;
  }

  private schedule(delayMs: number): void {
    this.clearTimer();
    if (!this.running) return;
    this.timer = runAfter(delayMs, () => this.runTick(), this.options.keepAlive);
  }

  private clearTimer(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }

  private runTick(): void {
    this.timer = undefined;
    if (!this.running || this.current) return;
    this.nudged = false;
    this.current = this.execute().finally(() => {
      this.current = undefined;
    });
  }

  private async execute(): Promise<void> {
    let next: number;
    try {
      const requested = await this.options.tick();
      if (requested === IDLE_TICK) {
        next = this.failures > 0 ? this.backoffMs() : this.options.intervalMs();
      } else {
        if (this.failures > 0) {
          logEvent(
            this.options.logger,
            'LoopRecovered',
            `${this.options.name} recovered after ${this.failures} failed attempt(s)`,
            { loop: this.options.name, failures: this.failures },
          );
        }
        this.failures = 0;
        next = typeof requested === 'number' ? requested : this.options.intervalMs();
      }
    } catch (thrown) {
      this.failures++;
      this.totalFailures++;
      if (this.failures === 1) {
        const error = toError(thrown);
        logEvent(
          this.options.logger,
          'LoopFailed',
          `${this.options.name} failed: ${error.message}. Retrying with backoff; further failures ` +
            `are counted, not logged, until it recovers.`,
          { loop: this.options.name, error: error.message },
        );
      }
      next = this.backoffMs();
    }
    this.ticks++;
    // A nudge that arrived during the tick wins over the computed delay.
    this.schedule(this.nudged ? 0 : next);
  }

  /** The delay after the current streak of failures: `base × 2^(failures−1)`, capped, jittered. */
  private backoffMs(): number {
    const { baseMs, maxMs } = this.options.errorBackoff ?? { baseMs: 100, maxMs: 30_000 };
    return jittered(Math.min(maxMs, baseMs * 2 ** Math.min(this.failures - 1, 30)), 0.2);
  }
}
