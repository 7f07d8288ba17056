-- [1/3] run
BEGIN

-- [2/3] all
SELECT b.id, b.created_at_utc, b.created_by, b.total, b.succeeded, b.failed, b.fired,
        b.settled_at_utc, c.kind, c.job_id, c.queue, c.type
      FROM chokaq_batches b
      LEFT JOIN chokaq_batch_callbacks c ON c.batch_id = b.id
      WHERE b.id = @id
      ORDER BY c.kind

-- [3/3] run
COMMIT
