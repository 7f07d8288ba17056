-- [1/1] query

SELECT r.* FROM (
  SELECT w.*,
         row_number() OVER (ORDER BY w.failed_at_utc DESC, w.id COLLATE "C" DESC) AS rn,
         sum(w.hit) OVER (ORDER BY w.failed_at_utc DESC, w.id COLLATE "C" DESC ROWS UNBOUNDED PRECEDING) AS hit_rank
  FROM (
    SELECT x.id, x.queue, x.type, x.status, x.failure_reason, x.attempt_count, x.priority, x.tags, x.created_at_utc, x.enqueued_at_utc, x.scheduled_at_utc, x.started_at_utc, x.failed_at_utc, x.worker_id, x.progress, left(coalesce(x.error_details, x.last_error), 200) AS error_prefix, octet_length(x.payload) AS payload_bytes, to_char(x.failed_at_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_at,
           CASE WHEN (x.id ILIKE $4 ESCAPE '\' OR x.type ILIKE $4 ESCAPE '\' OR x.payload ILIKE $4 ESCAPE '\' OR x.error_details ILIKE $4 ESCAPE '\' OR x.last_error ILIKE $4 ESCAPE '\') THEN 1 ELSE 0 END AS hit
    FROM "chokaq".jobs_dlq x
    WHERE x.queue >= $1 AND x.queue <= $1 AND (x.queue, x.failed_at_utc, x.id COLLATE "C") <= ($1, $2::timestamptz, $3::text) AND x.id <> $3::text
    ORDER BY x.queue DESC, x.failed_at_utc DESC, x.id COLLATE "C" DESC
    LIMIT 10001) w
) r
WHERE (r.hit = 1 AND r.hit_rank <= $5 AND r.rn <= 10000) OR r.rn >= 10000
ORDER BY r.rn
