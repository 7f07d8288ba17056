-- [1/3] run
BEGIN

-- [2/3] all
SELECT a.id, a.result FROM chokaq_jobs_archive a
      WHERE a.batch_id = @id AND a.id > @after
        AND NOT EXISTS (SELECT 1 FROM chokaq_batch_callbacks x WHERE x.job_id = a.id)
      ORDER BY a.id
      LIMIT @limit

-- [3/3] run
COMMIT
