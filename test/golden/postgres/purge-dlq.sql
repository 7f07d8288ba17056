-- [1/1] query

WITH chosen AS MATERIALIZED (SELECT f.id FROM "chokaq".jobs_dlq f WHERE f.id = ANY ($1::text[]) FOR UPDATE SKIP LOCKED),
gone AS (DELETE FROM "chokaq".jobs_dlq d USING chosen c WHERE d.id = c.id RETURNING d.id),
history AS (
  DELETE FROM "chokaq".job_attempts t USING gone g WHERE t.job_id = g.id
)
SELECT id FROM gone
