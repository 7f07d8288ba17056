-- [1/1] query
SELECT count(*)::bigint AS total FROM "chokaq".jobs_dlq x WHERE x.queue = $1 AND x.failure_reason = $2::smallint
