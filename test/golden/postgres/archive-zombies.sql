-- [1/1] query

WITH rule (queue, type, retry) AS (
  SELECT * FROM unnest($4::text[], $5::text[], $6::boolean[])
),
candidates AS MATERIALIZED (
  SELECT j.id, j.queue, j.type, j.tags, j.idempotency_key, j.priority, j.status, j.attempt_count, j.worker_id, j.lease_id, j.heartbeat_utc, j.scheduled_at_utc, j.created_at_utc, j.enqueued_at_utc, j.started_at_utc, j.last_updated_utc, j.created_by, j.last_modified_by, j.last_error, j.cancel_requested_utc, j.progress, j.progress_note, j.trace_context, j.payload_version, j.group_key, j.batch_id, j.waiting_on, j.has_dependents,
         coalesce(q.retry_zombies, false) OR coalesce(e.retry, w.retry, false) AS retry
  FROM "chokaq".jobs_hot j
  LEFT JOIN "chokaq".queues q ON q.name = j.queue
  LEFT JOIN rule e ON e.queue = j.queue AND e.type = j.type
  LEFT JOIN rule w ON w.queue = j.queue AND w.type IS NULL
  WHERE j.status = 2
    AND j.heartbeat_utc < now() - (
          SELECT least($1::float8, min(zombie_timeout_seconds) * 1000.0) FROM "chokaq".queues) * interval '1 millisecond'
    AND j.heartbeat_utc < now() - coalesce(q.zombie_timeout_seconds * 1000.0, $1::float8) * interval '1 millisecond'
  ORDER BY j.heartbeat_utc
  LIMIT $2
  FOR UPDATE OF j SKIP LOCKED
),
moved AS (
  DELETE FROM "chokaq".jobs_hot j
  USING candidates c
  WHERE j.id = c.id AND NOT c.retry AND j.status = 2
  RETURNING j.*
),

