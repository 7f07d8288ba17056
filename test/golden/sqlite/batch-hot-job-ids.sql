-- [1/3] run
BEGIN

-- [2/3] all
SELECT h.id FROM chokaq_jobs_hot h
      WHERE h.batch_id = @id
        AND NOT EXISTS (SELECT 1 FROM chokaq_batch_callbacks x WHERE x.job_id = h.id)
      LIMIT 10000

-- [3/3] run
COMMIT
