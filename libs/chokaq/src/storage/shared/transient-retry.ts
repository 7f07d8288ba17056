import { ChokaQStorageUnavailableError } from '../../errors';

/** Bounds of the transient-error retry every storage call goes through. */
export interface TransientRetryOptions {
  /** Attempts including the first. Default 6. */
  maxAttempts?: number;
  /** First backoff. Default 50 ms. */
  baseDelayMs?: number;
  /** Largest backoff. Default 2,000 ms. */
  maxDelayMs?: number;
}

/** Default transient retry bounds: about 3.5 s in all before `ChokaQStorageUnavailableError`. */
export const DEFAULT_TRANSIENT_RETRY: Required<TransientRetryOptions> = {
  maxAttempts: 6,
  baseDelayMs: 50,
  maxDelayMs: 2_000,
};

/**
 * Runs `operation`, retrying errors that `isTransient` accepts with exponential backoff and full
 * jitter (so a crowd of workers does not retry in lock step). A non-transient error is rethrown
 * at once; when the attempts run out the last transient error is wrapped in
 * `ChokaQStorageUnavailableError`. The operation must be safe to repeat: each attempt is its own
 * statement or transaction, and a failed attempt has committed nothing — or, where a lost reply
 * may hide a commit, the operation checks for it first (it gets the attempt number, from 1).
 */
export async function withTransientRetry<T>(
  name: string,
  operation: (attempt: number) => Promise<T>,
  isTransient: (error: unknown) => boolean,
  options: TransientRetryOptions = {},
): Promise<T> {
  const { maxAttempts, baseDelayMs, maxDelayMs } = { ...DEFAULT_TRANSIENT_RETRY, ...options };
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation(attempt);
    } catch (error) {
      if (!isTransient(error)) throw error;
      if (attempt >= maxAttempts) throw new ChokaQStorageUnavailableError(name, attempt, error);
      const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
      await new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
    }
  }
}
