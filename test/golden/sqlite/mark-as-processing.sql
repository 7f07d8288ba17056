-- [1/5] run
BEGIN IMMEDIATE

-- [2/5] all
WITH lease(id, worker_id, lease_id) AS (
    SELECT value ->> 'id', value ->> 'workerId', value ->> 'leaseId' FROM json_each(@leases)
  )
      SELECT id FROM chokaq_jobs_hot WHERE status = 2 AND (id, worker_id, lease_id) IN (SELECT id, worker_id, lease_id FROM lease)

-- [3/5] all
WITH lease(id, worker_id, lease_id) AS (
    SELECT value ->> 'id', value ->> 'workerId', value ->> 'leaseId' FROM json_each(@leases)
  )
      UPDATE chokaq_jobs_hot
      SET status = 2, attempt_count = attempt_count + 1, started_at_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER),
          heartbeat_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), last_updated_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      WHERE status = 1 AND (id, worker_id, lease_id) IN (SELECT id, worker_id, lease_id FROM lease)
      RETURNING id, queue,
        MAX(0, started_at_utc - COALESCE(scheduled_at_utc, enqueued_at_utc)) AS lag_ms

-- [4/5] run
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

-- [5/5] run
COMMIT
