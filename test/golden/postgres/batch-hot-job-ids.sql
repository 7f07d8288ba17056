-- [1/1] query

SELECT h.id FROM "chokaq".jobs_hot h
WHERE h.batch_id = $1
  AND NOT EXISTS (SELECT 1 FROM "chokaq".batch_callbacks x WHERE x.job_id = h.id)
LIMIT 10000
