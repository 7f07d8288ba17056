/**
 * Job status codes (SPEC §2). Codes 0–2 and 7 live in the hot table, 3 is the archive, 4–6 the DLQ.
 * The numbers are contract: they are stored, and dialects write them as SQL literals so the
 * partial indexes on `Status` can be used.
 *
 * @publicApi
 */
export enum JobStatus {
  Pending = 0,
  Fetched = 1,
  Processing = 2,
  Succeeded = 3,
  Failed = 4,
  Cancelled = 5,
  Zombie = 6,
  /**
   * In the hot table, waiting on other jobs (`dependsOn`, `enqueueFlow`): never claimed; the move
   * that settles its last dependency makes it Pending in the same transaction.
   */
  Waiting = 7,
}

/**
 * Why a job is in the DLQ (SPEC §2). Codes 4 and 8 are reserved and never produced.
 *
 * @publicApi
 */
export enum FailureReason {
  /** Retries exhausted on ordinary errors. */
  MaxRetriesExceeded = 0,
  /** Cancelled by an operator or the API. */
  Cancelled = 1,
  /** Was Processing and its heartbeat expired. */
  Zombie = 2,
  /** The circuit of its type was still open when the job's age limit ran out. */
  CircuitBreakerOpen = 3,
  /** Retries exhausted on throttled errors. */
  Throttled = 5,
  /** The handler threw `ChokaQFatalError` or the payload failed validation. */
  FatalError = 6,
  /** The execution timeout fired. */
  Timeout = 7,
  /** Cancelled because heartbeats kept failing. */
  HeartbeatFailure = 9,
  /** The job outlived `retry.maxJobAgeMs`. */
  RetryLifetimeExpired = 10,
  /** No live handler for its type after it was claimed. */
  NoHandler = 11,
  /**
   * A waiting job's dependency failed under the `cancel` policy, or a dependency it was blocked on
   * was purged from the DLQ: it never ran. The error names the dependency.
   */
  DependencyFailed = 12,
}
