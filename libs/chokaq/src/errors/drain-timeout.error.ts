import { ChokaQError } from './chokaq.error';

/**
 * `drain()` (the testing helper) did not finish within its `timeoutMs`: jobs kept becoming due, or
 * a handler kept running. Raise the timeout, or check for a job that re-enqueues itself.
 *
 * @publicApi
 */
export class ChokaQDrainTimeoutError extends ChokaQError {
  constructor(
    readonly timeoutMs: number,
    /** Outcomes collected before the timeout. */
    readonly outcomes: readonly unknown[],
  ) {
    super(
      `drain() did not finish within ${timeoutMs} ms (${outcomes.length} job(s) finished). ` +
        `Raise timeoutMs or look for jobs that keep re-enqueueing themselves.`,
    );
  }
}
