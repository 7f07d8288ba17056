import { ChokaQFatalError, ChokaQThrottledError, ChokaQValidationError } from '../errors';
import { FailureReason } from '../interfaces/job-status.enum';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import { retryDelayMs } from './backoff';

/** What to do with a job whose handler threw. */
export type FailureDecision =
  | { action: 'retry'; delayMs: number; throttled: boolean }
  | { action: 'dlq'; reason: FailureReason };

/** The facts the failure policy decides on. */
export interface FailureFacts {
  /** What the handler threw (anything). */
  error: unknown;
  /** The attempt that failed, 1-based. */
  attempt: number;
  /** Attempts in all (handler's `maxAttempts`, else `retry.maxAttempts`). */
  maxAttempts: number;
  /** Time since the job entered the hot table (`EnqueuedAtUtc`), in ms. */
  jobAgeMs: number;
  retry: ResolvedChokaQOptions['retry'];
  random?: () => number;
}

/**
 * SPEC §4 failure policy, as one pure function so every branch is unit-tested:
 * - `ChokaQFatalError` or a payload validation error (`ChokaQValidationError`, such as the
 *   `ChokaQPayloadValidationError` of a handler's schema) → DLQ `FatalError` at once;
 * - `ChokaQThrottledError` → retry after exactly `retryAfterMs` (the attempt is spent), else DLQ `Throttled`;
 * - anything else → retry with exponential backoff while attempts remain, else DLQ `MaxRetriesExceeded`;
 * - a retry of a job older than `maxJobAgeMs` → DLQ `RetryLifetimeExpired` instead.
 */
export function decideFailure(facts: FailureFacts): FailureDecision {
  const { error, attempt, maxAttempts, jobAgeMs, retry } = facts;
  if (error instanceof ChokaQFatalError || error instanceof ChokaQValidationError) {
    return { action: 'dlq', reason: FailureReason.FatalError };
  }
  const throttled = error instanceof ChokaQThrottledError;
  if (attempt >= maxAttempts) {
    return {
      action: 'dlq',
      reason: throttled ? FailureReason.Throttled : FailureReason.MaxRetriesExceeded,
    };
  }
  if (jobAgeMs >= retry.maxJobAgeMs) {
    return { action: 'dlq', reason: FailureReason.RetryLifetimeExpired };
  }
  if (throttled) return { action: 'retry', delayMs: error.retryAfterMs, throttled: true };
  return { action: 'retry', delayMs: retryDelayMs(attempt, retry, facts.random), throttled: false };
}
