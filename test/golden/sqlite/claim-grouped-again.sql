-- [1/11] get
PRAGMA synchronous

-- [2/11] run
BEGIN IMMEDIATE

-- [3/11] all
SELECT q.name FROM chokaq_queues q
      WHERE q.name IN (SELECT value FROM json_each(@queues)) AND (q.group_concurrency IS NOT NULL OR q.group_rate_max IS NOT NULL)
      ORDER BY q.name

-- [4/11] get
SELECT COALESCE(q.group_cursor, '') AS cursor,
        MIN(@start,
            CASE WHEN q.max_workers IS NULL THEN @start
                 ELSE q.max_workers - (SELECT COUNT(*) FROM chokaq_jobs_hot a
                                        WHERE a.queue = @queue AND a.status IN (1, 2)) END,
            CASE WHEN q.rate_limit_max IS NULL THEN @start ELSE MAX(0, q.rate_limit_max
                          - CASE WHEN (q.rate_window_start IS NULL OR CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) >= q.rate_window_start + q.rate_limit_per_ms)
                                 THEN CASE WHEN q.rate_window_last > CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - q.rate_limit_per_ms
                                           THEN COALESCE(q.rate_window_count, 0) ELSE 0 END
                                 ELSE COALESCE(q.rate_window_count, 0)
                                      + CASE WHEN q.rate_prev_last > CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - q.rate_limit_per_ms
                                             THEN COALESCE(q.rate_prev_count, 0) ELSE 0 END
                            END) END) AS budget,
        (SELECT j.group_key
          FROM chokaq_jobs_hot j
          WHERE j.status = 0 AND j.queue = @queue AND j.group_key > COALESCE(q.group_cursor, '')
          ORDER BY j.group_key LIMIT 1) AS after_cursor,
        (SELECT CASE WHEN j.group_key <= COALESCE(q.group_cursor, '') THEN j.group_key END
          FROM chokaq_jobs_hot j
          WHERE j.status = 0 AND j.queue = @queue AND j.group_key IS NOT NULL
          ORDER BY j.group_key LIMIT 1) AS first_group,
        q.group_rate_max IS NOT NULL AS group_rated
      FROM chokaq_queues q
      WHERE q.name = @queue AND q.is_paused = 0 AND q.is_active = 1 AND (q.group_concurrency IS NOT NULL OR q.group_rate_max IS NOT NULL)

-- [5/11] get
SELECT f.id AS first_id,
        CASE WHEN f.id IS NULL THEN 0
          ELSE MIN(@budget,
            CASE WHEN gq.group_concurrency IS NULL THEN @budget
                 ELSE gq.group_concurrency - (SELECT COUNT(*) FROM chokaq_jobs_hot a
                                               WHERE a.status IN (1, 2) AND a.queue = @queue
                                                 AND a.group_key = @group) END,
            CASE WHEN gq.group_rate_max IS NULL THEN @budget
                 ELSE COALESCE((SELECT MAX(0, gq.group_rate_max
                          - CASE WHEN (g.rate_window_start IS NULL OR CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) >= g.rate_window_start + gq.group_rate_per_ms)
                                 THEN CASE WHEN g.rate_window_last > CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - gq.group_rate_per_ms
                                           THEN COALESCE(g.rate_window_count, 0) ELSE 0 END
                                 ELSE COALESCE(g.rate_window_count, 0)
                                      + CASE WHEN g.rate_prev_last > CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - gq.group_rate_per_ms
                                             THEN COALESCE(g.rate_prev_count, 0) ELSE 0 END
                            END)
                                FROM chokaq_job_groups g WHERE g.queue = @queue AND g.group_key = @group),
                               gq.group_rate_max) END) END AS room,
        (SELECT CASE WHEN @wrapped = 0 OR j.group_key <= @cursor THEN j.group_key END
          FROM chokaq_jobs_hot j
          WHERE j.status = 0 AND j.queue = @queue AND j.group_key > @group
          ORDER BY j.group_key LIMIT 1) AS next_group
      FROM chokaq_queues gq
      LEFT JOIN (
        SELECT d.id FROM chokaq_jobs_hot d
        WHERE d.status = 0 AND d.queue = @queue AND d.group_key = @group
          AND (d.scheduled_at_utc IS NULL OR d.scheduled_at_utc <= CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER))
          AND (@types IS NULL OR EXISTS (
            SELECT 1 FROM json_each(@types) t
            WHERE t.value ->> 'type' = d.type
              AND d.payload_version BETWEEN t.value ->> 'minVersion' AND t.value ->> 'maxVersion'))
        ORDER BY d.priority DESC, COALESCE(d.scheduled_at_utc, d.enqueued_at_utc), d.id
        LIMIT 1
      ) f ON 1
      WHERE gq.name = @queue

