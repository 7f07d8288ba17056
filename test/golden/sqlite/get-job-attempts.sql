-- [1/5] run
BEGIN

-- [2/5] get
SELECT * FROM chokaq_jobs_hot WHERE id = @id

-- [3/5] get
SELECT key, mode, states, window_ms, window_started_utc, window_ends_utc
      FROM chokaq_dedupe_keys WHERE job_id = @id

-- [4/5] all
SELECT * FROM chokaq_job_attempts WHERE job_id = @id ORDER BY seq

-- [5/5] run
COMMIT
