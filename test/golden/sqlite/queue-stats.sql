-- [1/5] run
BEGIN

-- [2/5] all
SELECT queue, 0 AS status, COUNT(*) AS n
        FROM chokaq_jobs_hot INDEXED BY chokaq_jobs_hot_pending_ix WHERE status = 0 GROUP BY queue
      UNION ALL
      SELECT queue, status, COUNT(*) AS n FROM chokaq_jobs_hot WHERE status IN (1, 2) GROUP BY queue, status

-- [3/5] all
SELECT queue, COUNT(*) AS n
      FROM chokaq_jobs_hot INDEXED BY chokaq_jobs_hot_waiting_ix WHERE status = 7 GROUP BY queue

-- [4/5] all
WITH names(queue) AS (SELECT name FROM chokaq_queues UNION SELECT queue FROM chokaq_stats_summary)
      SELECT n.queue, s.succeeded_total, s.failed_total, s.cancelled_total, s.retried_total,
        s.deferred_total, s.resurrected_total, s.last_activity_utc, q.is_paused, q.is_active, q.max_workers
      FROM names n
      LEFT JOIN chokaq_stats_summary s ON s.queue = n.queue
      LEFT JOIN chokaq_queues q ON q.name = n.queue
      ORDER BY n.queue

-- [5/5] run
COMMIT
