import { ChokaQFatalError, ChokaQThrottledError, ChokaQValidationError } from '../errors';
import { FailureReason } from '../interfaces/job-status.enum';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import { retryDelayMs } from './backoff';
import { describeValue } from '../common/describe-value';
import { errorText } from '../common/error-text';
import type { HandlerBackoff } from '../interfaces/handler.interface';
import { MAX_TIMER_MS } from '../validation/limits';

/** What to do with a job whose handler threw. */
export type FailureDecision =
  | {
      action: 'retry';
      delayMs: number;
      throttled: boolean;
      /** Why the handler's backoff function was not used (the policy's delay was), if it was not. */
      backoffRefused?: string;
    }
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
  /** The handler's own retry delays (`@JobHandler(…, { backoff })`), if any. */
  backoff?: HandlerBackoff;
  random?: () => number;
}

/**
 * SPEC §4 failure policy, as one pure function so every branch is unit-tested:
 * - `ChokaQFatalError` or a payload validation error (`ChokaQValidationError`, such as the
 *   `ChokaQPayloadValidationError` of a handler's schema) → DLQ `FatalError` at once;
 * - `ChokaQThrottledError` → retry after exactly `retryAfterMs` (the attempt is spent), else DLQ `Throttled`;
 * - anything else → retry with exponential backoff (or the handler's own `backoff`) while attempts
 *   remain, else DLQ `MaxRetriesExceeded`;
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
  const { backoff } = facts;
  if (backoff === undefined) {
    return {
      action: 'retry',
      delayMs: retryDelayMs(attempt, retry, facts.random),
      throttled: false,
    };
  }
  if (typeof backoff !== 'function') {
    // A list checked at startup: the n-th wait after failed attempt n, the last one beyond it.
    return {
      action: 'retry',
      delayMs: backoff[Math.min(attempt, backoff.length) - 1],
      throttled: false,
    };
  }
  const chosen = handlerDelay(backoff, attempt, error);
  if (typeof chosen === 'number') return { action: 'retry', delayMs: chosen, throttled: false };
  return {
    action: 'retry',
    delayMs: retryDelayMs(attempt, retry, facts.random),
    throttled: false,
    backoffRefused: `backoff function ${chosen.problem}; the retry policy's delay applied`,
  };
}

/**
 * The wait a handler's backoff function chose, rounded to whole ms, or what was wrong with it: a
 * throw, or a value that is not a number from 0 to {@link MAX_TIMER_MS}.
 */
function handlerDelay(
  backoff: (attempt: number, error: unknown) => number,
  attempt: number,
  error: unknown,
): number | { problem: string } {
  let ms: unknown;
  try {
    ms = backoff(attempt, error);
  } catch (thrown) {
    return { problem: `threw (${errorText(thrown).split('\n', 1)[0]})` };
  }
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > MAX_TIMER_MS) {
    return {
      problem: `returned ${describeValue(ms)}, not a number of ms from 0 to ${MAX_TIMER_MS}`,
    };
  }
  return Math.round(ms);
}
