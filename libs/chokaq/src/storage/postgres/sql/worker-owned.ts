/**
 * Statements of the lease holder on its own hot rows: start, heartbeat, hand back (Fetched rows,
 * and started rows that never ran), progress, retry. Each is fenced by (id, worker, lease) and a
 * status, in one READ COMMITTED statement.
 */
import type { JobLease } from '../../../interfaces/job.interface';
import {
  LEASES,
  MS,
  OWNED,
  START_LAG_MS,
  leaseParams,
  attemptInsert,
  statusIn,
  bucketUpsert,
  startLagUpsert,
} from './fragments';

/**
 * Fetched → Processing for owned rows; returns the ids started. The last stale-prefetch guard.
 * Lock/isolation: READ COMMITTED row locks of the UPDATE; a row changed concurrently is re-checked
 * against `status = 1` and the lease after the lock (EvalPlanQual), so a released or re-claimed row
 * is not started.
 *
 * Rows already Processing under the very same lease are returned too: only this call can have
 * started them, so they are a retry after an ambiguous commit (the first attempt committed, its
 * reply was lost). Without this the job would sit Processing, never run, until rescued as a zombie.
 * The second SELECT reads the statement's snapshot, taken before the UPDATE: no id comes twice.
 * The rows started (not those returned again) are counted in the start bucket with their lag, in
 * the same statement, as the claim does ({@link startLagUpsert}).
 */
export const markAsProcessing = (s: string): string => `
WITH started AS (
  UPDATE ${s}.jobs_hot j
  SET status = 2, attempt_count = j.attempt_count + 1, started_at_utc = now(),
      heartbeat_utc = now(), last_updated_utc = now()
  FROM ${LEASES}
  WHERE ${OWNED} AND ${statusIn('j', 1)}
  RETURNING j.id, j.queue, ${START_LAG_MS('j')} AS lag_ms
),
bucket AS (${startLagUpsert(s, 'started')}
)
SELECT id FROM started
UNION ALL
SELECT j.id FROM ${s}.jobs_hot j, ${LEASES}
WHERE ${OWNED} AND ${statusIn('j', 2)}`;

/** Binds {@link markAsProcessing}: $1–$3 the leases ({@link leaseParams}). */
export function markAsProcessingParams(leases: readonly JobLease[]): unknown[] {
  return leaseParams(leases);
}

/**
 * One heartbeat statement per process: Processing rows get `heartbeat_utc`, Fetched rows
 * `last_updated_utc` (so a slow buffer keeps its claims). $1 ids, $2 worker ids, $3 lease ids,
 * $4 the calling worker. Returns every touched id and whether its cancellation was requested.
 * Lock/isolation: READ COMMITTED row locks, re-checked after locking.
 */
export const keepAlive = (s: string): string => `
UPDATE ${s}.jobs_hot j
SET heartbeat_utc = CASE WHEN j.status = 2 THEN now() ELSE j.heartbeat_utc END,
    last_updated_utc = CASE WHEN j.status = 1 THEN now() ELSE j.last_updated_utc END
FROM ${LEASES}
WHERE ${OWNED} AND j.worker_id = $4 AND ${statusIn('j', 1, 2)}
RETURNING j.id, j.cancel_requested_utc IS NOT NULL AS cancel_requested`;

/** Binds {@link keepAlive}: $1–$3 the leases ({@link leaseParams}), $4 the calling worker. */
export function keepAliveParams(workerId: string, leases: readonly JobLease[]): unknown[] {
  return [...leaseParams(leases), workerId];
}

/**
 * Fetched → Pending for owned rows; with $4 (delay ms, may be NULL: an open circuit, no attempt
 * spent) the row becomes due at now() + $4, `held_since_utc` keeps when it was first due (its own
 * value when it was held before, else its due time), and `deferred_total` grows by the rows
 * released (no metric bucket: a deferral is neither a run's end nor a retry).
 * Lock/isolation: READ COMMITTED, one statement; the counter upsert is one row per queue.
 */
export const release = (s: string): string => handBack(s, false);

/** Binds {@link release}: $1–$3 the leases ({@link leaseParams}), $4 the delay in ms or NULL. */
export function releaseParams(leases: readonly JobLease[], delayMs: number | null): unknown[] {
  return [...leaseParams(leases), delayMs];
}

/**
 * Processing → Pending for owned rows whose handler never ran (started ahead, then handed back):
 * the attempt the claim counted is refunded and the start cleared; with $4 (delay ms, may be
 * NULL), as {@link release}: due at now() + $4, held since it was first due, `deferred_total`
 * grows by the rows handed back. No attempt row: no run happened.
 * Lock/isolation: READ COMMITTED, one statement; the counter upsert is one row per queue.
 */
export const unstart = (s: string): string => handBack(s, true);

