import { DEFAULT_TRANSIENT_RETRY } from '../../config/storage-defaults';
import { ChokaQStorageUnavailableError } from '../../errors';
import type { TransientRetryOptions } from '../../interfaces/storage-options.interface';

/**
 * The wait before retry `retry` (1 = after the first failed attempt): uniformly random in
 * `[ceiling / 2, ceiling]` ("equal jitter"). The random half keeps a crowd of workers that failed
 * together from retrying in lock step; the fixed half makes the total predictable, so the budget
 * the documentation states is a floor and not an average (full jitter, `[0, ceiling]`, gave up
 * after about 1.1 s when 3.5 s was documented). `random` is injectable for tests.
 */
export function transientRetryDelayMs(
  retry: number,
  options: TransientRetryOptions = {},
  random: () => number = Math.random,
): number {
  const ceiling = ceilingMs(retry, { ...DEFAULT_TRANSIENT_RETRY, ...options });
  return ceiling / 2 + random() * (ceiling / 2);
}

/**
 * How long a call that keeps failing with transient errors waits in all before it gives up: at
 * least `minMs`, at most `maxMs` (the attempts' own time comes on top; on SQLite each refused
 * attempt also waits out `busyTimeoutMs`). For the defaults: 2,575 ms to 5,150 ms.
 */
export function transientRetryBudgetMs(options: TransientRetryOptions = {}): {
  minMs: number;
  maxMs: number;
} {
  const resolved = { ...DEFAULT_TRANSIENT_RETRY, ...options };
  let maxMs = 0;
  for (let retry = 1; retry < resolved.maxAttempts; retry++) maxMs += ceilingMs(retry, resolved);
  return { minMs: maxMs / 2, maxMs };
}

/** `min(maxDelayMs, baseDelayMs × 2^(retry−1))`; the exponent is capped so it never overflows. */
function ceilingMs(retry: number, options: Required<TransientRetryOptions>): number {
  return Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** Math.min(retry - 1, 52));
}

/**
 * Runs `operation`, retrying errors that `isTransient` accepts after the waits of
 * {@link transientRetryDelayMs}. A non-transient error is rethrown at once; when the attempts run
 * out the last transient error is wrapped in `ChokaQStorageUnavailableError`, no earlier than
 * {@link transientRetryBudgetMs}'s `minMs` after the first attempt failed. The operation must be
 * safe to repeat: each attempt is its own statement or transaction, and a failed attempt has
 * committed nothing — or, where a lost reply may hide a commit, the operation checks for it first
 * (it gets the attempt number, from 1). `random` is injectable for tests.
 */
export async function withTransientRetry<T>(
  name: string,
  operation: (attempt: number) => Promise<T>,
  isTransient: (error: unknown) => boolean,
  options: TransientRetryOptions = {},
  random: () => number = Math.random,
): Promise<T> {
  const resolved = { ...DEFAULT_TRANSIENT_RETRY, ...options };
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation(attempt);
    } catch (error) {
      if (!isTransient(error)) throw error;
      if (attempt >= resolved.maxAttempts) {
        throw new ChokaQStorageUnavailableError(name, attempt, error);
      }
      const waitMs = transientRetryDelayMs(attempt, resolved, random);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}
