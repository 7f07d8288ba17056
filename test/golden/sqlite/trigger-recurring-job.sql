-- [1/6] run
BEGIN IMMEDIATE

-- [2/6] run
UPDATE chokaq_recurring_jobs SET last_job_id = @jobId WHERE name = @name

-- [3/6] run
INSERT INTO chokaq_queues (name, is_paused, is_active, retry_zombies, last_updated_utc)
      SELECT DISTINCT value ->> 'queue', 0, 1, 0, CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) FROM json_each(@rows) WHERE true
      ON CONFLICT (name) DO NOTHING

-- [4/6] run
INSERT INTO chokaq_stats_summary (queue)
      SELECT DISTINCT value ->> 'queue' FROM json_each(@rows) WHERE true
      ON CONFLICT (queue) DO NOTHING

-- [5/6] all
INSERT INTO chokaq_jobs_hot (id, queue, type, payload, tags, idempotency_key, priority, status,
        attempt_count, scheduled_at_utc, created_at_utc, enqueued_at_utc, last_updated_utc, created_by,
        trace_context, payload_version, group_key, batch_id)
      SELECT r.value ->> 'id', r.value ->> 'queue', r.value ->> 'type', r.value ->> 'payload',
        r.value ->> 'tags', r.value ->> 'idempotency_key', r.value ->> 'priority', 0, 0,
        CASE WHEN r.value ->> 'delay_ms' IS NOT NULL THEN CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) + (r.value ->> 'delay_ms')
             ELSE r.value ->> 'run_at' END,
        CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), r.value ->> 'created_by',
        r.value ->> 'trace_context', r.value ->> 'payload_version',
        COALESCE(r.value ->> 'group_key',
          CASE WHEN EXISTS (SELECT 1 FROM chokaq_queues gq
                            WHERE gq.name = r.value ->> 'queue' AND (gq.group_concurrency IS NOT NULL OR gq.group_rate_max IS NOT NULL))
               THEN '' END),
        r.value ->> 'batch_id'
      FROM json_each(@rows) AS r
      WHERE NOT EXISTS (SELECT 1 FROM chokaq_jobs_archive a WHERE a.id = r.value ->> 'id')
        AND NOT EXISTS (SELECT 1 FROM chokaq_jobs_dlq d WHERE d.id = r.value ->> 'id')
      ORDER BY r.key
      ON CONFLICT DO NOTHING
      RETURNING id

-- [6/6] run
COMMIT
