-- [1/1] query

UPDATE "chokaq".jobs_hot j
SET progress = $4, progress_note = $5::text, last_updated_utc = now()
WHERE j.id = $1 AND j.worker_id = $2 AND j.lease_id = $3 AND j.status::int = 2
RETURNING j.id
