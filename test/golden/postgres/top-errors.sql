-- [1/1] query

SELECT left(split_part(coalesce(x.error_details, ''), E'\n', 1), 500) AS line,
       floor(extract(epoch FROM x.failed_at_utc) * 1000)::float8 AS failed_at_ms
FROM "chokaq".jobs_dlq x
WHERE x.queue = $1 AND x.failed_at_utc >= now() - $2::float8 * interval '1 millisecond'
ORDER BY x.failed_at_utc DESC
LIMIT $3
