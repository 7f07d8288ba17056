-- [1/1] query

WITH retried AS (
  UPDATE "chokaq".jobs_hot j
  SET status = 0, worker_id = NULL, lease_id = NULL, heartbeat_utc = NULL,
      scheduled_at_utc = now() + $4::float8 * interval '1 millisecond', held_since_utc = NULL, last_error = $5,
      last_updated_utc = now()
  WHERE j.id = $1 AND j.worker_id = $2 AND j.lease_id = $3 AND j.status::int = 2
  RETURNING j.id, j.queue, j.attempt_count, j.started_at_utc
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
  FROM (SELECT r.id, r.attempt_count, $2::varchar AS worker_id, $3::varchar AS lease_id, r.started_at_utc, 'retried' AS outcome, $5::text AS error FROM retried r) AS a
),
counted AS (
  INSERT INTO "chokaq".stats_summary AS t (queue, retried_total, last_activity_utc)
  SELECT queue, count(*), now() FROM retried GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET retried_total = t.retried_total + EXCLUDED.retried_total,
      last_activity_utc = EXCLUDED.last_activity_utc
),
bucket AS (
  INSERT INTO "chokaq".metric_buckets AS b (
    bucket_utc, queue, outcome, failure_reason,
    completed_count, duration_count, total_duration_ms, max_duration_ms)
  SELECT date_trunc('minute', now()), queue, 3, -1,
         count(*), count(duration_ms), coalesce(sum(duration_ms), 0), coalesce(max(duration_ms), 0)
  FROM (SELECT queue, NULL::bigint AS duration_ms FROM retried) AS o GROUP BY queue
  ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE
  SET completed_count = b.completed_count + EXCLUDED.completed_count,
      duration_count = b.duration_count + EXCLUDED.duration_count,
      total_duration_ms = b.total_duration_ms + EXCLUDED.total_duration_ms,
      max_duration_ms = greatest(b.max_duration_ms, EXCLUDED.max_duration_ms)
)
SELECT count(*)::int AS n FROM retried
