-- [1/4] run
BEGIN IMMEDIATE

-- [2/4] all
DELETE FROM chokaq_jobs_dlq WHERE id IN (SELECT value FROM json_each(@ids)) RETURNING id, has_dependents, waiting_on

-- [3/4] run
DELETE FROM chokaq_job_attempts WHERE job_id IN (SELECT value FROM json_each(@ids))

-- [4/4] run
COMMIT
