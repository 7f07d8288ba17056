-- [1/5] run
BEGIN IMMEDIATE

-- [2/5] all
DELETE FROM chokaq_jobs_dlq WHERE id IN (SELECT id FROM chokaq_jobs_dlq WHERE queue = @f_queue ORDER BY failed_at_utc, id LIMIT @limit) RETURNING *

-- [3/5] run
INSERT INTO chokaq_jobs_hot (id, queue, type, payload, tags, idempotency_key, priority,
        status, attempt_count, scheduled_at_utc, created_at_utc, enqueued_at_utc, last_updated_utc,
        created_by, last_modified_by, last_error, trace_context, payload_version, group_key,
        batch_id, waiting_on, has_dependents)
      SELECT m.value ->> 'id', m.value ->> 'queue', m.value ->> 'type',
        COALESCE(@payload, m.value ->> 'payload'),
        CASE WHEN @setTags = 1 THEN @tags ELSE m.value ->> 'tags' END,
        NULL, COALESCE(@priority, m.value ->> 'priority'), 0, 0, NULL,
        m.value ->> 'created_at_utc', CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER),
        m.value ->> 'created_by', COALESCE(@actor, m.value ->> 'last_modified_by'),
        COALESCE(m.value ->> 'error_details', m.value ->> 'last_error'),
        m.value ->> 'trace_context', m.value ->> 'payload_version',
        COALESCE(m.value ->> 'group_key',
          CASE WHEN EXISTS (SELECT 1 FROM chokaq_queues gq
                            WHERE gq.name = m.value ->> 'queue' AND (gq.group_concurrency IS NOT NULL OR gq.group_rate_max IS NOT NULL))
               THEN '' END),
        m.value ->> 'batch_id', m.value ->> 'waiting_on', m.value ->> 'has_dependents'
      FROM json_each(@moved) AS m ORDER BY m.key

-- [4/5] run
INSERT INTO chokaq_stats_summary (queue, succeeded_total, failed_total, cancelled_total,
        retried_total, deferred_total, resurrected_total, last_activity_utc)
      SELECT value ->> 'queue', value ->> 'succeeded', value ->> 'failed', value ->> 'cancelled',
        value ->> 'retried', value ->> 'deferred', value ->> 'resurrected', CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)
      FROM json_each(@deltas) WHERE true
      ON CONFLICT (queue) DO UPDATE SET
        succeeded_total = succeeded_total + excluded.succeeded_total,
        failed_total = failed_total + excluded.failed_total,
        cancelled_total = cancelled_total + excluded.cancelled_total,
        retried_total = retried_total + excluded.retried_total,
        deferred_total = deferred_total + excluded.deferred_total,
        resurrected_total = resurrected_total + excluded.resurrected_total,
        last_activity_utc = excluded.last_activity_utc

-- [5/5] run
COMMIT
