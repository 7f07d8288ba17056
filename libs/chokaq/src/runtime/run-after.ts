import { MAX_TIMER_MS } from '../validation/limits';

/** A call scheduled by {@link runAfter}. */
export interface ScheduledCall {
  /** The delay it was scheduled with (0: the next turn of the event loop). */
  readonly delayMs: number;
  /** When it is due (epoch ms). */
  readonly dueAt: number;
  /** Cancels the call; harmless once it has run. */
  cancel(): void;
}

/**
 * Calls `fn` after `delayMs`. "Now" (0 or less) is the next turn of the event loop
 * (`setImmediate`), not `setTimeout(0)`, which Node clamps to 1 ms: a loop that runs back to back
 * (a busy fetcher, a batcher with a full batch) would otherwise be capped at one turn per ms. The
 * timer is unref'd unless `keepAlive`, so it alone does not keep the process alive.
 *
 * A delay is at most {@link MAX_TIMER_MS}: Node runs a longer timer after 1 ms, and a jittered
 * interval may exceed its option (itself capped there) by 20 %.
 */
export function runAfter(delayMs: number, fn: () => void, keepAlive = false): ScheduledCall {
  const delay = Math.min(Math.max(0, delayMs), MAX_TIMER_MS);
  const dueAt = Date.now() + delay;
  if (delay === 0) {
    const immediate = setImmediate(fn);
    if (!keepAlive) immediate.unref();
    return { delayMs: delay, dueAt, cancel: () => clearImmediate(immediate) };
  }
  const timeout = setTimeout(fn, delay);
  if (!keepAlive) timeout.unref();
  return { delayMs: delay, dueAt, cancel: () => clearTimeout(timeout) };
}
