-- [1/3] run
BEGIN

-- [2/3] all
SELECT id, queue, type, attempt_count, priority, tags, created_at_utc, enqueued_at_utc, scheduled_at_utc, started_at_utc, finished_at_utc, duration_ms, worker_id, progress, substr(last_error, 1, 200) AS error_prefix, octet_length(payload) AS payload_bytes FROM chokaq_jobs_archive WHERE queue = @f_queue AND (finished_at_utc, id) > (@after_at, @after_id)
      ORDER BY finished_at_utc ASC, id ASC LIMIT @limit

-- [3/3] run
COMMIT
