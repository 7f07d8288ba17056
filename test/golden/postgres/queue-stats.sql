-- [1/1] query

SELECT q.name AS queue, q.is_paused, q.is_active, q.max_workers,
       p.pending, a.fetched, a.processing, w.waiting,
       coalesce(t.succeeded_total, 0) AS succeeded_total, coalesce(t.failed_total, 0) AS failed_total,
       coalesce(t.cancelled_total, 0) AS cancelled_total, coalesce(t.retried_total, 0) AS retried_total,
       coalesce(t.deferred_total, 0) AS deferred_total,
       coalesce(t.resurrected_total, 0) AS resurrected_total, t.last_activity_utc
FROM "chokaq".queues q
LEFT JOIN "chokaq".stats_summary t ON t.queue = q.name
CROSS JOIN LATERAL (
  SELECT count(*) AS pending FROM "chokaq".jobs_hot j WHERE j.status = 0 AND j.queue = q.name) p
CROSS JOIN LATERAL (
  SELECT count(*) FILTER (WHERE j.status = 1) AS fetched,
         count(*) FILTER (WHERE j.status = 2) AS processing
  FROM "chokaq".jobs_hot j WHERE j.status IN (1, 2) AND j.queue = q.name) a
CROSS JOIN LATERAL (
  SELECT count(*) AS waiting FROM "chokaq".jobs_hot j WHERE j.status = 7 AND j.queue = q.name) w
ORDER BY q.name
