-- [1/1] query

SELECT (date_part('epoch', b.bucket_utc - $1::timestamptz) * 1000)::bigint / $3::bigint AS slot, b.outcome,
       sum(b.completed_count) AS count, sum(b.duration_count) AS duration_count,
       sum(b.total_duration_ms) AS total_duration_ms, sum(b.lag_count) AS lag_count,
       sum(b.lag_sum_ms) AS lag_sum_ms, max(b.lag_max_ms) AS lag_max_ms
FROM (
  WITH seal AS MATERIALIZED (
    SELECT coalesce((SELECT to_timestamp(m.value::float8) FROM "chokaq".settings m
                     WHERE m.name = 'metric_totals.sealed_to'), '-infinity') AS upto)
  SELECT t.bucket_utc, t.outcome, t.completed_count, t.duration_count, t.total_duration_ms,
         t.lag_count, t.lag_sum_ms, t.lag_max_ms
  FROM "chokaq".metric_totals t
  WHERE t.bucket_utc >= $1::timestamptz AND t.bucket_utc < least($2::timestamptz, (SELECT upto FROM seal))
  UNION ALL
  SELECT b.bucket_utc, b.outcome, b.completed_count, b.duration_count, b.total_duration_ms,
         b.lag_count, b.lag_sum_ms, b.lag_max_ms
  FROM "chokaq".metric_buckets b
  WHERE b.bucket_utc >= greatest($1::timestamptz, (SELECT upto FROM seal)) AND b.bucket_utc < $2::timestamptz) b
GROUP BY b.bucket_utc, b.outcome
