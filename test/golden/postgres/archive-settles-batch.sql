-- [1/1] query

WITH input AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
    AS l(id, worker_id, lease_id, duration_ms)
),
moved AS (
  DELETE FROM "chokaq".jobs_hot j
  USING input l
  WHERE j.id = l.id AND j.worker_id = l.worker_id AND j.lease_id = l.lease_id AND j.status::int IN (1, 2)
  RETURNING j.*, l.duration_ms AS run_ms
),
src AS (
  INSERT INTO "chokaq".jobs_archive (id, queue, type, payload, tags, idempotency_key, priority, attempt_count, worker_id, lease_id, scheduled_at_utc, created_at_utc, enqueued_at_utc, started_at_utc, last_updated_utc, created_by, last_modified_by, last_error, progress, progress_note, trace_context, payload_version, group_key, batch_id, waiting_on, has_dependents, finished_at_utc, duration_ms)
  SELECT m.id, m.queue, m.type, m.payload, m.tags, m.idempotency_key, m.priority, m.attempt_count, m.worker_id, m.lease_id, m.scheduled_at_utc, m.created_at_utc, m.enqueued_at_utc, m.started_at_utc, m.last_updated_utc, m.created_by, m.last_modified_by, m.last_error, m.progress, m.progress_note, m.trace_context, m.payload_version, m.group_key, m.batch_id, m.waiting_on, m.has_dependents, now(), m.run_ms
  FROM moved m
  RETURNING id, lease_id, queue, duration_ms
),
counted AS (
  INSERT INTO "chokaq".stats_summary AS t (queue, succeeded_total, last_activity_utc)
  SELECT queue, count(*), now() FROM src GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET succeeded_total = t.succeeded_total + EXCLUDED.succeeded_total,
      last_activity_utc = EXCLUDED.last_activity_utc
),
bucket AS (
  INSERT INTO "chokaq".metric_buckets AS b (
    bucket_utc, queue, outcome, failure_reason,
    completed_count, duration_count, total_duration_ms, max_duration_ms)
  SELECT date_trunc('minute', now()), queue, 0, -1,
         count(*), count(duration_ms), coalesce(sum(duration_ms), 0), coalesce(max(duration_ms), 0)
  FROM src AS o GROUP BY queue
  ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE
  SET completed_count = b.completed_count + EXCLUDED.completed_count,
      duration_count = b.duration_count + EXCLUDED.duration_count,
      total_duration_ms = b.total_duration_ms + EXCLUDED.total_duration_ms,
      max_duration_ms = greatest(b.max_duration_ms, EXCLUDED.max_duration_ms)
),
batch_delta AS (
  SELECT m.batch_id, count(*) FILTER (WHERE m.ok) AS ok, count(*) FILTER (WHERE NOT m.ok) AS failed
  FROM (SELECT id, batch_id, true AS ok FROM moved) m
  WHERE m.batch_id IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM "chokaq".batch_callbacks x WHERE x.job_id = m.id)
  GROUP BY m.batch_id
),
batch_settled AS (
  UPDATE "chokaq".batches b
  SET succeeded = b.succeeded + d.ok,
      failed = b.failed + d.failed,
      settled_at_utc = CASE WHEN b.succeeded + d.ok + b.failed + d.failed >= b.total
                            THEN now() END,
      fired_now = CASE WHEN b.succeeded + d.ok + b.failed + d.failed >= b.total
                       THEN (1 | CASE WHEN b.failed + d.failed = 0 THEN 2 ELSE 4 END) & ~b.fired ELSE 0 END,
      fired = b.fired | CASE WHEN b.succeeded + d.ok + b.failed + d.failed >= b.total
                             THEN (1 | CASE WHEN b.failed + d.failed = 0 THEN 2 ELSE 4 END) ELSE 0 END
  FROM batch_delta d
  WHERE b.id = d.batch_id
  RETURNING b.id, b.fired_now
),
batch_fired AS (
  INSERT INTO "chokaq".jobs_hot (
    id, queue, type, payload, tags, priority, status, attempt_count, created_at_utc,
    enqueued_at_utc, last_updated_utc, created_by, trace_context, payload_version, group_key,
    batch_id)
  SELECT c.job_id, c.queue, c.type, c.payload, c.tags, c.priority, 0, 0, now(), now(), now(),
         c.created_by, c.trace_context, c.payload_version,
         coalesce(c.group_key, CASE WHEN EXISTS (
           SELECT 1 FROM "chokaq".queues gq WHERE gq.name = c.queue AND (gq.group_concurrency IS NOT NULL OR gq.group_rate_max IS NOT NULL)) THEN '' END),
         c.batch_id
  FROM "chokaq".batch_callbacks c
  JOIN batch_settled t ON t.id = c.batch_id AND (t.fired_now & c.kind) <> 0
),
dep_edges AS (
  UPDATE "chokaq".job_dependencies e
  SET state = CASE WHEN m.ok THEN 1
                   WHEN e.on_failure = 1 THEN 2
                   ELSE 3 END,
      needs_check = NOT m.ok AND e.on_failure = 2,
      settled_at_utc = now()
  FROM (SELECT id, has_dependents, true AS ok FROM moved) m
  WHERE m.has_dependents AND e.depends_on = m.id AND e.state = 0
    AND (m.ok OR e.on_failure <> 0)
  RETURNING e.job_id, e.state
),
dep_counts AS (
  SELECT job_id, count(*) AS n FROM dep_edges
  WHERE state IN (1, 2) GROUP BY job_id
),
dep_locked AS (
  SELECT j.id FROM "chokaq".jobs_hot j JOIN dep_counts d ON d.job_id = j.id
  WHERE j.status = 7
  ORDER BY j.id
  FOR UPDATE OF j
),
dep_released AS (
  UPDATE "chokaq".jobs_hot j
  SET waiting_on = j.waiting_on - d.n,
      status = CASE WHEN j.waiting_on - d.n = 0 THEN 0 ELSE 7 END,
      enqueued_at_utc = CASE WHEN j.waiting_on - d.n = 0 THEN now() ELSE j.enqueued_at_utc END,
      last_updated_utc = now()
  FROM dep_counts d
  WHERE j.id = d.job_id AND j.status = 7 AND j.id IN (SELECT id FROM dep_locked)
)
SELECT id, lease_id FROM src
