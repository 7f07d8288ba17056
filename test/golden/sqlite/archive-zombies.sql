-- [1/12] run
BEGIN IMMEDIATE

-- [2/12] all
SELECT h.id, h.queue, h.type, h.tags, h.idempotency_key, h.priority, h.status, h.attempt_count, h.worker_id, h.lease_id, h.heartbeat_utc, h.scheduled_at_utc, h.created_at_utc, h.enqueued_at_utc, h.started_at_utc, h.last_updated_utc, h.created_by, h.last_modified_by, h.last_error, h.cancel_requested_utc, h.progress, h.progress_note, h.trace_context, h.payload_version, h.group_key, h.batch_id, h.waiting_on, h.has_dependents, (COALESCE(q.retry_zombies, 0) = 1 OR COALESCE(
          (SELECT r.value ->> 'retry' FROM json_each(@rules) r
           WHERE r.value ->> 'queue' = h.queue AND r.value ->> 'type' = h.type),
          (SELECT r.value ->> 'retry' FROM json_each(@rules) r
           WHERE r.value ->> 'queue' = h.queue AND r.value ->> 'type' IS NULL),
          0) = 1) AS retry
      FROM chokaq_jobs_hot h LEFT JOIN chokaq_queues q ON q.name = h.queue
      WHERE h.status = 2
        AND COALESCE(h.heartbeat_utc, h.started_at_utc, h.last_updated_utc)
            < CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - COALESCE(q.zombie_timeout_seconds * 1000, @defaultTimeoutMs)
      ORDER BY h.heartbeat_utc LIMIT @limit

-- [3/12] all
UPDATE chokaq_jobs_hot
      SET status = 0, worker_id = NULL, lease_id = NULL, heartbeat_utc = NULL, held_since_utc = NULL,
          last_error = @error, last_updated_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      WHERE status = 2 AND id IN (SELECT value FROM json_each(@ids))
      RETURNING id, queue

-- [4/12] run
INSERT INTO chokaq_job_attempts (job_id, seq, attempt, worker_id, lease_id,
        started_at_utc, finished_at_utc, outcome, error, duration_ms)
      SELECT a.value ->> 'id',
        COALESCE((SELECT MAX(x.seq) FROM chokaq_job_attempts x WHERE x.job_id = a.value ->> 'id'), 0) + 1,
        a.value ->> 'attempt_count', a.value ->> 'worker_id', a.value ->> 'lease_id',
        a.value ->> 'started_at_utc', CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), a.value ->> 'outcome',
        substr(a.value ->> 'error', 1, 4000),
        CASE WHEN a.value ->> 'started_at_utc' IS NOT NULL
             THEN MAX(0, CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - (a.value ->> 'started_at_utc')) END
      FROM json_each(@attempts) AS a ORDER BY a.key

-- [5/12] run
INSERT INTO chokaq_stats_summary (queue, succeeded_total, failed_total, cancelled_total,
        retried_total, deferred_total, resurrected_total, last_activity_utc)
      SELECT value ->> 'queue', value ->> 'succeeded', value ->> 'failed', value ->> 'cancelled',
        value ->> 'retried', value ->> 'deferred', value ->> 'resurrected', CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      FROM json_each(@deltas) WHERE true
      ON CONFLICT (queue) DO UPDATE SET
        succeeded_total = succeeded_total + excluded.succeeded_total,
        failed_total = failed_total + excluded.failed_total,
        cancelled_total = cancelled_total + excluded.cancelled_total,
        retried_total = retried_total + excluded.retried_total,
        deferred_total = deferred_total + excluded.deferred_total,
        resurrected_total = resurrected_total + excluded.resurrected_total,
        last_activity_utc = excluded.last_activity_utc

-- [6/12] run
INSERT INTO chokaq_metric_buckets (bucket_utc, queue, outcome, failure_reason, completed_count,
        duration_count, total_duration_ms, max_duration_ms, lag_count, lag_sum_ms, lag_max_ms)
      SELECT ((CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) / 60000) * 60000), value ->> 'queue', value ->> 'outcome', value ->> 'failure_reason',
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
        lag_max_ms = MAX(lag_max_ms, excluded.lag_max_ms)

