-- [1/1] query

WITH started AS (
  UPDATE "chokaq".jobs_hot j
  SET status = 2, attempt_count = j.attempt_count + 1, started_at_utc = now(),
      heartbeat_utc = now(), last_updated_utc = now()
  FROM unnest($1::text[], $2::text[], $3::text[]) AS l(id, worker_id, lease_id)
  WHERE j.id = l.id AND j.worker_id = l.worker_id AND j.lease_id = l.lease_id AND j.status::int = 1
  RETURNING j.id, j.queue, greatest(0, round(extract(epoch FROM now() - coalesce(j.scheduled_at_utc, j.enqueued_at_utc)) * 1000))::bigint AS lag_ms
),
bucket AS (
  INSERT INTO "chokaq".metric_buckets AS b (
    bucket_utc, queue, outcome, failure_reason,
    completed_count, lag_count, lag_sum_ms, lag_max_ms)
  SELECT date_trunc('minute', now()), queue, 4, -1,
         count(*), count(*), sum(lag_ms), max(lag_ms)
  FROM started AS o GROUP BY queue
  ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE
  SET completed_count = b.completed_count + EXCLUDED.completed_count,
      lag_count = b.lag_count + EXCLUDED.lag_count,
      lag_sum_ms = b.lag_sum_ms + EXCLUDED.lag_sum_ms,
      lag_max_ms = greatest(b.lag_max_ms, EXCLUDED.lag_max_ms)
)
SELECT id FROM started
UNION ALL
SELECT j.id FROM "chokaq".jobs_hot j, unnest($1::text[], $2::text[], $3::text[]) AS l(id, worker_id, lease_id)
WHERE j.id = l.id AND j.worker_id = l.worker_id AND j.lease_id = l.lease_id AND j.status::int = 2
