-- [1/3] run
BEGIN

-- [2/3] all
SELECT r.* FROM (
      SELECT w.*, row_number() OVER (ORDER BY w.failed_at_utc DESC, w.id DESC) AS rn,
        sum(w.hit) OVER (ORDER BY w.failed_at_utc DESC, w.id DESC ROWS UNBOUNDED PRECEDING) AS hit_rank
      FROM (
        SELECT id, queue, type, status, failure_reason, attempt_count, priority, tags, created_at_utc, enqueued_at_utc, scheduled_at_utc, started_at_utc, failed_at_utc, worker_id, progress, substr(COALESCE(error_details, last_error), 1, 200) AS error_prefix, octet_length(payload) AS payload_bytes, CASE WHEN (id LIKE @f_search ESCAPE '\' OR type LIKE @f_search ESCAPE '\' OR payload LIKE @f_search ESCAPE '\' OR error_details LIKE @f_search ESCAPE '\' OR last_error LIKE @f_search ESCAPE '\') THEN 1 ELSE 0 END AS hit
        FROM chokaq_jobs_dlq WHERE queue = @f_queue AND (failed_at_utc, id) < (@after_at, @after_id)
        ORDER BY failed_at_utc DESC, id DESC LIMIT 10001) AS w
    ) AS r
    WHERE (r.hit = 1 AND r.hit_rank <= @limit AND r.rn <= 10000) OR r.rn >= 10000
    ORDER BY r.rn

-- [3/3] run
COMMIT
