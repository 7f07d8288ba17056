-- [1/1] query

SELECT (date_part('epoch', m.bucket_utc - $1::timestamptz) * 1000)::bigint / $3::bigint AS slot, m.outcome,
       sum(m.completed_count) AS count, sum(m.duration_count) AS duration_count,
       sum(m.total_duration_ms) AS total_duration_ms, sum(m.lag_count) AS lag_count,
       sum(m.lag_sum_ms) AS lag_sum_ms, max(m.lag_max_ms) AS lag_max_ms
FROM (
  SELECT b.bucket_utc, b.outcome,
         sum(b.completed_count)::bigint AS completed_count, sum(b.duration_count)::bigint AS duration_count,
         sum(b.total_duration_ms)::bigint AS total_duration_ms, sum(b.lag_count)::bigint AS lag_count,
         sum(b.lag_sum_ms)::bigint AS lag_sum_ms, max(b.lag_max_ms) AS lag_max_ms
FROM "chokaq".metric_buckets b
WHERE b.bucket_utc >= $1::timestamptz AND b.bucket_utc < $2::timestamptz AND b.queue = $4::text
GROUP BY b.bucket_utc, b.outcome) m
GROUP BY 1, 2
