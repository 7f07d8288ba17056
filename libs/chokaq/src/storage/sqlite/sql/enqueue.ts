/** The producer's statements, run in one `BEGIN IMMEDIATE` transaction per chunk. */
import { SQLITE_NOW_MS, STORED_GROUP, SqliteTables } from './fragments';

/**
 * The insert of {@link enqueueStatements}' `enqueue` (`waiting`: the rows inserted Waiting, status
 * 7, instead of Pending).
 */
function enqueueInsert(t: SqliteTables, waiting: boolean): string {
  const { hot, archive, dlq, queues } = t;
  return `INSERT INTO ${hot} (id, queue, type, payload, tags, idempotency_key, priority, status,
        attempt_count, scheduled_at_utc, created_at_utc, enqueued_at_utc, last_updated_utc, created_by,
        trace_context, payload_version, group_key, batch_id)
      SELECT r.value ->> 'id', r.value ->> 'queue', r.value ->> 'type', r.value ->> 'payload',
        r.value ->> 'tags', r.value ->> 'idempotency_key', r.value ->> 'priority', ${waiting ? 7 : 0}, 0,
        CASE WHEN r.value ->> 'delay_ms' IS NOT NULL THEN ${SQLITE_NOW_MS} + (r.value ->> 'delay_ms')
             ELSE r.value ->> 'run_at' END,
        ${SQLITE_NOW_MS}, ${SQLITE_NOW_MS}, ${SQLITE_NOW_MS}, r.value ->> 'created_by',
        r.value ->> 'trace_context', r.value ->> 'payload_version',
        ${STORED_GROUP(queues, "r.value ->> 'group_key'", "r.value ->> 'queue'")},
        r.value ->> 'batch_id'
      FROM json_each(@rows) AS r
      WHERE NOT EXISTS (SELECT 1 FROM ${archive} a WHERE a.id = r.value ->> 'id')
        AND NOT EXISTS (SELECT 1 FROM ${dlq} d WHERE d.id = r.value ->> 'id')
      ORDER BY r.key
      ON CONFLICT DO NOTHING
      RETURNING id`;
}

/** The producer's statements: queues and stats rows, the insert, and the lookups of what it skipped. */
export function enqueueStatements(t: SqliteTables) {
  const { hot, archive, dlq, stats, queues } = t;
  return {
    /**
     * enqueue, step 1: ensures a `Queues` row per queue of `@rows`; existing controls are left alone.
     */
    enqueueQueues: `INSERT INTO ${queues} (name, is_paused, is_active, retry_zombies, last_updated_utc)
      SELECT DISTINCT value ->> 'queue', 0, 1, 0, ${SQLITE_NOW_MS} FROM json_each(@rows) WHERE true
      ON CONFLICT (name) DO NOTHING`,

    /** enqueue, step 2: ensures a `StatsSummary` row per queue of `@rows`. */
    enqueueStats: `INSERT INTO ${stats} (queue)
      SELECT DISTINCT value ->> 'queue' FROM json_each(@rows) WHERE true
      ON CONFLICT (queue) DO NOTHING`,

    /**
     * enqueue, step 3: inserts Pending rows from `@rows` in input order. Runs under BEGIN IMMEDIATE
     * (or inside the caller's transaction). `ON CONFLICT DO NOTHING` (no target) skips a row whose
     * id exists or whose idempotency key an active row holds (unique partial index), so a retried
     * insert never duplicates and one key yields one row; the NOT EXISTS guards keep a retried
     * insert from re-creating a job that already finished (archive) or failed (DLQ). A job without
     * a group enqueued into a queue with group limits gets the shared group `''`
     * ({@link STORED_GROUP}). A job of a batch carries its batch's id. Returns the inserted ids.
     */
    enqueue: enqueueInsert(t, false),

    /**
     * enqueue of jobs that wait on others (`dependsOn`): as {@link enqueue}, the rows inserted
     * Waiting (status 7); the same transaction then writes their edges and counts
     * (`insertDependencies`, `insertDependenciesWaits`), which make the ones with nothing to wait
     * for Pending.
     */
    enqueueWaiting: enqueueInsert(t, true),

    /**
     * enqueue, for an item that was not inserted: whether its id is in any pillar (three
     * primary-key lookups).
     */
    enqueueIdExists: `SELECT EXISTS (SELECT 1 FROM ${hot} WHERE id = @id)
      OR EXISTS (SELECT 1 FROM ${archive} WHERE id = @id)
      OR EXISTS (SELECT 1 FROM ${dlq} WHERE id = @id) AS found`,

    /**
     * enqueue, for an item that was not inserted and whose id is nowhere: the active job holding
     * its idempotency key (served by the unique partial index).
     */
    enqueueKeyHolder: `SELECT id FROM ${hot} WHERE idempotency_key = @key`,
  };
}
