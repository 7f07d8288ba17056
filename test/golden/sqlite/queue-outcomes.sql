-- [1/3] run
BEGIN

-- [2/3] all
WITH w(from_utc) AS MATERIALIZED (
        SELECT ((CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) / 60000) * 60000) - @minutes * 60000)
      SELECT q.name AS queue, w.from_utc,
        COALESCE(o.succeeded, 0) AS succeeded, COALESCE(o.failed, 0) AS failed,
        COALESCE(o.cancelled, 0) AS cancelled, COALESCE(o.retried, 0) AS retried
      FROM chokaq_queues q
      CROSS JOIN w
      LEFT JOIN (
        SELECT b.queue,
          SUM(CASE WHEN b.outcome = 0 THEN b.completed_count ELSE 0 END) AS succeeded,
          SUM(CASE WHEN b.outcome = 1 THEN b.completed_count ELSE 0 END) AS failed,
          SUM(CASE WHEN b.outcome = 2 THEN b.completed_count ELSE 0 END) AS cancelled,
          SUM(CASE WHEN b.outcome = 3 THEN b.completed_count ELSE 0 END) AS retried
        FROM chokaq_metric_buckets b
        WHERE b.bucket_utc >= (SELECT from_utc FROM w) AND b.outcome IN (0, 1, 2, 3)
        GROUP BY +b.queue) o ON o.queue = q.name
      ORDER BY q.name

-- [3/3] run
COMMIT
