-- [1/4] query
START TRANSACTION ISOLATION LEVEL READ COMMITTED

-- [2/4] query

UPDATE "chokaq".recurring_jobs SET last_job_id = $2 WHERE name = $1
RETURNING name

-- [3/4] query

WITH input AS (
  SELECT i.*,
         CASE WHEN i.id_given OR $16::float8 IS NULL THEN '-infinity'::timestamptz
              ELSE now() - $16::float8 * interval '1 millisecond' END AS finished_from,
         CASE WHEN i.id_given OR $16::float8 IS NULL THEN 'infinity'::timestamptz
              ELSE now() + 3600000 * interval '1 millisecond' END AS finished_to
  FROM unnest(
    $1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
    $6::text[], $7::int[], $8::float8[], $9::timestamptz[], $10::text[], $11::text[], $12::int[],
    $13::text[], $14::text[], $15::boolean[]
  ) AS i(id, queue, type, payload, tags, idempotency_key, priority, delay_ms, run_at, created_by,
         trace_context, payload_version, group_key, batch_id, id_given)
),
new_queues AS (
  INSERT INTO "chokaq".queues (name, last_updated_utc)
  SELECT DISTINCT i.queue, now() FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM "chokaq".queues q WHERE q.name = i.queue)
  ON CONFLICT (name) DO NOTHING
),
new_stats AS (
  INSERT INTO "chokaq".stats_summary (queue)
  SELECT DISTINCT i.queue FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM "chokaq".stats_summary t WHERE t.queue = i.queue)
  ON CONFLICT (queue) DO NOTHING
),
inserted AS (
  INSERT INTO "chokaq".jobs_hot (
    id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
    scheduled_at_utc, created_at_utc, enqueued_at_utc, last_updated_utc, created_by, trace_context,
    payload_version, group_key, batch_id)
  SELECT i.id, i.queue, i.type, i.payload, i.tags, i.idempotency_key, i.priority, 0, 0,
         coalesce(i.run_at, now() + i.delay_ms * interval '1 millisecond'), now(), now(), now(), i.created_by,
         i.trace_context, i.payload_version,
         coalesce(i.group_key, CASE WHEN i.queue = ANY ((SELECT coalesce(array_agg(gq.name::text), '{}'::text[]) FROM "chokaq".queues gq
    WHERE gq.name = ANY ($2::text[])
      AND (gq.group_concurrency IS NOT NULL OR gq.group_rate_max IS NOT NULL))::text[]) THEN '' END), i.batch_id
  FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM "chokaq".jobs_archive a
                    WHERE a.id = i.id
                      AND a.finished_at_utc BETWEEN i.finished_from AND i.finished_to)
    AND NOT EXISTS (SELECT 1 FROM "chokaq".jobs_dlq d
                    WHERE d.id = i.id AND d.failed_at_utc BETWEEN i.finished_from AND i.finished_to)
  ORDER BY i.idempotency_key, i.id
  ON CONFLICT DO NOTHING
  RETURNING id, queue
)
SELECT id FROM inserted
UNION ALL
SELECT NULL FROM (SELECT DISTINCT queue FROM inserted) x
CROSS JOIN LATERAL pg_notify('chokaq', x.queue)

-- [4/4] query
COMMIT
