import { ChokaQError } from './chokaq.error';

/**
 * The database could not be reached (or kept failing transiently) within the retry bound.
 * Nothing was written by the failed call; it is safe to retry, and the same job id makes the
 * retry idempotent.
 *
 * @publicApi
 */
export class ChokaQStorageUnavailableError extends ChokaQError {
  /** Always true: the caller may retry later. */
  readonly retryable = true;

  constructor(
    readonly operation: string,
    readonly attempts: number,
    cause: unknown,
  ) {
    super(
      `ChokaQ storage is unavailable: ${operation} failed ${attempts} time(s) with transient errors ` +
        `(last: ${cause instanceof Error ? cause.message : String(cause)}). Retry later.`,
      { cause },
    );
  }
}
