-- [1/1] query

WITH RECURSIVE relaxed AS MATERIALIZED (
  SELECT set_config('synchronous_commit', 'off', true) AS setting
),
locked AS MATERIALIZED (
  SELECT q.ctid AS tid, (q.group_concurrency IS NOT NULL OR q.group_rate_max IS NOT NULL) AS grouped, q.rate_limit_max IS NOT NULL AS rate_limited
  FROM "chokaq".queues q
  WHERE q.name = $3
  FOR NO KEY UPDATE
),
fresh AS MATERIALIZED (
  SELECT l.tid = (SELECT q.ctid FROM "chokaq".queues q WHERE q.name = $3) AS current,
         l.grouped, l.rate_limited
  FROM locked l
),
gq AS MATERIALIZED (
  SELECT q.name, q.group_concurrency, q.group_rate_max, q.group_rate_per_ms,
         coalesce(q.group_cursor, '') AS cursor,
         least(
           CASE WHEN q.max_workers IS NULL THEN $4::int
                ELSE greatest(0, least($4::int, q.max_workers - (
                       SELECT count(*) FROM "chokaq".jobs_hot a
                       WHERE a.status IN (1, 2) AND a.queue = q.name)))::int
           END,
           CASE WHEN q.rate_limit_max IS NULL THEN $4::int
                ELSE greatest(0, q.rate_limit_max
                - CASE WHEN (q.rate_window_start IS NULL OR statement_timestamp() >= q.rate_window_start + q.rate_limit_per_ms * interval '1 millisecond')
                       THEN CASE WHEN q.rate_window_last > statement_timestamp() - q.rate_limit_per_ms * interval '1 millisecond'
                                 THEN coalesce(q.rate_window_count, 0) ELSE 0 END
                       ELSE coalesce(q.rate_window_count, 0)
                            + CASE WHEN q.rate_prev_last > statement_timestamp() - q.rate_limit_per_ms * interval '1 millisecond'
                                   THEN coalesce(q.rate_prev_count, 0) ELSE 0 END
                  END)
           END) AS budget
  FROM "chokaq".queues q CROSS JOIN relaxed CROSS JOIN fresh f
  WHERE q.name = $3 AND NOT q.is_paused AND q.is_active
    AND (q.group_concurrency IS NOT NULL OR q.group_rate_max IS NOT NULL) AND f.current
),
walk (k, n, wrapped, id, tid, priority, due, room, found) AS (
  SELECT v.k, 1, v.wrapped, r.id, r.tid, r.priority, r.due, r.room, sign(r.room)::int
  FROM gq
  CROSS JOIN LATERAL (
    (
      SELECT j.group_key AS k, false AS wrapped, j.id, j.ctid AS tid, j.priority,
             coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
        AND ($5::text[] IS NULL OR EXISTS (
          SELECT 1 FROM unnest($5::text[], $6::int[], $7::int[]) AS t(type, lo, hi)
          WHERE t.type = j.type AND j.payload_version BETWEEN t.lo AND t.hi)) AS ready
      FROM "chokaq".jobs_hot j
      WHERE j.status = 0 AND j.queue = $3
        AND j.group_key > gq.cursor
      ORDER BY j.group_key, j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"
      LIMIT 1)
    UNION ALL
    (SELECT * FROM (
      SELECT j.group_key AS k, true AS wrapped, j.id, j.ctid AS tid, j.priority,
             coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
        AND ($5::text[] IS NULL OR EXISTS (
          SELECT 1 FROM unnest($5::text[], $6::int[], $7::int[]) AS t(type, lo, hi)
          WHERE t.type = j.type AND j.payload_version BETWEEN t.lo AND t.hi)) AS ready
      FROM "chokaq".jobs_hot j
      WHERE j.status = 0 AND j.queue = $3
        AND j.group_key IS NOT NULL
      ORDER BY j.group_key, j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"
      LIMIT 1) h WHERE NOT false)
    LIMIT 1
  ) v
  CROSS JOIN LATERAL (
    SELECT f.id, f.tid, f.priority, f.due,
           CASE WHEN f.id IS NULL THEN 0
           ELSE least(gq.budget,
             CASE WHEN gq.group_concurrency IS NULL THEN gq.budget
                  ELSE greatest(0, gq.group_concurrency - (
                         SELECT count(*) FROM "chokaq".jobs_hot a
                         WHERE a.status IN (1, 2) AND a.queue = $3 AND a.group_key = v.k))::int
             END,
             CASE WHEN gq.group_rate_max IS NULL THEN gq.budget
                  ELSE coalesce((SELECT greatest(0, gq.group_rate_max
                - CASE WHEN (g.rate_window_start IS NULL OR statement_timestamp() >= g.rate_window_start + gq.group_rate_per_ms * interval '1 millisecond')
                       THEN CASE WHEN g.rate_window_last > statement_timestamp() - gq.group_rate_per_ms * interval '1 millisecond'
                                 THEN coalesce(g.rate_window_count, 0) ELSE 0 END
                       ELSE coalesce(g.rate_window_count, 0)
                            + CASE WHEN g.rate_prev_last > statement_timestamp() - gq.group_rate_per_ms * interval '1 millisecond'
                                   THEN coalesce(g.rate_prev_count, 0) ELSE 0 END
                  END)
                                 FROM "chokaq".job_groups g WHERE g.queue = $3 AND g.group_key = v.k),
                                gq.group_rate_max)
             END) END AS room
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
      SELECT v.id, v.tid, v.priority, v.due WHERE v.ready
      UNION ALL
      (
      SELECT j.id, j.ctid AS tid, j.priority, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due
      FROM "chokaq".jobs_hot j
      WHERE j.status = 0 AND j.queue = $3 AND j.group_key = v.k
        AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
        AND ($5::text[] IS NULL OR EXISTS (
          SELECT 1 FROM unnest($5::text[], $6::int[], $7::int[]) AS t(type, lo, hi)
          WHERE t.type = j.type AND j.payload_version BETWEEN t.lo AND t.hi))
      ORDER BY j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"
       LIMIT 1)
      LIMIT 1
    ) f ON true
    OFFSET 0
  ) r
  WHERE gq.budget > 0
  UNION ALL
  SELECT v.k, w.n + 1, v.wrapped, r.id, r.tid, r.priority, r.due, r.room, w.found + sign(r.room)::int
  FROM walk w
  CROSS JOIN gq
  CROSS JOIN LATERAL (
    (
      SELECT j.group_key AS k, w.wrapped AS wrapped, j.id, j.ctid AS tid, j.priority,
             coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
        AND ($5::text[] IS NULL OR EXISTS (
          SELECT 1 FROM unnest($5::text[], $6::int[], $7::int[]) AS t(type, lo, hi)
          WHERE t.type = j.type AND j.payload_version BETWEEN t.lo AND t.hi)) AS ready
      FROM "chokaq".jobs_hot j
      WHERE j.status = 0 AND j.queue = $3
        AND j.group_key > w.k
      ORDER BY j.group_key, j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"
      LIMIT 1)
    UNION ALL
    (SELECT * FROM (
      SELECT j.group_key AS k, true AS wrapped, j.id, j.ctid AS tid, j.priority,
             coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
        AND ($5::text[] IS NULL OR EXISTS (
          SELECT 1 FROM unnest($5::text[], $6::int[], $7::int[]) AS t(type, lo, hi)
          WHERE t.type = j.type AND j.payload_version BETWEEN t.lo AND t.hi)) AS ready
      FROM "chokaq".jobs_hot j
      WHERE j.status = 0 AND j.queue = $3
        AND j.group_key IS NOT NULL
      ORDER BY j.group_key, j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"
      LIMIT 1) h WHERE NOT w.wrapped)
    LIMIT 1
  ) v
  CROSS JOIN LATERAL (
    SELECT f.id, f.tid, f.priority, f.due,
           CASE WHEN f.id IS NULL THEN 0
           ELSE least(gq.budget,
             CASE WHEN gq.group_concurrency IS NULL THEN gq.budget
                  ELSE greatest(0, gq.group_concurrency - (
                         SELECT count(*) FROM "chokaq".jobs_hot a
                         WHERE a.status IN (1, 2) AND a.queue = $3 AND a.group_key = v.k))::int
             END,
             CASE WHEN gq.group_rate_max IS NULL THEN gq.budget
                  ELSE coalesce((SELECT greatest(0, gq.group_rate_max
                - CASE WHEN (g.rate_window_start IS NULL OR statement_timestamp() >= g.rate_window_start + gq.group_rate_per_ms * interval '1 millisecond')
                       THEN CASE WHEN g.rate_window_last > statement_timestamp() - gq.group_rate_per_ms * interval '1 millisecond'
                                 THEN coalesce(g.rate_window_count, 0) ELSE 0 END
                       ELSE coalesce(g.rate_window_count, 0)
                            + CASE WHEN g.rate_prev_last > statement_timestamp() - gq.group_rate_per_ms * interval '1 millisecond'
                                   THEN coalesce(g.rate_prev_count, 0) ELSE 0 END
                  END)
                                 FROM "chokaq".job_groups g WHERE g.queue = $3 AND g.group_key = v.k),
                                gq.group_rate_max)
             END) END AS room
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
      SELECT v.id, v.tid, v.priority, v.due WHERE v.ready
      UNION ALL
      (
      SELECT j.id, j.ctid AS tid, j.priority, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due
      FROM "chokaq".jobs_hot j
      WHERE j.status = 0 AND j.queue = $3 AND j.group_key = v.k
        AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
        AND ($5::text[] IS NULL OR EXISTS (
          SELECT 1 FROM unnest($5::text[], $6::int[], $7::int[]) AS t(type, lo, hi)
          WHERE t.type = j.type AND j.payload_version BETWEEN t.lo AND t.hi))
      ORDER BY j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"
       LIMIT 1)
      LIMIT 1
    ) f ON true
    OFFSET 0
  ) r
  WHERE w.n < $8 AND w.found < gq.budget AND NOT (v.wrapped AND v.k > gq.cursor)
),
took AS MATERIALIZED (
  SELECT w.id, w.tid, w.n, 1::bigint AS rn
  FROM walk w
  WHERE w.room > 0
  UNION ALL
  SELECT t.id, t.tid, w.n,
         1 + row_number() OVER (PARTITION BY w.n ORDER BY t.priority DESC, t.due, t.id COLLATE "C") AS rn
  FROM walk w
  CROSS JOIN LATERAL (
      SELECT j.id, j.ctid AS tid, j.priority, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due
      FROM "chokaq".jobs_hot j
      WHERE j.status = 0 AND j.queue = $3 AND j.group_key = w.k
        AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
        AND ($5::text[] IS NULL OR EXISTS (
          SELECT 1 FROM unnest($5::text[], $6::int[], $7::int[]) AS t(type, lo, hi)
          WHERE t.type = j.type AND j.payload_version BETWEEN t.lo AND t.hi))
      ORDER BY j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"
    OFFSET 1
    LIMIT least(w.room, (SELECT gq.budget FROM gq) - (SELECT max(x.found) FROM walk x) + 1) - 1
  ) t
  WHERE w.room > 1
),
picked AS MATERIALIZED (
  SELECT t.id, t.tid FROM took t
  ORDER BY t.rn, t.n
  LIMIT (SELECT budget FROM gq)
),
claimed AS (
  UPDATE "chokaq".jobs_hot j
  SET status = 2, attempt_count = j.attempt_count + 1, started_at_utc = statement_timestamp(),
      heartbeat_utc = statement_timestamp(), worker_id = $1, lease_id = $2,
      last_updated_utc = statement_timestamp()
  FROM picked p
  WHERE j.ctid = p.tid AND j.id = p.id AND j.status = 0
  RETURNING j.*
),
turned AS (
  UPDATE "chokaq".queues q
  SET group_cursor = (SELECT w.k FROM walk w ORDER BY w.n DESC LIMIT 1),
      rate_prev_count = CASE WHEN q.rate_limit_max IS NOT NULL AND x.n > 0 THEN CASE WHEN (q.rate_window_start IS NULL OR statement_timestamp() >= q.rate_window_start + q.rate_limit_per_ms * interval '1 millisecond') THEN q.rate_window_count ELSE q.rate_prev_count END ELSE q.rate_prev_count END,
      rate_prev_last = CASE WHEN q.rate_limit_max IS NOT NULL AND x.n > 0 THEN CASE WHEN (q.rate_window_start IS NULL OR statement_timestamp() >= q.rate_window_start + q.rate_limit_per_ms * interval '1 millisecond') THEN q.rate_window_last ELSE q.rate_prev_last END ELSE q.rate_prev_last END,
      rate_window_count = CASE WHEN q.rate_limit_max IS NOT NULL AND x.n > 0 THEN CASE WHEN (q.rate_window_start IS NULL OR statement_timestamp() >= q.rate_window_start + q.rate_limit_per_ms * interval '1 millisecond') THEN x.n ELSE q.rate_window_count + x.n END ELSE q.rate_window_count END,
      rate_window_start = CASE WHEN q.rate_limit_max IS NOT NULL AND x.n > 0 THEN CASE WHEN (q.rate_window_start IS NULL OR statement_timestamp() >= q.rate_window_start + q.rate_limit_per_ms * interval '1 millisecond') THEN statement_timestamp() ELSE q.rate_window_start END ELSE q.rate_window_start END,
      rate_window_last = CASE WHEN q.rate_limit_max IS NOT NULL AND x.n > 0 THEN statement_timestamp() ELSE q.rate_window_last END
  FROM (SELECT count(*)::int AS n FROM claimed) x
  WHERE q.name = $3 AND EXISTS (SELECT 1 FROM walk)
),
spent AS (
  INSERT INTO "chokaq".job_groups AS g (queue, group_key, rate_window_start, rate_window_count,
                                    rate_window_last)
  SELECT $3, x.group_key, statement_timestamp(), x.n, statement_timestamp()
  FROM (SELECT c.group_key, count(*)::int AS n FROM claimed c GROUP BY c.group_key) x
  CROSS JOIN gq
  WHERE gq.group_rate_max IS NOT NULL
  ORDER BY x.group_key
  ON CONFLICT (queue, group_key) DO UPDATE
  SET rate_prev_count = CASE WHEN (g.rate_window_start IS NULL OR statement_timestamp() >= g.rate_window_start + (SELECT gq.group_rate_per_ms * interval '1 millisecond' FROM gq)) THEN g.rate_window_count ELSE g.rate_prev_count END,
      rate_prev_last = CASE WHEN (g.rate_window_start IS NULL OR statement_timestamp() >= g.rate_window_start + (SELECT gq.group_rate_per_ms * interval '1 millisecond' FROM gq)) THEN g.rate_window_last ELSE g.rate_prev_last END,
      rate_window_count = CASE WHEN (g.rate_window_start IS NULL OR statement_timestamp() >= g.rate_window_start + (SELECT gq.group_rate_per_ms * interval '1 millisecond' FROM gq)) THEN excluded.rate_window_count ELSE g.rate_window_count + excluded.rate_window_count END,
      rate_window_start = CASE WHEN (g.rate_window_start IS NULL OR statement_timestamp() >= g.rate_window_start + (SELECT gq.group_rate_per_ms * interval '1 millisecond' FROM gq)) THEN statement_timestamp() ELSE g.rate_window_start END,
      rate_window_last = statement_timestamp()
),
bucket AS (
  INSERT INTO "chokaq".metric_buckets AS b (
    bucket_utc, queue, outcome, failure_reason,
    completed_count, lag_count, lag_sum_ms, lag_max_ms)
  SELECT date_trunc('minute', now()), queue, 4, -1,
         count(*), count(*), sum(lag_ms), max(lag_ms)
  FROM (SELECT c.queue, greatest(0, round(extract(epoch FROM now() - coalesce(c.scheduled_at_utc, c.enqueued_at_utc)) * 1000))::bigint AS lag_ms FROM claimed c) AS o GROUP BY queue
  ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE
  SET completed_count = b.completed_count + EXCLUDED.completed_count,
      lag_count = b.lag_count + EXCLUDED.lag_count,
      lag_sum_ms = b.lag_sum_ms + EXCLUDED.lag_sum_ms,
      lag_max_ms = greatest(b.lag_max_ms, EXCLUDED.lag_max_ms)
)
SELECT f.current, f.grouped, f.rate_limited,
       c.id,
       c.queue,
       c.type,
       c.payload,
       c.tags,
       c.idempotency_key,
       c.priority,
       c.status,
       c.attempt_count,
       c.worker_id,
       c.lease_id,
       floor(extract(epoch FROM c.heartbeat_utc) * 1000)::float8 AS heartbeat_utc,
       floor(extract(epoch FROM c.scheduled_at_utc) * 1000)::float8 AS scheduled_at_utc,
       floor(extract(epoch FROM c.created_at_utc) * 1000)::float8 AS created_at_utc,
       floor(extract(epoch FROM c.enqueued_at_utc) * 1000)::float8 AS enqueued_at_utc,
       floor(extract(epoch FROM c.started_at_utc) * 1000)::float8 AS started_at_utc,
       floor(extract(epoch FROM c.last_updated_utc) * 1000)::float8 AS last_updated_utc,
       c.created_by,
       c.last_modified_by,
       c.last_error,
       floor(extract(epoch FROM c.cancel_requested_utc) * 1000)::float8 AS cancel_requested_utc,
       c.progress,
       c.progress_note,
       c.trace_context,
       c.payload_version,
       c.group_key,
       c.batch_id
FROM fresh f
LEFT JOIN claimed c ON true
