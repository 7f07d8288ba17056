-- [1/1] query

SELECT * FROM (
  (SELECT x.id, x.queue, x.type, x.status, x.attempt_count, x.priority, x.tags, x.created_at_utc, x.enqueued_at_utc, x.scheduled_at_utc, x.started_at_utc, x.worker_id, x.progress, x.held_since_utc, left(x.last_error, 200) AS error_prefix, octet_length(x.payload) AS payload_bytes, to_char(x.enqueued_at_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_at
  FROM "chokaq".jobs_hot x
  WHERE x.status = 0 AND (x.queue = $1)
  ORDER BY x.enqueued_at_utc DESC, x.id COLLATE "C" DESC
  LIMIT $2)
  UNION ALL
  (SELECT x.id, x.queue, x.type, x.status, x.attempt_count, x.priority, x.tags, x.created_at_utc, x.enqueued_at_utc, x.scheduled_at_utc, x.started_at_utc, x.worker_id, x.progress, x.held_since_utc, left(x.last_error, 200) AS error_prefix, octet_length(x.payload) AS payload_bytes, to_char(x.enqueued_at_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_at
  FROM "chokaq".jobs_hot x
  WHERE x.status IN (1, 2) AND (x.queue = $1)
  ORDER BY x.enqueued_at_utc DESC, x.id COLLATE "C" DESC
  LIMIT $2)
  UNION ALL
  (SELECT x.id, x.queue, x.type, x.status, x.attempt_count, x.priority, x.tags, x.created_at_utc, x.enqueued_at_utc, x.scheduled_at_utc, x.started_at_utc, x.worker_id, x.progress, x.held_since_utc, left(x.last_error, 200) AS error_prefix, octet_length(x.payload) AS payload_bytes, to_char(x.enqueued_at_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_at
  FROM "chokaq".jobs_hot x
  WHERE x.status = 7 AND (x.queue = $1)
  ORDER BY x.enqueued_at_utc DESC, x.id COLLATE "C" DESC
  LIMIT $2)
) x
ORDER BY x.enqueued_at_utc DESC, x.id COLLATE "C" DESC
LIMIT $2
