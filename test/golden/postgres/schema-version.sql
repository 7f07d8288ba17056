-- [1/2] query
SELECT to_regclass($1) IS NOT NULL AS exists

-- [2/2] query

SELECT max(version) AS version FROM "chokaq".schema_migrations
