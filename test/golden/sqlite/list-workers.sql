-- [1/3] run
BEGIN

-- [2/3] all
SELECT *, (stopped_at_utc IS NULL
          AND last_seen_utc < CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - @lostAfterMs) AS is_lost
      FROM chokaq_workers
      ORDER BY last_seen_utc DESC, worker_id
      LIMIT @limit

-- [3/3] run
COMMIT
