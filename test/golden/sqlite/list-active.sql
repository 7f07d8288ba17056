-- [1/3] run
BEGIN

-- [2/3] all
SELECT id, queue, type, status, attempt_count, priority, tags, created_at_utc, enqueued_at_utc, scheduled_at_utc, started_at_utc, worker_id, progress, held_since_utc, substr(last_error, 1, 200) AS error_prefix, octet_length(payload) AS payload_bytes FROM chokaq_jobs_hot WHERE queue = @f_queue
      ORDER BY enqueued_at_utc DESC, id DESC LIMIT @limit

-- [3/3] run
COMMIT
