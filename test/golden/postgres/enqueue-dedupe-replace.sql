-- [1/5] query
START TRANSACTION ISOLATION LEVEL READ COMMITTED

-- [2/5] query

INSERT INTO "chokaq".dedupe_keys (key, job_id, mode, states, window_ms, window_started_utc, window_ends_utc)
VALUES ($1, $2, $3::smallint, $4::smallint, $5::bigint, now(), CASE WHEN $3::smallint = 3 THEN NULL ELSE now() + $5::bigint * interval '1 millisecond' END)
ON CONFLICT (key) DO NOTHING
RETURNING job_id

-- [3/5] query

SELECT k.job_id, coalesce(k.window_ends_utc > now(), false) AS in_window, h.status AS hot_status,
       EXISTS (SELECT 1 FROM "chokaq".jobs_archive a
               WHERE a.id = k.job_id AND a.finished_at_utc > now() - $2::float8 * interval '1 millisecond')
         AS finished_within_window
FROM "chokaq".dedupe_keys k
LEFT JOIN "chokaq".jobs_hot h ON h.id = k.job_id
WHERE k.key = $1
FOR UPDATE OF k

-- [4/5] query

WITH replaced AS (
  UPDATE "chokaq".jobs_hot j
  SET payload = $2, payload_version = $3, trace_context = $4,
      scheduled_at_utc = now() + $5::float8 * interval '1 millisecond', last_updated_utc = now()
  WHERE j.id = $1 AND j.status = 0
  RETURNING j.id
),
moved AS (
  UPDATE "chokaq".dedupe_keys k
  SET window_started_utc = now(), window_ends_utc = now() + $5::float8 * interval '1 millisecond'
  WHERE k.key = $6 AND EXISTS (SELECT 1 FROM replaced)
)
SELECT id FROM replaced

-- [5/5] query
COMMIT