src AS (
  INSERT INTO "chokaq".jobs_dlq (id, queue, type, payload, tags, idempotency_key, priority, attempt_count, worker_id, lease_id, heartbeat_utc, scheduled_at_utc, created_at_utc, enqueued_at_utc, started_at_utc, last_updated_utc, created_by, last_modified_by, last_error, cancel_requested_utc, progress, progress_note, trace_context, payload_version, group_key, batch_id, waiting_on, has_dependents, status, failure_reason, error_details, failed_at_utc)
  SELECT m.id, m.queue, m.type, m.payload, m.tags, m.idempotency_key, m.priority, m.attempt_count, m.worker_id, m.lease_id, m.heartbeat_utc, m.scheduled_at_utc, m.created_at_utc, m.enqueued_at_utc, m.started_at_utc, m.last_updated_utc, m.created_by, coalesce(NULL::text, m.last_modified_by), m.last_error, m.cancel_requested_utc, m.progress, m.progress_note, m.trace_context, m.payload_version, m.group_key, m.batch_id, m.waiting_on, m.has_dependents,
         6, 2, $3::text, now()
  FROM moved m
  RETURNING id, queue
),
retried AS (
  UPDATE "chokaq".jobs_hot j
  SET status = 0, worker_id = NULL, lease_id = NULL, heartbeat_utc = NULL, held_since_utc = NULL,
      last_error = $3::text, last_updated_utc = now()
  FROM candidates c
  WHERE j.id = c.id AND c.retry AND j.status = 2
  RETURNING j.id, j.queue
),
attempt AS (
  INSERT INTO "chokaq".job_attempts (
    job_id, seq, attempt, worker_id, lease_id, started_at_utc, finished_at_utc, outcome, error,
    duration_ms)
  SELECT a.id,
         coalesce((SELECT max(x.seq) FROM "chokaq".job_attempts x WHERE x.job_id = a.id), 0) + 1,
         a.attempt_count, a.worker_id, a.lease_id, a.started_at_utc, now(), a.outcome,
         left(a.error, 4000),
         CASE WHEN a.started_at_utc IS NOT NULL
              THEN greatest(0, round(extract(epoch FROM now() - a.started_at_utc) * 1000))::bigint
         END
  FROM (SELECT c.id, c.attempt_count, c.worker_id, c.lease_id, c.started_at_utc, 'zombie' AS outcome, $3::text AS error FROM candidates c WHERE c.id IN (SELECT id FROM src UNION ALL SELECT id FROM retried)) AS a
),
counted AS (
  INSERT INTO "chokaq".stats_summary AS t (queue, failed_total, retried_total, last_activity_utc)
  SELECT queue, count(*) FILTER (WHERE kind = 'dlq'), count(*) FILTER (WHERE kind = 'retried'), now()
  FROM (SELECT 'dlq' AS kind, queue FROM src UNION ALL SELECT 'retried', queue FROM retried) x
  GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET failed_total = t.failed_total + EXCLUDED.failed_total,
      retried_total = t.retried_total + EXCLUDED.retried_total,
      last_activity_utc = EXCLUDED.last_activity_utc
),
bucket AS (
  INSERT INTO "chokaq".metric_buckets AS b (
    bucket_utc, queue, outcome, failure_reason,
    completed_count, duration_count, total_duration_ms, max_duration_ms)
  SELECT date_trunc('minute', now()), queue, 1, 2,
         count(*), count(duration_ms), coalesce(sum(duration_ms), 0), coalesce(max(duration_ms), 0)
  FROM (SELECT queue, NULL::bigint AS duration_ms FROM src) AS o GROUP BY queue
  ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE
  SET completed_count = b.completed_count + EXCLUDED.completed_count,
      duration_count = b.duration_count + EXCLUDED.duration_count,
      total_duration_ms = b.total_duration_ms + EXCLUDED.total_duration_ms,
      max_duration_ms = greatest(b.max_duration_ms, EXCLUDED.max_duration_ms)
),
retried_bucket AS (
  INSERT INTO "chokaq".metric_buckets AS b (
    bucket_utc, queue, outcome, failure_reason,
    completed_count, duration_count, total_duration_ms, max_duration_ms)
  SELECT date_trunc('minute', now()), queue, 3, 2,
         count(*), count(duration_ms), coalesce(sum(duration_ms), 0), coalesce(max(duration_ms), 0)
  FROM (SELECT queue, NULL::bigint AS duration_ms FROM retried) AS o GROUP BY queue
  ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE
  SET completed_count = b.completed_count + EXCLUDED.completed_count,
      duration_count = b.duration_count + EXCLUDED.duration_count,
      total_duration_ms = b.total_duration_ms + EXCLUDED.total_duration_ms,
      max_duration_ms = greatest(b.max_duration_ms, EXCLUDED.max_duration_ms)
),
batch_delta AS (
  SELECT m.batch_id, count(*) FILTER (WHERE m.ok) AS ok, count(*) FILTER (WHERE NOT m.ok) AS failed
  FROM (SELECT id, batch_id, false AS ok FROM moved) m
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
  FROM (SELECT id, has_dependents, false AS ok FROM moved) m
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
SELECT x.kind, c.id, c.queue, c.type, c.tags, c.idempotency_key, c.priority, c.status, c.attempt_count, c.worker_id, c.lease_id, c.heartbeat_utc, c.scheduled_at_utc, c.created_at_utc, c.enqueued_at_utc, c.started_at_utc, c.last_updated_utc, c.created_by, c.last_modified_by, c.last_error, c.cancel_requested_utc, c.progress, c.progress_note, c.trace_context, c.payload_version, c.group_key, c.batch_id, c.waiting_on, c.has_dependents
FROM (SELECT 'dlq' AS kind, id FROM src UNION ALL SELECT 'retried', id FROM retried) x
JOIN candidates c ON c.id = x.id
