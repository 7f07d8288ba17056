-- [1/1] query

SELECT w.*, (w.stopped_at_utc IS NULL AND w.last_seen_utc < now() - $1::float8 * interval '1 millisecond') AS is_lost
FROM "chokaq".workers w
ORDER BY w.last_seen_utc DESC, w.worker_id
LIMIT $2
