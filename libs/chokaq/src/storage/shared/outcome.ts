export { dlqStatusFor } from '../../common/dlq-status';

/**
 * Metric-bucket outcome codes. 0 succeeded, 1 failed, 2 cancelled (cancellations are not
 * failures): the runs that ended, with their durations. 3 retried: a run that goes back to
 * Pending (a retryable failure, a retried zombie; before schema version 14 of PostgreSQL and
 * SQLite and 13 of SQL Server also an open-circuit release, with reason 3). 4 started: runs
 * started by a claim or by `markAsProcessing`, with their start lag (`lag_*` columns). An open
 * circuit's deferrals have no bucket: their lifetime counter (`deferred_total`) and the process's
 * `chokaq.circuits.events` metric count them.
 */
export enum Outcome {
  Succeeded = 0,
  Failed = 1,
  Cancelled = 2,
  Retried = 3,
  Started = 4,
}

/** `failure_reason` of a bucket row whose outcome has no reason (success, start, error retry). */
export const NO_REASON = -1;
