-- [1/3] run
BEGIN

-- [2/3] all
SELECT CAST((bucket_utc - @from) / @step AS INTEGER) AS slot, outcome,
        SUM(completed_count) AS count, SUM(duration_count) AS duration_count,
        SUM(total_duration_ms) AS total_duration_ms, SUM(lag_count) AS lag_count,
        SUM(lag_sum_ms) AS lag_sum_ms, MAX(lag_max_ms) AS lag_max_ms
      FROM chokaq_metric_buckets
      WHERE bucket_utc >= @from AND bucket_utc < @to
      GROUP BY slot, outcome

-- [3/3] run
COMMIT
