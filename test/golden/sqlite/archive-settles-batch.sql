-- [1/9] run
BEGIN IMMEDIATE

-- [2/9] all
WITH completed(id, worker_id, lease_id, duration_ms) AS (
        SELECT value ->> 'id', value ->> 'workerId', value ->> 'leaseId', value ->> 'durationMs'
        FROM json_each(@leases)
      )
      INSERT INTO chokaq_jobs_archive (id, queue, type, payload, tags, idempotency_key, priority, attempt_count, worker_id, scheduled_at_utc, created_at_utc, enqueued_at_utc, started_at_utc, created_by, last_modified_by, last_error, progress, progress_note, trace_context, payload_version, group_key, batch_id, waiting_on, has_dependents, finished_at_utc, duration_ms)
      SELECT h.id, h.queue, h.type, h.payload, h.tags, h.idempotency_key, h.priority, h.attempt_count, h.worker_id, h.scheduled_at_utc, h.created_at_utc, h.enqueued_at_utc, h.started_at_utc, h.created_by, h.last_modified_by, h.last_error, h.progress, h.progress_note, h.trace_context, h.payload_version, h.group_key, h.batch_id, h.waiting_on, h.has_dependents, CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), c.duration_ms
      FROM completed c
      CROSS JOIN chokaq_jobs_hot h ON h.id = c.id AND h.worker_id = c.worker_id AND h.lease_id = c.lease_id
      WHERE h.status IN (1, 2)
      RETURNING id, queue, duration_ms, batch_id, has_dependents

-- [3/9] all
WITH lease(id, worker_id, lease_id) AS (
    SELECT value ->> 'id', value ->> 'workerId', value ->> 'leaseId' FROM json_each(@leases)
  )
      DELETE FROM chokaq_jobs_hot WHERE status IN (1, 2) AND (id, worker_id, lease_id) IN (SELECT id, worker_id, lease_id FROM lease)
      RETURNING id, lease_id

-- [4/9] run
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

-- [5/9] run
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

-- [6/9] all
UPDATE chokaq_batches AS b
      SET succeeded = b.succeeded + CASE WHEN @ok = 1 THEN d.n ELSE 0 END,
          failed = b.failed + CASE WHEN @ok = 1 THEN 0 ELSE d.n END
      FROM (SELECT m.value ->> 'batch_id' AS batch_id, COUNT(*) AS n
        FROM json_each(@moved) AS m
        WHERE NOT EXISTS (SELECT 1 FROM chokaq_batch_callbacks x WHERE x.job_id = m.value ->> 'id')
        GROUP BY m.value ->> 'batch_id') AS d
      WHERE b.id = d.batch_id
      RETURNING id, total, succeeded, failed, fired

-- [7/9] run
UPDATE chokaq_batches AS b
      SET fired = b.fired | (s.value ->> 'due'), settled_at_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      FROM json_each(@settled) AS s
      WHERE b.id = s.value ->> 'id'

-- [8/9] run
INSERT INTO chokaq_jobs_hot (id, queue, type, payload, tags, priority, status, attempt_count,
        created_at_utc, enqueued_at_utc, last_updated_utc, created_by, trace_context,
        payload_version, group_key, batch_id)
      SELECT c.job_id, c.queue, c.type, c.payload, c.tags, c.priority, 0, 0,
        CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), c.created_by, c.trace_context,
        c.payload_version, COALESCE(c.group_key,
          CASE WHEN EXISTS (SELECT 1 FROM chokaq_queues gq
                            WHERE gq.name = c.queue AND (gq.group_concurrency IS NOT NULL OR gq.group_rate_max IS NOT NULL))
               THEN '' END), c.batch_id
      FROM json_each(@settled) AS s
      JOIN chokaq_batch_callbacks c ON c.batch_id = s.value ->> 'id' AND (c.kind & (s.value ->> 'due')) <> 0
      ORDER BY s.key, c.kind

-- [9/9] run
COMMIT
