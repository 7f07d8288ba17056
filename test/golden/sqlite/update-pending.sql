-- [1/4] run
BEGIN IMMEDIATE

-- [2/4] all
UPDATE chokaq_jobs_hot
      SET payload = COALESCE(@payload, payload),
          payload_version = COALESCE(@payloadVersion, payload_version),
          tags = CASE WHEN @setTags = 1 THEN @tags ELSE tags END,
          priority = COALESCE(@priority, priority),
          scheduled_at_utc = CASE @schedule WHEN 0 THEN scheduled_at_utc
                                            WHEN 1 THEN NULL
                                            ELSE @runAt END,
          last_updated_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER),
          last_modified_by = COALESCE(@actor, last_modified_by)
      WHERE id = @id AND status = 0
        AND (@queue IS NULL OR (queue = @queue AND type = @type))
      RETURNING id

-- [3/4] run
INSERT INTO chokaq_audit_log (id, at_utc, actor, action, target, rows_affected, details)
      VALUES (@id, CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), @actor, @action, @target, @rows, @details)
      ON CONFLICT (id) DO UPDATE SET
        rows_affected = rows_affected + excluded.rows_affected,
        details = coalesce(excluded.details, details)

-- [4/4] run
COMMIT
