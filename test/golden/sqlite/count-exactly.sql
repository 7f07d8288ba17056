-- [1/3] run
BEGIN

-- [2/3] get
SELECT COUNT(*) AS n FROM chokaq_jobs_dlq WHERE queue = @f_queue AND failure_reason = @f_reason

-- [3/3] run
COMMIT
