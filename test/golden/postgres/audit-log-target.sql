-- [1/1] query

SELECT a.* FROM "chokaq".audit_log a
WHERE ($1::timestamptz IS NULL OR (a.at_utc, a.id COLLATE "C") < ($1::timestamptz, $2::text COLLATE "C"))
  AND ($3::text IS NULL OR a.actor = $3)
  AND ($4::text IS NULL OR a.action = $4)
  AND ($5::timestamptz IS NULL OR a.at_utc >= $5)
  AND ($6::timestamptz IS NULL OR a.at_utc < $6)
  AND left(a.target, 255) = left($8::text, 255) AND a.target = $8::text
ORDER BY a.at_utc DESC, a.id COLLATE "C" DESC
LIMIT $7