/** Binds {@link unstart}: $1–$3 the leases ({@link leaseParams}), $4 the delay in ms or NULL. */
export function unstartParams(leases: readonly JobLease[], delayMs: number | null): unknown[] {
  return [...leaseParams(leases), delayMs];
}

/** The statement of {@link release} (Fetched rows) and of {@link unstart} (`started` rows). */
function handBack(s: string, started: boolean): string {
  return `
WITH released AS (
  UPDATE ${s}.jobs_hot j
  SET status = 0, ${started ? 'attempt_count = j.attempt_count - 1, started_at_utc = NULL, heartbeat_utc = NULL,\n      ' : ''}worker_id = NULL, lease_id = NULL, last_updated_utc = now(),
      scheduled_at_utc = CASE WHEN $4::float8 IS NULL THEN j.scheduled_at_utc
                              ELSE now() + $4::float8 ${MS} END,
      held_since_utc = CASE WHEN $4::float8 IS NULL THEN j.held_since_utc
                            ELSE coalesce(j.held_since_utc, j.scheduled_at_utc, j.enqueued_at_utc) END
  FROM ${LEASES}
  WHERE ${OWNED} AND ${statusIn('j', started ? 2 : 1)}
  RETURNING j.queue
),
counted AS (
  INSERT INTO ${s}.stats_summary AS t (queue, deferred_total, last_activity_utc)
  SELECT queue, count(*), now() FROM released WHERE $4::float8 IS NOT NULL GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET deferred_total = t.deferred_total + EXCLUDED.deferred_total,
      last_activity_utc = EXCLUDED.last_activity_utc
)
SELECT count(*)::int AS n FROM released`;
}

/**
 * Progress (0–100) and its note of an owned Processing row. $1 id, $2 worker, $3 lease,
 * $4 percent, $5 note (NULL clears it: a note describes the progress it came with).
 * Lock/isolation: READ COMMITTED, one statement (row lock on the job).
 */
export const reportProgress = (s: string): string => `
UPDATE ${s}.jobs_hot j
SET progress = $4, progress_note = $5::text, last_updated_utc = now()
WHERE j.id = $1 AND j.worker_id = $2 AND j.lease_id = $3 AND ${statusIn('j', 2)}
RETURNING j.id`;

/** Binds {@link reportProgress}: $1 id, $2 worker, $3 lease, $4 percent, $5 note (NULL clears it). */
export function reportProgressParams(
  lease: JobLease,
  percent: number,
  note: string | null,
): unknown[] {
  return [lease.id, lease.workerId, lease.leaseId, percent, note];
}

/**
 * Processing → Pending after a retryable failure, due at now() + $4 ms, with `last_error` $5 (no
 * longer held by a circuit: `held_since_utc` cleared), and
 * `retried_total + 1`, the queue's retried bucket (outcome 3) and the run's attempt row (outcome
 * `retried`, {@link attemptInsert}). $1 id, $2 worker, $3 lease: the run's worker and lease are
 * the fence's, and its attempt and start time are columns the UPDATE leaves as they were (RETURNING
 * gives the new row).
 * Lock/isolation: READ COMMITTED, one statement (row lock on the job, then the queue's counter row
 * and bucket row).
 */
export const rescheduleForRetry = (s: string): string => `
WITH retried AS (
  UPDATE ${s}.jobs_hot j
  SET status = 0, worker_id = NULL, lease_id = NULL, heartbeat_utc = NULL,
      scheduled_at_utc = now() + $4::float8 ${MS}, held_since_utc = NULL, last_error = $5,
      last_updated_utc = now()
  WHERE j.id = $1 AND j.worker_id = $2 AND j.lease_id = $3 AND ${statusIn('j', 2)}
  RETURNING j.id, j.queue, j.attempt_count, j.started_at_utc
),
attempt AS (${attemptInsert(s, `SELECT r.id, r.attempt_count, $2::varchar AS worker_id, $3::varchar AS lease_id, r.started_at_utc, 'retried' AS outcome, $5::text AS error FROM retried r`)}
),
counted AS (
  INSERT INTO ${s}.stats_summary AS t (queue, retried_total, last_activity_utc)
  SELECT queue, count(*), now() FROM retried GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET retried_total = t.retried_total + EXCLUDED.retried_total,
      last_activity_utc = EXCLUDED.last_activity_utc
),
bucket AS (${bucketUpsert(s, 3, '-1', '(SELECT queue, NULL::bigint AS duration_ms FROM retried)')}
)
SELECT count(*)::int AS n FROM retried`;

/** Binds {@link rescheduleForRetry}: $1 id, $2 worker, $3 lease, $4 delay in ms, $5 the error text. */
export function rescheduleForRetryParams(
  lease: JobLease,
  delayMs: number,
  error: string,
): unknown[] {
  return [lease.id, lease.workerId, lease.leaseId, delayMs, error];
}
