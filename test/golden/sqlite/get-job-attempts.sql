-- [1/4] run
BEGIN

-- [2/4] get
SELECT * FROM chokaq_jobs_hot WHERE id = @id

-- [3/4] all
SELECT * FROM chokaq_job_attempts WHERE job_id = @id ORDER BY seq

-- [4/4] run
COMMIT
