-- [1/1] query

SELECT q.name AS queue, q.max_workers,
       p.due_pending, p.lag_sum_ms, p.max_lag_ms, h.held_pending, h.held_lag_sum_ms,
       h.held_max_lag_ms, h.held_until_utc, a.active,
       l.lag_count, l.lag_sum_ms AS start_lag_sum_ms, l.lag_max_ms
FROM "chokaq".queues q
CROSS JOIN LATERAL (
  SELECT count(*) AS due_pending,
         coalesce(sum(date_part('epoch', now() - coalesce(j.scheduled_at_utc, j.enqueued_at_utc))) * 1000, 0) AS lag_sum_ms,
         coalesce(date_part('epoch', now() - min(coalesce(j.scheduled_at_utc, j.enqueued_at_utc))) * 1000, 0) AS max_lag_ms
  FROM "chokaq".jobs_hot j
  WHERE j.status = 0 AND j.queue = q.name
    AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()) p
CROSS JOIN LATERAL (
  SELECT count(*) AS held_pending,
         coalesce(sum(date_part('epoch', now() - j.held_since_utc)) * 1000, 0) AS held_lag_sum_ms,
         coalesce(date_part('epoch', now() - min(j.held_since_utc)) * 1000, 0) AS held_max_lag_ms,
         min(coalesce(j.scheduled_at_utc, j.enqueued_at_utc)) AS held_until_utc
  FROM "chokaq".jobs_hot j
  WHERE j.status = 0 AND j.queue = q.name AND j.held_since_utc IS NOT NULL
    AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) > now()) h
CROSS JOIN LATERAL (
  SELECT count(*) AS active FROM "chokaq".jobs_hot j WHERE j.status IN (1, 2) AND j.queue = q.name) a
CROSS JOIN LATERAL (
  SELECT coalesce(sum(b.lag_count), 0) AS lag_count, coalesce(sum(b.lag_sum_ms), 0) AS lag_sum_ms,
         coalesce(max(b.lag_max_ms), 0) AS lag_max_ms
  FROM "chokaq".metric_buckets b
  WHERE b.queue = q.name AND b.outcome = 4
    AND b.bucket_utc >= date_trunc('minute', now()) - interval '5 minutes') l
ORDER BY q.name
