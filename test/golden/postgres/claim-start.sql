-- [1/1] query

WITH relaxed AS MATERIALIZED (
  SELECT set_config('synchronous_commit', 'off', true) AS setting
),
handled (queue, type, min_version, max_version) AS (
  SELECT h.queue, NULL::text, NULL::int, NULL::int FROM unnest($3::text[]) AS h(queue)
  UNION ALL
  SELECT p.queue, p.type, p.min_version, p.max_version
  FROM unnest($4::text[], $5::text[], $8::int[], $9::int[]) AS p(queue, type, min_version, max_version)
),
wanted AS (
  SELECT queue,
         CASE WHEN bool_or(type IS NULL) THEN NULL ELSE array_agg(type) END AS types,
         array_agg(min_version) AS min_versions,
         array_agg(max_version) AS max_versions
  FROM handled CROSS JOIN relaxed
  GROUP BY queue
),
runnable AS MATERIALIZED (
  SELECT q.name, w.types, w.min_versions, w.max_versions, $6::int AS budget
  FROM wanted w
  JOIN "chokaq".queues q ON q.name = w.queue
  WHERE NOT q.is_paused AND q.is_active AND q.max_workers IS NULL AND q.rate_limit_max IS NULL
    AND q.group_concurrency IS NULL AND q.group_rate_max IS NULL
),
shares AS MATERIALIZED (
  SELECT b.queue, count(*)::int AS share
  FROM (
    SELECT r.name AS queue
    FROM runnable r
    CROSS JOIN LATERAL (
      SELECT j.priority, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due, j.id
      FROM "chokaq".jobs_hot j
      WHERE j.status = 0
        AND j.queue = r.name
        AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
        AND (r.types IS NULL OR EXISTS (
          SELECT 1 FROM unnest(r.types, r.min_versions, r.max_versions) AS t(type, lo, hi)
          WHERE t.type = j.type AND j.payload_version BETWEEN t.lo AND t.hi))
      ORDER BY j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"
      LIMIT r.budget
    ) c
    ORDER BY c.priority DESC, c.due, c.id COLLATE "C"
    LIMIT $6
  ) b
  GROUP BY b.queue
),
picked AS MATERIALIZED (
  SELECT c.id, c.tid,
         row_number() OVER (ORDER BY c.priority DESC, c.due, c.id COLLATE "C") AS rn
  FROM runnable r
  CROSS JOIN LATERAL (
    SELECT j.id, j.ctid AS tid, j.priority, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due
    FROM "chokaq".jobs_hot j
    WHERE j.status = 0
        AND j.queue = r.name
        AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
        AND (r.types IS NULL OR EXISTS (
          SELECT 1 FROM unnest(r.types, r.min_versions, r.max_versions) AS t(type, lo, hi)
          WHERE t.type = j.type AND j.payload_version BETWEEN t.lo AND t.hi))
    ORDER BY j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"
    LIMIT CASE WHEN (SELECT count(*) FROM runnable) = 1 THEN r.budget
               ELSE coalesce((SELECT x.share FROM shares x WHERE x.queue = r.name), 0) END
    FOR UPDATE SKIP LOCKED
  ) c
  ORDER BY c.priority DESC, c.due, c.id COLLATE "C"
  LIMIT $6
),
claimed AS (
  UPDATE "chokaq".jobs_hot j
  SET status = CASE WHEN p.rn <= $7 THEN 2 ELSE 1 END,
      attempt_count = CASE WHEN p.rn <= $7 THEN j.attempt_count + 1 ELSE j.attempt_count END,
      started_at_utc = CASE WHEN p.rn <= $7 THEN statement_timestamp() ELSE j.started_at_utc END,
      heartbeat_utc = CASE WHEN p.rn <= $7 THEN statement_timestamp() ELSE j.heartbeat_utc END,
      worker_id = $1, lease_id = $2, last_updated_utc = statement_timestamp()
  FROM picked p
  WHERE j.ctid = p.tid AND j.id = p.id AND j.status = 0
  RETURNING j.*
),
bucket AS (
  INSERT INTO "chokaq".metric_buckets AS b (
    bucket_utc, queue, outcome, failure_reason,
    completed_count, lag_count, lag_sum_ms, lag_max_ms)
  SELECT date_trunc('minute', now()), queue, 4, -1,
         count(*), count(*), sum(lag_ms), max(lag_ms)
  FROM (SELECT c.queue, greatest(0, round(extract(epoch FROM now() - coalesce(c.scheduled_at_utc, c.enqueued_at_utc)) * 1000))::bigint AS lag_ms FROM claimed c WHERE c.status = 2) AS o GROUP BY queue
  ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE
  SET completed_count = b.completed_count + EXCLUDED.completed_count,
      lag_count = b.lag_count + EXCLUDED.lag_count,
      lag_sum_ms = b.lag_sum_ms + EXCLUDED.lag_sum_ms,
      lag_max_ms = greatest(b.lag_max_ms, EXCLUDED.lag_max_ms)
)
SELECT c.id,
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
FROM claimed c
