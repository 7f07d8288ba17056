import { ChokaQError } from './chokaq.error';

/**
 * Throw from a handler when a downstream service asks to slow down (HTTP 429, a rate limit): the
 * job is retried after exactly `retryAfterMs` (no exponential backoff, no jitter). The attempt is
 * consumed; when the attempts run out the job goes to the DLQ as `Throttled`.
 *
 * @publicApi
 */
export class ChokaQThrottledError extends ChokaQError {
  /** Wait before the retry, in milliseconds (a finite number ≥ 0; anything else is treated as 0). */
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number, message?: string, options?: { cause?: unknown }) {
    const wait = Number.isFinite(retryAfterMs) && retryAfterMs > 0 ? Math.round(retryAfterMs) : 0;
    super(message ?? `Throttled: retry after ${wait} ms`, options);
    this.retryAfterMs = wait;
  }
}
