-- [1/4] run
BEGIN

-- [2/4] get
SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = @ledger

-- [3/4] get
SELECT MAX(version) AS version FROM chokaq_schema_migrations

-- [4/4] run
COMMIT
