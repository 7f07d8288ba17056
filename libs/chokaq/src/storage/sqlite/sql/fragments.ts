/**
 * Building blocks the SQLite statements share: the database clock in epoch milliseconds, the table
 * names of a prefix, the lease and id relations read from JSON parameters, the columns a move
 * copies, and the attempt, counter and bucket statements every counting operation ends with. The
 * rules every statement follows (named parameters, JSON lists, one writer under `BEGIN IMMEDIATE`,
 * epoch-millisecond times): docs/storage.md, "SQLite: statement conventions".
 */
import { MAX_ATTEMPT_ERROR, METRIC_BUCKET_MS } from '../../../validation/limits';
import { hotColumnsExcept } from '../../shared/columns';

/**
 * The database clock in epoch milliseconds. `unixepoch('subsec')` has millisecond precision; ROUND
 * avoids `…999.9999` truncating one millisecond low. Within one statement 'now' is stable.
 */
export const SQLITE_NOW_MS = "CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)";

/** The current metric bucket: epoch ms floored to the minute (`METRIC_BUCKET_MS`). */
export const BUCKET_NOW = `((${SQLITE_NOW_MS} / ${METRIC_BUCKET_MS}) * ${METRIC_BUCKET_MS})`;

/** `{id, workerId, leaseId}` leases from `@leases` (a JSON array) as a relation. */
export const LEASE_CTE = `lease(id, worker_id, lease_id) AS (
    SELECT value ->> 'id', value ->> 'workerId', value ->> 'leaseId' FROM json_each(@leases)
  )`;

/** The fencing token: id, worker and lease all match one of `@leases`. */
export const OWNED = `(id, worker_id, lease_id) IN (SELECT id, worker_id, lease_id FROM lease)`;

/** Ids from `@ids` (a JSON array of strings). */
export const IDS = `(SELECT value FROM json_each(@ids))`;

/** Hot columns copied into the archive (besides `finished_at_utc`, `duration_ms`): the SQLite archive keeps no lease, heartbeat, update time or cancel flag. */
export const ARCHIVE_COPIED = hotColumnsExcept(
  'status',
  'lease_id',
  'heartbeat_utc',
  'last_updated_utc',
  'cancel_requested_utc',
);

/** `m.value ->> 'col'` for each column: reads a captured row of `json_each(@moved) AS m`. */
export function fromMoved(columns: readonly string[]): string {
  return columns.map((c) => `m.value ->> '${c}'`).join(', ');
}

/** The table names of one prefix. */
export function sqliteTables(p: string) {
  return {
    hot: `${p}jobs_hot`,
    archive: `${p}jobs_archive`,
    dlq: `${p}jobs_dlq`,
    stats: `${p}stats_summary`,
    buckets: `${p}metric_buckets`,
    queues: `${p}queues`,
    recurring: `${p}recurring_jobs`,
    migrations: `${p}schema_migrations`,
    workers: `${p}workers`,
    rowCounts: `${p}row_counts`,
    audit: `${p}audit_log`,
    settings: `${p}settings`,
    attempts: `${p}job_attempts`,
    keys: `${p}dedupe_keys`,
    groups: `${p}job_groups`,
    batches: `${p}batches`,
    callbacks: `${p}batch_callbacks`,
    dependencies: `${p}job_dependencies`,
  };
}

/** Whether the `Queues` row `q` has group limits: its Pending rows are claimed by groups. */
export const GROUPED = (q: string): string =>
  `(${q}.group_concurrency IS NOT NULL OR ${q}.group_rate_max IS NOT NULL)`;

/**
 * The stored group of a job of queue `queue` whose own group is `group` (both SQL expressions):
 * its own, else `''` when the queue has group limits, else NULL. In a grouped queue every job must
 * be in a group for the grouped claim to reach it, so the jobs without one share the group `''`
 * (read back as no group). The `Queues` lookup (a primary-key read per row) runs only for a job
 * without a group: COALESCE stops at its first non-NULL argument.
 */
export const STORED_GROUP = (queuesTable: string, group: string, queue: string): string =>
  `COALESCE(${group},
          CASE WHEN EXISTS (SELECT 1 FROM ${queuesTable} gq
                            WHERE gq.name = ${queue} AND ${GROUPED('gq')})
               THEN '' END)`;

/** The table names of one prefix ({@link sqliteTables}). */
export type SqliteTables = ReturnType<typeof sqliteTables>;

