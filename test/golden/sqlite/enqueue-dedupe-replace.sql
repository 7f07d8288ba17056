-- [1/6] run
BEGIN IMMEDIATE

-- [2/6] get
INSERT INTO chokaq_dedupe_keys (key, job_id, mode, states, window_ms, window_started_utc,
        window_ends_utc)
      VALUES (@key, @job_id, @mode, @states, @window_ms, CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), CASE WHEN @mode = 3 THEN NULL ELSE CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) + @window_ms END)
      ON CONFLICT (key) DO NOTHING
      RETURNING job_id

-- [3/6] get
SELECT k.job_id, COALESCE(k.window_ends_utc > CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), 0) AS in_window,
        h.status AS hot_status,
        EXISTS (SELECT 1 FROM chokaq_jobs_archive a
                WHERE a.id = k.job_id AND a.finished_at_utc > CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - @window_ms)
          AS finished_within_window
      FROM chokaq_dedupe_keys k LEFT JOIN chokaq_jobs_hot h ON h.id = k.job_id
      WHERE k.key = @key

-- [4/6] get
UPDATE chokaq_jobs_hot
      SET payload = @payload, payload_version = @payload_version, trace_context = @trace_context,
          scheduled_at_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) + @window_ms, last_updated_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      WHERE id = @holder AND status = 0
      RETURNING id

-- [5/6] run
UPDATE chokaq_dedupe_keys
      SET window_started_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), window_ends_utc = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) + @window_ms
      WHERE key = @key

-- [6/6] run
COMMIT
