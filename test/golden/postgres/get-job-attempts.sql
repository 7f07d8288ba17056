-- [1/3] query
SELECT * FROM "chokaq".jobs_hot WHERE id = $1

-- [2/3] query

SELECT key, mode, states, window_ms, window_started_utc, window_ends_utc
FROM "chokaq".dedupe_keys WHERE job_id = $1

-- [3/3] query

SELECT * FROM "chokaq".job_attempts WHERE job_id = $1 ORDER BY seq
