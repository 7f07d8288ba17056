-- [1/1] query

SELECT q.name AS queue, date_trunc('minute', now()) - $1::integer * interval '1 minute' AS from_utc,
       coalesce(o.succeeded, 0) AS succeeded, coalesce(o.failed, 0) AS failed,
       coalesce(o.cancelled, 0) AS cancelled, coalesce(o.retried, 0) AS retried
FROM "chokaq".queues q
LEFT JOIN (
  SELECT b.queue,
         sum(b.completed_count) FILTER (WHERE b.outcome = 0) AS succeeded,
         sum(b.completed_count) FILTER (WHERE b.outcome = 1) AS failed,
         sum(b.completed_count) FILTER (WHERE b.outcome = 2) AS cancelled,
         sum(b.completed_count) FILTER (WHERE b.outcome = 3) AS retried
  FROM "chokaq".metric_buckets b
  WHERE b.bucket_utc >= date_trunc('minute', now()) - $1::integer * interval '1 minute'
    AND b.outcome IN (0, 1, 2, 3)
  GROUP BY b.queue) o ON o.queue = q.name
ORDER BY q.name
