-- [1/3] run
BEGIN

-- [2/3] all
SELECT * FROM chokaq_audit_log
      WHERE (@at IS NULL OR (at_utc, id) < (@at, @id))
        AND (@actor IS NULL OR actor = @actor)
        AND (@action IS NULL OR action = @action)
        AND (@from IS NULL OR at_utc >= @from)
        AND (@to IS NULL OR at_utc < @to)
        AND target = @target
      ORDER BY at_utc DESC, id DESC
      LIMIT @limit

-- [3/3] run
COMMIT
