/**
 * Statements of the lease holder on its own hot rows: start, heartbeat, hand back (Fetched rows, and
 * started rows that never ran), progress, retry. Each is fenced by (id, worker, lease) and a status.
 */
import { LEASE_CTE, OWNED, SQLITE_NOW_MS, SqliteTables } from './fragments';

/**
 * The due time and hold of a row handed back: unchanged without `@delayMs`; with it (an open
 * circuit), due at now + delay and held since the row was first due.
 */
const HOLD = `scheduled_at_utc = CASE WHEN @delayMs IS NULL THEN scheduled_at_utc
                                  ELSE ${SQLITE_NOW_MS} + @delayMs END,
          held_since_utc = CASE WHEN @delayMs IS NULL THEN held_since_utc
                                ELSE COALESCE(held_since_utc, scheduled_at_utc, enqueued_at_utc) END`;

/** The lease holder's statements on its own hot rows: start, heartbeat, hand back, progress, retry. */
export function workerOwnedStatements(t: SqliteTables) {
  const { hot } = t;
  return {
    /**
     * Rows already Processing under the very same lease: a retry after an ambiguous commit (only
     * the caller can have started them). Read in markAsProcessing's transaction, before its UPDATE.
     */
    markAsProcessingStarted: `WITH ${LEASE_CTE}
      SELECT id FROM ${hot} WHERE status = 2 AND ${OWNED}`,

    /**
     * Fetched → Processing; the last stale-prefetch guard (lease matches AND status = 1). Returns
     * each started row's queue and start lag (from due to now, ms), which the same transaction
     * adds to the start bucket ({@link addBuckets}).
     */
    markAsProcessing: `WITH ${LEASE_CTE}
      UPDATE ${hot}
      SET status = 2, attempt_count = attempt_count + 1, started_at_utc = ${SQLITE_NOW_MS},
          heartbeat_utc = ${SQLITE_NOW_MS}, last_updated_utc = ${SQLITE_NOW_MS}
      WHERE status = 1 AND ${OWNED}
      RETURNING id, queue,
        MAX(0, started_at_utc - COALESCE(scheduled_at_utc, enqueued_at_utc)) AS lag_ms`,

    /** One statement per process: heartbeat for Processing rows, LastUpdatedUtc for Fetched rows. */
    keepAlive: `WITH ${LEASE_CTE}
      UPDATE ${hot}
      SET heartbeat_utc = CASE WHEN status = 2 THEN ${SQLITE_NOW_MS} ELSE heartbeat_utc END,
          last_updated_utc = CASE WHEN status = 1 THEN ${SQLITE_NOW_MS} ELSE last_updated_utc END
      WHERE status IN (1, 2) AND worker_id = @workerId AND ${OWNED}
      RETURNING id, cancel_requested_utc`,

    /**
     * Fetched → Pending for owned rows; with `@delayMs` (an open circuit), not eligible before now +
     * delay and held since the row was first due ({@link HOLD}: its own `held_since_utc` when it
     * was held before, else its due time; SET reads the row as it was).
     */
    release: `WITH ${LEASE_CTE}
      UPDATE ${hot}
      SET status = 0, worker_id = NULL, lease_id = NULL, last_updated_utc = ${SQLITE_NOW_MS},
          ${HOLD}
      WHERE status = 1 AND ${OWNED}
      RETURNING queue`,

    /**
     * Processing → Pending for owned rows whose handler never ran (started ahead, handed back):
     * the attempt the claim counted is refunded and the start cleared; `@delayMs` as `release`.
     */
    unstart: `WITH ${LEASE_CTE}
      UPDATE ${hot}
      SET status = 0, attempt_count = attempt_count - 1, started_at_utc = NULL, heartbeat_utc = NULL,
          worker_id = NULL, lease_id = NULL, last_updated_utc = ${SQLITE_NOW_MS},
          ${HOLD}
      WHERE status = 2 AND ${OWNED}
      RETURNING queue`,

    /**
     * Progress and its note of an owned Processing row (lease matches AND status = 2); a NULL
     * `@note` clears the note (a note describes the progress it came with).
     */
    reportProgress: `UPDATE ${hot}
      SET progress = @progress, progress_note = @note, last_updated_utc = ${SQLITE_NOW_MS}
      WHERE id = @id AND worker_id = @workerId AND lease_id = @leaseId AND status = 2`,

    /**
     * Processing → Pending after a retryable failure (lease matches AND status = 2). Returns the
     * queue, and what the run's attempt row needs of the columns the UPDATE leaves as they were
     * (the worker and lease are the fence's).
     */
    rescheduleForRetry: `UPDATE ${hot}
      SET status = 0, worker_id = NULL, lease_id = NULL, heartbeat_utc = NULL, held_since_utc = NULL,
          scheduled_at_utc = ${SQLITE_NOW_MS} + @delayMs, last_error = @error,
          last_updated_utc = ${SQLITE_NOW_MS}
      WHERE id = @id AND worker_id = @workerId AND lease_id = @leaseId AND status = 2
      RETURNING id, queue, attempt_count, started_at_utc`,
  };
}
