-- [1/1] query

WITH chosen AS MATERIALIZED (SELECT f.id FROM "chokaq".jobs_dlq f WHERE f.id = ANY ($1::text[]) FOR UPDATE SKIP LOCKED),
gone AS (DELETE FROM "chokaq".jobs_dlq d USING chosen c WHERE d.id = c.id
         RETURNING d.id, d.has_dependents, d.waiting_on),
history AS (
  DELETE FROM "chokaq".job_attempts t USING gone g WHERE t.job_id = g.id
),
dep_removed AS (
  UPDATE "chokaq".job_dependencies e
  SET state = 4, needs_check = true, settled_at_utc = now()
  FROM gone g
  WHERE g.has_dependents AND e.depends_on = g.id AND e.state = 0
    AND NOT EXISTS (SELECT 1 FROM gone x WHERE x.id = e.job_id AND x.waiting_on IS NOT NULL)
),
dep_dropped AS (
  DELETE FROM "chokaq".job_dependencies e
  USING gone g
  WHERE g.waiting_on IS NOT NULL AND e.job_id = g.id
)
SELECT id FROM gone
