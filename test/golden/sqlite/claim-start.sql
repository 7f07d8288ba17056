-- [1/5] get
PRAGMA synchronous

-- [2/5] run
BEGIN IMMEDIATE

-- [3/5] all
WITH
      picked AS (
        SELECT c.id,
               ROW_NUMBER() OVER (ORDER BY c.priority DESC,
                                  COALESCE(c.scheduled_at_utc, c.enqueued_at_utc), c.id) AS claim_rn
        FROM chokaq_jobs_hot c
        WHERE c.status = 0 AND c.queue = @queue
          AND (c.scheduled_at_utc IS NULL OR c.scheduled_at_utc <= CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER))
          AND NOT EXISTS (SELECT 1 FROM chokaq_queues q WHERE q.name = @queue
                            AND (q.is_paused <> 0 OR q.is_active = 0 OR q.max_workers IS NOT NULL
                                 OR q.rate_limit_max IS NOT NULL OR (q.group_concurrency IS NOT NULL OR q.group_rate_max IS NOT NULL)))
        ORDER BY c.priority DESC, COALESCE(c.scheduled_at_utc, c.enqueued_at_utc), c.id
        LIMIT @limit
      )
      UPDATE chokaq_jobs_hot AS h
      SET status = CASE WHEN p.claim_rn <= @start THEN 2 ELSE 1 END,
          attempt_count = attempt_count + CASE WHEN p.claim_rn <= @start THEN 1 ELSE 0 END,
          started_at_utc = CASE WHEN p.claim_rn <= @start THEN CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
                                ELSE started_at_utc END,
          heartbeat_utc = CASE WHEN p.claim_rn <= @start THEN CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
                               ELSE heartbeat_utc END,
          worker_id = @workerId, lease_id = @leaseId, last_updated_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      FROM picked p
      WHERE h.status = 0 AND h.id = p.id
      RETURNING *

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
