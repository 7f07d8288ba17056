-- [1/1] query

SELECT a.id, a.result FROM "chokaq".jobs_archive a
WHERE a.batch_id = $1 AND a.id COLLATE "C" > $2::text
  AND NOT EXISTS (SELECT 1 FROM "chokaq".batch_callbacks x WHERE x.job_id = a.id)
ORDER BY a.id COLLATE "C"
LIMIT $3
