-- [1/4] query
START TRANSACTION ISOLATION LEVEL READ COMMITTED

-- [2/4] query

WITH changed AS (
  UPDATE "chokaq".jobs_hot j
  SET payload = coalesce($2::text, j.payload),
      payload_version = coalesce($3::int, j.payload_version),
      tags = CASE WHEN $4::boolean THEN $5::text ELSE j.tags END,
      priority = coalesce($6::int, j.priority),
      scheduled_at_utc = CASE $7::int WHEN 0 THEN j.scheduled_at_utc
                                      WHEN 1 THEN NULL
                                      ELSE $8::timestamptz END,
      last_updated_utc = now(),
      last_modified_by = coalesce($9::text, j.last_modified_by)
  WHERE j.id = $1 AND j.status = 0
    AND ($10::text IS NULL OR (j.queue = $10::text AND j.type = $11::text))
  RETURNING j.id, j.queue, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now() AS due
)
SELECT id FROM changed
UNION ALL
SELECT NULL FROM changed c
CROSS JOIN LATERAL pg_notify('chokaq', c.queue)
WHERE c.due

-- [3/4] query

INSERT INTO "chokaq".audit_log AS a (id, at_utc, actor, action, target, rows_affected, details)
VALUES ($1, now(), $2, $3, $4, $5, $6)
ON CONFLICT (id) DO UPDATE
SET rows_affected = a.rows_affected + EXCLUDED.rows_affected,
    details = coalesce(EXCLUDED.details, a.details)

-- [4/4] query
COMMIT
