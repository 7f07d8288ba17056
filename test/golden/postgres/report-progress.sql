-- [1/1] query

UPDATE "chokaq".jobs_hot
SET progress = $4, progress_note = $5::text, last_updated_utc = now()
WHERE id = $1 AND worker_id = $2 AND lease_id = $3 AND "chokaq".jobs_hot.status::int = 2
RETURNING id
