-- [1/1] query

WITH chosen AS MATERIALIZED (SELECT unnest($6::text[]) AS id),
taken AS (
  DELETE FROM "chokaq".jobs_dlq d
  USING chosen c
  WHERE d.id = c.id
  RETURNING d.*
),
revived AS (
  INSERT INTO "chokaq".jobs_hot (
    id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
    worker_id, lease_id, heartbeat_utc, scheduled_at_utc, created_at_utc, enqueued_at_utc,
    started_at_utc, last_updated_utc, created_by, last_modified_by, last_error,
    cancel_requested_utc, progress, trace_context, payload_version, group_key, batch_id,
    waiting_on, has_dependents)
  SELECT t.id, t.queue, t.type, coalesce($1::text, t.payload),
         CASE WHEN $2::boolean THEN $3::text ELSE t.tags END,
         NULL, coalesce($4::int, t.priority), 0, 0,
         NULL, NULL, NULL, NULL, t.created_at_utc, now(),
         NULL, now(), t.created_by, coalesce($5::text, t.last_modified_by),
         coalesce(t.error_details, t.last_error), NULL, NULL, t.trace_context, t.payload_version,
         coalesce(t.group_key, CASE WHEN t.queue = ANY ((SELECT coalesce(array_agg(gq.name::text), '{}'::text[]) FROM "chokaq".queues gq
    WHERE gq.name = ANY ((SELECT array_agg(queue::text) FROM taken)::text[])
      AND (gq.group_concurrency IS NOT NULL OR gq.group_rate_max IS NOT NULL))::text[]) THEN '' END),
         t.batch_id, t.waiting_on, t.has_dependents
  FROM taken t
  RETURNING id, queue
),
new_queues AS (
  INSERT INTO "chokaq".queues (name, last_updated_utc)
  SELECT DISTINCT queue, now() FROM revived
  ON CONFLICT (name) DO NOTHING
),
counted AS (
  INSERT INTO "chokaq".stats_summary AS t (queue, resurrected_total, last_activity_utc)
  SELECT queue, count(*), now() FROM revived GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET resurrected_total = t.resurrected_total + EXCLUDED.resurrected_total,
      last_activity_utc = EXCLUDED.last_activity_utc
),
batch_reopened AS (
  UPDATE "chokaq".batches b
  SET failed = b.failed - d.n, settled_at_utc = NULL, fired_now = 0
  FROM (
    SELECT t.batch_id, count(*) AS n FROM taken t
    WHERE t.batch_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM "chokaq".batch_callbacks x WHERE x.job_id = t.id)
    GROUP BY t.batch_id
  ) d
  WHERE b.id = d.batch_id
)
SELECT id FROM revived
