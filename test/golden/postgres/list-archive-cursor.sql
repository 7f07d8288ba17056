-- [1/1] query

SELECT x.id, x.queue, x.type, x.attempt_count, x.priority, x.tags, x.created_at_utc, x.enqueued_at_utc, x.scheduled_at_utc, x.started_at_utc, x.finished_at_utc, x.duration_ms, x.worker_id, x.progress, left(x.last_error, 200) AS error_prefix, octet_length(x.payload) AS payload_bytes, to_char(x.finished_at_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_at
FROM "chokaq".jobs_archive x
WHERE x.queue >= $1 AND x.queue <= $1 AND (x.queue, x.finished_at_utc, x.id COLLATE "C") >= ($1, $2::timestamptz, $3::text) AND x.id <> $3::text
ORDER BY x.queue ASC, x.finished_at_utc ASC, x.id COLLATE "C" ASC
LIMIT $4
