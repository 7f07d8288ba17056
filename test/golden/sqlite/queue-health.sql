-- [1/3] run
BEGIN

-- [2/3] all
WITH names(queue) AS (SELECT name FROM chokaq_queues UNION SELECT DISTINCT queue FROM chokaq_jobs_hot),
      due AS (
        SELECT queue, COUNT(*) AS due_pending,
          SUM(CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - COALESCE(scheduled_at_utc, enqueued_at_utc)) AS lag_sum_ms,
          CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - MIN(COALESCE(scheduled_at_utc, enqueued_at_utc)) AS max_lag_ms
        FROM chokaq_jobs_hot INDEXED BY chokaq_jobs_hot_pending_ix
        WHERE status = 0 AND COALESCE(scheduled_at_utc, enqueued_at_utc) <= CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
        GROUP BY queue),
      held AS (
        SELECT queue, COUNT(*) AS held_pending,
          SUM(CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - held_since_utc) AS held_lag_sum_ms,
          CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - MIN(held_since_utc) AS held_max_lag_ms,
          MIN(COALESCE(scheduled_at_utc, enqueued_at_utc)) AS held_until_utc
        FROM chokaq_jobs_hot INDEXED BY chokaq_jobs_hot_held_ix
        WHERE status = 0 AND held_since_utc IS NOT NULL
          AND COALESCE(scheduled_at_utc, enqueued_at_utc) > CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
        GROUP BY queue),
      active AS (SELECT queue, COUNT(*) AS n FROM chokaq_jobs_hot WHERE status IN (1, 2) GROUP BY queue),
      lag AS (
        SELECT queue, SUM(lag_count) AS lag_count, SUM(lag_sum_ms) AS lag_sum_ms,
          MAX(lag_max_ms) AS lag_max_ms
        FROM chokaq_metric_buckets
        WHERE outcome = 4 AND bucket_utc >= ((CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) / 60000) * 60000) - 300000
        GROUP BY queue)
      SELECT n.queue, COALESCE(d.due_pending, 0) AS due_pending, COALESCE(d.lag_sum_ms, 0) AS lag_sum_ms,
        COALESCE(d.max_lag_ms, 0) AS max_lag_ms, COALESCE(h.held_pending, 0) AS held_pending,
        COALESCE(h.held_lag_sum_ms, 0) AS held_lag_sum_ms,
        COALESCE(h.held_max_lag_ms, 0) AS held_max_lag_ms, h.held_until_utc,
        COALESCE(a.n, 0) AS active, q.max_workers,
        COALESCE(l.lag_count, 0) AS lag_count, COALESCE(l.lag_sum_ms, 0) AS start_lag_sum_ms,
        COALESCE(l.lag_max_ms, 0) AS lag_max_ms
      FROM names n
      LEFT JOIN due d ON d.queue = n.queue
      LEFT JOIN held h ON h.queue = n.queue
      LEFT JOIN active a ON a.queue = n.queue
      LEFT JOIN lag l ON l.queue = n.queue
      LEFT JOIN chokaq_queues q ON q.name = n.queue
      ORDER BY n.queue

-- [3/3] run
COMMIT