-- [7/12] all
DELETE FROM chokaq_jobs_hot WHERE status = 2 AND id IN (SELECT value FROM json_each(@ids)) RETURNING *

-- [8/12] run
INSERT INTO chokaq_job_attempts (job_id, seq, attempt, worker_id, lease_id,
        started_at_utc, finished_at_utc, outcome, error, duration_ms)
      SELECT a.value ->> 'id',
        COALESCE((SELECT MAX(x.seq) FROM chokaq_job_attempts x WHERE x.job_id = a.value ->> 'id'), 0) + 1,
        a.value ->> 'attempt_count', a.value ->> 'worker_id', a.value ->> 'lease_id',
        a.value ->> 'started_at_utc', CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), a.value ->> 'outcome',
        substr(a.value ->> 'error', 1, 4000),
        CASE WHEN a.value ->> 'started_at_utc' IS NOT NULL
             THEN MAX(0, CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - (a.value ->> 'started_at_utc')) END
      FROM json_each(@attempts) AS a ORDER BY a.key

-- [9/12] run
INSERT INTO chokaq_jobs_dlq (id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count, worker_id, lease_id, heartbeat_utc, scheduled_at_utc, created_at_utc, enqueued_at_utc, started_at_utc, last_updated_utc, created_by, last_modified_by, last_error, cancel_requested_utc, progress, progress_note, trace_context, payload_version, group_key, batch_id, waiting_on, has_dependents, failure_reason, error_details, failed_at_utc)
      SELECT m.value ->> 'id', m.value ->> 'queue', m.value ->> 'type', m.value ->> 'payload', m.value ->> 'tags', m.value ->> 'idempotency_key', m.value ->> 'priority', m.value ->> 'status', m.value ->> 'attempt_count', m.value ->> 'worker_id', m.value ->> 'lease_id', m.value ->> 'heartbeat_utc', m.value ->> 'scheduled_at_utc', m.value ->> 'created_at_utc', m.value ->> 'enqueued_at_utc', m.value ->> 'started_at_utc', m.value ->> 'last_updated_utc', m.value ->> 'created_by', m.value ->> 'last_modified_by', m.value ->> 'last_error', m.value ->> 'cancel_requested_utc', m.value ->> 'progress', m.value ->> 'progress_note', m.value ->> 'trace_context', m.value ->> 'payload_version', m.value ->> 'group_key', m.value ->> 'batch_id', m.value ->> 'waiting_on', m.value ->> 'has_dependents', m.value ->> 'failure_reason', m.value ->> 'error_details', CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      FROM json_each(@moved) AS m ORDER BY m.key

-- [10/12] run
INSERT INTO chokaq_stats_summary (queue, succeeded_total, failed_total, cancelled_total,
        retried_total, deferred_total, resurrected_total, last_activity_utc)
      SELECT value ->> 'queue', value ->> 'succeeded', value ->> 'failed', value ->> 'cancelled',
        value ->> 'retried', value ->> 'deferred', value ->> 'resurrected', CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      FROM json_each(@deltas) WHERE true
      ON CONFLICT (queue) DO UPDATE SET
        succeeded_total = succeeded_total + excluded.succeeded_total,
        failed_total = failed_total + excluded.failed_total,
        cancelled_total = cancelled_total + excluded.cancelled_total,
        retried_total = retried_total + excluded.retried_total,
        deferred_total = deferred_total + excluded.deferred_total,
        resurrected_total = resurrected_total + excluded.resurrected_total,
        last_activity_utc = excluded.last_activity_utc

-- [11/12] run
INSERT INTO chokaq_metric_buckets (bucket_utc, queue, outcome, failure_reason, completed_count,
        duration_count, total_duration_ms, max_duration_ms, lag_count, lag_sum_ms, lag_max_ms)
      SELECT ((CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) / 60000) * 60000), value ->> 'queue', value ->> 'outcome', value ->> 'failure_reason',
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
        lag_max_ms = MAX(lag_max_ms, excluded.lag_max_ms)

-- [12/12] run
COMMIT
