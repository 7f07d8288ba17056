-- [1/1] query

SELECT b.id, b.created_at_utc, b.created_by, b.total, b.succeeded, b.failed, b.fired,
       b.settled_at_utc, c.kind, c.job_id, c.queue, c.type
FROM "chokaq".batches b
LEFT JOIN "chokaq".batch_callbacks c ON c.batch_id = b.id
WHERE b.id = $1
ORDER BY c.kind