/** The last steps every counting operation shares: attempt rows, lifetime counters, metric buckets. */
export function countingStatements(t: SqliteTables) {
  const { stats, buckets, attempts } = t;
  return {
    /**
     * The attempt rows of runs a move ends (the rules: `storage/shared/attempts.ts`), in that
     * move's BEGIN IMMEDIATE transaction, after its update or delete: `@attempts` is a JSON array
     * of `{id, attempt_count, worker_id, lease_id, started_at_utc, outcome, error}` read from the
     * hot rows the move changed. `seq` is one more than the job's last row (a range of the primary
     * key); the write lock held since BEGIN means no other writer can add one meanwhile. The error
     * keeps its first `MAX_ATTEMPT_ERROR` characters; the duration is finish minus start.
     */
    recordAttempts: `INSERT INTO ${attempts} (job_id, seq, attempt, worker_id, lease_id,
        started_at_utc, finished_at_utc, outcome, error, duration_ms)
      SELECT a.value ->> 'id',
        COALESCE((SELECT MAX(x.seq) FROM ${attempts} x WHERE x.job_id = a.value ->> 'id'), 0) + 1,
        a.value ->> 'attempt_count', a.value ->> 'worker_id', a.value ->> 'lease_id',
        a.value ->> 'started_at_utc', ${SQLITE_NOW_MS}, a.value ->> 'outcome',
        substr(a.value ->> 'error', 1, ${MAX_ATTEMPT_ERROR}),
        CASE WHEN a.value ->> 'started_at_utc' IS NOT NULL
             THEN MAX(0, ${SQLITE_NOW_MS} - (a.value ->> 'started_at_utc')) END
      FROM json_each(@attempts) AS a ORDER BY a.key`,

    /**
     * The attempt rows of the jobs `@ids` (archive or DLQ rows deleted in the same transaction by
     * purge or retention): their history goes with them. One primary-key range per job.
     */
    deleteAttempts: `DELETE FROM ${attempts} WHERE job_id IN ${IDS}`,

    /**
     * Lifetime counters: one row per queue per batch (`@deltas` is already grouped by queue), so a
     * batch of n jobs updates each stats row once, not n times.
     */
    addCounters: `INSERT INTO ${stats} (queue, succeeded_total, failed_total, cancelled_total,
        retried_total, deferred_total, resurrected_total, last_activity_utc)
      SELECT value ->> 'queue', value ->> 'succeeded', value ->> 'failed', value ->> 'cancelled',
        value ->> 'retried', value ->> 'deferred', value ->> 'resurrected', ${SQLITE_NOW_MS}
      FROM json_each(@deltas) WHERE true
      ON CONFLICT (queue) DO UPDATE SET
        succeeded_total = succeeded_total + excluded.succeeded_total,
        failed_total = failed_total + excluded.failed_total,
        cancelled_total = cancelled_total + excluded.cancelled_total,
        retried_total = retried_total + excluded.retried_total,
        deferred_total = deferred_total + excluded.deferred_total,
        resurrected_total = resurrected_total + excluded.resurrected_total,
        last_activity_utc = excluded.last_activity_utc`,

    /**
     * Metric buckets of the current minute; `@buckets` is grouped by (queue, outcome, reason). The
     * start rows (outcome 4) carry the start lag, the others zeros there.
     */
    addBuckets: `INSERT INTO ${buckets} (bucket_utc, queue, outcome, failure_reason, completed_count,
        duration_count, total_duration_ms, max_duration_ms, lag_count, lag_sum_ms, lag_max_ms)
      SELECT ${BUCKET_NOW}, value ->> 'queue', value ->> 'outcome', value ->> 'failure_reason',
        value ->> 'completed', value ->> 'duration_count', value ->> 'total_duration_ms',
        value ->> 'max_duration_ms', value ->> 'lag_count', value ->> 'lag_sum_ms',
        value ->> 'lag_max_ms'
      FROM json_each(@buckets) WHERE true
      ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE SET
        completed_count = completed_count + excluded.completed_count,
        duration_count = duration_count + excluded.duration_count,
        total_duration_ms = total_duration_ms + excluded.total_duration_ms,
        max_duration_ms = MAX(max_duration_ms, excluded.max_duration_ms),
        lag_count = lag_count + excluded.lag_count,
        lag_sum_ms = lag_sum_ms + excluded.lag_sum_ms,
        lag_max_ms = MAX(lag_max_ms, excluded.lag_max_ms)`,
  };
}
