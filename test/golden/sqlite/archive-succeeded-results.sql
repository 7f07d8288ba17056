-- [1/6] run
BEGIN IMMEDIATE

-- [2/6] all
WITH completed(id, worker_id, lease_id, duration_ms, result) AS (
        SELECT value ->> 'id', value ->> 'workerId', value ->> 'leaseId', value ->> 'durationMs', value ->> 'result'
        FROM json_each(@leases)
      )
      INSERT INTO chokaq_jobs_archive (id, queue, type, payload, tags, idempotency_key, priority, attempt_count, worker_id, scheduled_at_utc, created_at_utc, enqueued_at_utc, started_at_utc, created_by, last_modified_by, last_error, progress, progress_note, trace_context, payload_version, group_key, batch_id, waiting_on, has_dependents, finished_at_utc, duration_ms, result)
      SELECT h.id, h.queue, h.type, h.payload, h.tags, h.idempotency_key, h.priority, h.attempt_count, h.worker_id, h.scheduled_at_utc, h.created_at_utc, h.enqueued_at_utc, h.started_at_utc, h.created_by, h.last_modified_by, h.last_error, h.progress, h.progress_note, h.trace_context, h.payload_version, h.group_key, h.batch_id, h.waiting_on, h.has_dependents, CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), c.duration_ms, c.result
      FROM completed c
      CROSS JOIN chokaq_jobs_hot h ON h.id = c.id AND h.worker_id = c.worker_id AND h.lease_id = c.lease_id
      WHERE h.status IN (1, 2)
      RETURNING id, queue, duration_ms, batch_id, has_dependents

-- [3/6] all
WITH lease(id, worker_id, lease_id) AS (
    SELECT value ->> 'id', value ->> 'workerId', value ->> 'leaseId' FROM json_each(@leases)
  )
      DELETE FROM chokaq_jobs_hot WHERE status IN (1, 2) AND (id, worker_id, lease_id) IN (SELECT id, worker_id, lease_id FROM lease)
      RETURNING id, lease_id

-- [4/6] run
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

-- [5/6] run
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

-- [6/6] run
COMMIT
