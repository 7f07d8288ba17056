-- [1/1] query

SELECT (date_part('epoch', b.bucket_utc - $1::timestamptz) * 1000)::bigint / $3::bigint AS slot, b.outcome,
       sum(b.completed_count) AS count, sum(b.duration_count) AS duration_count,
       sum(b.total_duration_ms) AS total_duration_ms, sum(b.lag_count) AS lag_count,
       sum(b.lag_sum_ms) AS lag_sum_ms, max(b.lag_max_ms) AS lag_max_ms
FROM "chokaq".metric_buckets b
WHERE b.bucket_utc >= $1::timestamptz AND b.bucket_utc < $2::timestamptz
GROUP BY b.bucket_utc, b.outcome
