-- [1/3] run
BEGIN IMMEDIATE

-- [2/3] run
UPDATE chokaq_jobs_hot
      SET progress = @progress, progress_note = @note, last_updated_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      WHERE id = @id AND worker_id = @workerId AND lease_id = @leaseId AND status = 2

-- [3/3] run
COMMIT
