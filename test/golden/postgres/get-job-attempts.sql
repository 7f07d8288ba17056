-- [1/2] query
SELECT * FROM "chokaq".jobs_hot WHERE id = $1

-- [2/2] query

SELECT * FROM "chokaq".job_attempts WHERE job_id = $1 ORDER BY seq