-- [6/11] all
WITH
      visit(group_key, n, room) AS (
        SELECT value ->> 'group', value ->> 'n', value ->> 'room' FROM json_each(@visits)),
      handled_type(type, min_version, max_version) AS (
        SELECT value ->> 'type', value ->> 'minVersion', value ->> 'maxVersion'
        FROM json_each(@types)),
      candidate AS (
        SELECT h.id, v.n, v.room, h.priority, COALESCE(h.scheduled_at_utc, h.enqueued_at_utc) AS due
        FROM visit v CROSS JOIN chokaq_jobs_hot h
        WHERE h.id IN (
          SELECT c.id FROM chokaq_jobs_hot c
          WHERE c.status = 0 AND c.queue = @queue AND c.group_key = v.group_key
            AND (c.scheduled_at_utc IS NULL OR c.scheduled_at_utc <= CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER))
            AND (@types IS NULL OR EXISTS (
              SELECT 1 FROM handled_type t
              WHERE t.type = c.type AND c.payload_version BETWEEN t.min_version AND t.max_version))
          ORDER BY c.priority DESC, COALESCE(c.scheduled_at_utc, c.enqueued_at_utc), c.id
          LIMIT @most)
      ),
      ranked AS (
        SELECT id, n, room, ROW_NUMBER() OVER (PARTITION BY n ORDER BY priority DESC, due, id) AS rn
        FROM candidate
      ),
      picked AS (
        SELECT id FROM ranked WHERE rn <= room ORDER BY rn, n LIMIT @budget
      )
      UPDATE chokaq_jobs_hot AS h
      SET status = 2, attempt_count = attempt_count + 1, started_at_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER),
          heartbeat_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), worker_id = @workerId, lease_id = @leaseId,
          last_updated_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      FROM picked p
      WHERE h.status = 0 AND h.id = p.id
      RETURNING *

-- [7/11] run
UPDATE chokaq_queues SET group_cursor = @cursor WHERE name = @queue

-- [8/11] run
INSERT INTO chokaq_metric_buckets (bucket_utc, queue, outcome, failure_reason, completed_count,
        duration_count, total_duration_ms, max_duration_ms, lag_count, lag_sum_ms, lag_max_ms)
      SELECT ((CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) / 60000) * 60000), value ->> 'queue', value ->> 'outcome', value ->> 'failure_reason',
        value ->> 'completed', value ->> 'duration_count', value ->> 'total_duration_ms',
        value ->> 'max_duration_ms', value ->> 'lag_count', value ->> 'lag_sum_ms',
        value ->> 'lag_max_ms'
      FROM json_each(@buckets) WHERE true
      ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE SET
        completed_count = completed_count + excluded.completed_count,
        duration_count = duration_count + excluded.duration_count,
        total_duration_ms = total_duration_ms + excluded.total_duration_ms,
        max_duration_ms = MAX(max_duration_ms, excluded.max_duration_ms),
        lag_count = lag_count + excluded.lag_count,
        lag_sum_ms = lag_sum_ms + excluded.lag_sum_ms,
        lag_max_ms = MAX(lag_max_ms, excluded.lag_max_ms)

-- [9/11] run
WITH spent(queue, n, t) AS (
        SELECT value ->> 'queue', value ->> 'n', value ->> 't' FROM json_each(@spent)
      )
      UPDATE chokaq_queues AS q
      SET rate_prev_count = CASE WHEN (q.rate_window_start IS NULL OR s.t >= q.rate_window_start + q.rate_limit_per_ms) THEN q.rate_window_count
                                 ELSE q.rate_prev_count END,
          rate_prev_last = CASE WHEN (q.rate_window_start IS NULL OR s.t >= q.rate_window_start + q.rate_limit_per_ms) THEN q.rate_window_last
                                ELSE q.rate_prev_last END,
          rate_window_count = CASE WHEN (q.rate_window_start IS NULL OR s.t >= q.rate_window_start + q.rate_limit_per_ms) THEN s.n
                                   ELSE q.rate_window_count + s.n END,
          rate_window_start = CASE WHEN (q.rate_window_start IS NULL OR s.t >= q.rate_window_start + q.rate_limit_per_ms) THEN s.t ELSE q.rate_window_start END,
          rate_window_last = s.t
      FROM spent s
      WHERE q.name = s.queue AND q.rate_limit_max IS NOT NULL

-- [10/11] all
SELECT rate_limit_max AS max, rate_limit_per_ms AS per_ms,
        rate_window_count AS window_count, rate_prev_count AS prev_count,
        rate_window_start AS window_start_ms, rate_window_last AS window_last_ms,
        rate_prev_last AS prev_last_ms, CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) AS now_ms
      FROM chokaq_queues
      WHERE name IN (SELECT value FROM json_each(@queues)) AND rate_limit_max IS NOT NULL

-- [11/11] run
COMMIT
