-- [1/5] get
PRAGMA synchronous

-- [2/5] run
BEGIN IMMEDIATE

-- [3/5] all
WITH
      handled_queue(queue) AS (SELECT value FROM json_each(@queues)),
      handled_type(queue, type, min_version, max_version) AS (
        SELECT value ->> 'queue', value ->> 'type', value ->> 'minVersion', value ->> 'maxVersion'
        FROM json_each(@types)),
      wanted(queue) AS (SELECT queue FROM handled_queue UNION SELECT queue FROM handled_type),
      budget(queue, any_type, remaining) AS (
        SELECT w.queue,
               w.queue IN (SELECT queue FROM handled_queue),
               MIN(CASE WHEN q.max_workers IS NULL THEN @limit
                        ELSE q.max_workers - (SELECT COUNT(*) FROM chokaq_jobs_hot a
                                               WHERE a.queue = w.queue AND a.status IN (1, 2)) END,
                   CASE WHEN q.rate_limit_max IS NULL THEN @limit
                        WHEN @start < @limit THEN 0
                        ELSE MAX(0, q.rate_limit_max
                          - CASE WHEN (q.rate_window_start IS NULL OR CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) >= q.rate_window_start + q.rate_limit_per_ms)
                                 THEN CASE WHEN q.rate_window_last > CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - q.rate_limit_per_ms
                                           THEN COALESCE(q.rate_window_count, 0) ELSE 0 END
                                 ELSE COALESCE(q.rate_window_count, 0)
                                      + CASE WHEN q.rate_prev_last > CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - q.rate_limit_per_ms
                                             THEN COALESCE(q.rate_prev_count, 0) ELSE 0 END
                            END) END)
        FROM wanted w LEFT JOIN chokaq_queues q ON q.name = w.queue
        WHERE COALESCE(q.is_paused, 0) = 0 AND COALESCE(q.is_active, 1) = 1 AND q.group_concurrency IS NULL AND q.group_rate_max IS NULL
      ),
      candidate AS (
        SELECT h.id, h.queue, h.priority, COALESCE(h.scheduled_at_utc, h.enqueued_at_utc) AS due,
               b.remaining
        FROM budget b CROSS JOIN chokaq_jobs_hot h
        WHERE b.remaining > 0
          AND h.id IN (
            SELECT c.id FROM chokaq_jobs_hot c
            WHERE c.status = 0 AND c.queue = b.queue
              AND (c.scheduled_at_utc IS NULL OR c.scheduled_at_utc <= CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER))
              AND (b.any_type OR EXISTS (
                SELECT 1 FROM handled_type t
                WHERE t.queue = b.queue AND t.type = c.type
                  AND c.payload_version BETWEEN t.min_version AND t.max_version))
            ORDER BY c.priority DESC, COALESCE(c.scheduled_at_utc, c.enqueued_at_utc), c.id
            LIMIT @limit)
      ),
      ranked AS (
        SELECT id, priority, due, remaining,
               ROW_NUMBER() OVER (PARTITION BY queue ORDER BY priority DESC, due, id) AS rn
        FROM candidate
      ),
      picked AS (
        SELECT id, ROW_NUMBER() OVER (ORDER BY priority DESC, due, id) AS claim_rn
        FROM ranked WHERE rn <= remaining ORDER BY priority DESC, due, id LIMIT @limit
      )
      UPDATE chokaq_jobs_hot AS h
      SET status = CASE WHEN p.claim_rn <= @start THEN 2 ELSE 1 END,
          attempt_count = attempt_count + CASE WHEN p.claim_rn <= @start THEN 1 ELSE 0 END,
          started_at_utc = CASE WHEN p.claim_rn <= @start THEN CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
                                ELSE started_at_utc END,
          heartbeat_utc = CASE WHEN p.claim_rn <= @start THEN CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
                               ELSE heartbeat_utc END,
          worker_id = @workerId, lease_id = @leaseId, last_updated_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      FROM picked p
      WHERE h.status = 0 AND h.id = p.id
      RETURNING *

-- [4/5] all
SELECT rate_limit_max AS max, rate_limit_per_ms AS per_ms,
        rate_window_count AS window_count, rate_prev_count AS prev_count,
        rate_window_start AS window_start_ms, rate_window_last AS window_last_ms,
        rate_prev_last AS prev_last_ms, CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) AS now_ms
      FROM chokaq_queues
      WHERE name IN (SELECT value FROM json_each(@queues)) AND rate_limit_max IS NOT NULL

-- [5/5] run
COMMIT
