-- [1/7] run
BEGIN IMMEDIATE

-- [2/7] all
DELETE FROM chokaq_jobs_hot WHERE status IN (0, 1, 7) AND id IN (SELECT value FROM json_each(@ids)) RETURNING *

-- [3/7] run
INSERT INTO chokaq_jobs_dlq (id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count, worker_id, lease_id, heartbeat_utc, scheduled_at_utc, created_at_utc, enqueued_at_utc, started_at_utc, last_updated_utc, created_by, last_modified_by, last_error, cancel_requested_utc, progress, progress_note, trace_context, payload_version, group_key, batch_id, waiting_on, has_dependents, failure_reason, error_details, failed_at_utc)
      SELECT m.value ->> 'id', m.value ->> 'queue', m.value ->> 'type', m.value ->> 'payload', m.value ->> 'tags', m.value ->> 'idempotency_key', m.value ->> 'priority', m.value ->> 'status', m.value ->> 'attempt_count', m.value ->> 'worker_id', m.value ->> 'lease_id', m.value ->> 'heartbeat_utc', m.value ->> 'scheduled_at_utc', m.value ->> 'created_at_utc', m.value ->> 'enqueued_at_utc', m.value ->> 'started_at_utc', m.value ->> 'last_updated_utc', m.value ->> 'created_by', m.value ->> 'last_modified_by', m.value ->> 'last_error', m.value ->> 'cancel_requested_utc', m.value ->> 'progress', m.value ->> 'progress_note', m.value ->> 'trace_context', m.value ->> 'payload_version', m.value ->> 'group_key', m.value ->> 'batch_id', m.value ->> 'waiting_on', m.value ->> 'has_dependents', m.value ->> 'failure_reason', m.value ->> 'error_details', CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      FROM json_each(@moved) AS m ORDER BY m.key

-- [4/7] run
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

-- [5/7] run
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

-- [6/7] all
UPDATE chokaq_jobs_hot
      SET cancel_requested_utc = COALESCE(cancel_requested_utc, CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)),
          last_modified_by = COALESCE(@actor, last_modified_by)
      WHERE status = 2 AND id IN (SELECT value FROM json_each(@ids))
      RETURNING id

-- [7/7] run
COMMIT
