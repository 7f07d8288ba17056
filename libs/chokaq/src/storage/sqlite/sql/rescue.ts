/** The rescue loop's statements: abandoned Fetched rows back to Pending, and the zombie sweep. */
import { hotColumnsExcept } from '../../shared/columns';
import { IDS, SQLITE_NOW_MS, SqliteTables } from './fragments';

/**
 * archiveZombies: whether the expired row `h` (its queue row `q` LEFT JOINed) returns to Pending:
 * the queue's RetryZombies, or the rescuing process's handler rules in `@rules` (a JSON array of
 * `{queue, type, retry}`, type null for a queue-wide handler, retry 1/0, one rule per slot),
 * resolved as a claim resolves a handler: the exact `(queue, type)` rule, else the queue-wide one.
 */
const ZOMBIE_RETRY = `(COALESCE(q.retry_zombies, 0) = 1 OR COALESCE(
          (SELECT r.value ->> 'retry' FROM json_each(@rules) r
           WHERE r.value ->> 'queue' = h.queue AND r.value ->> 'type' = h.type),
          (SELECT r.value ->> 'retry' FROM json_each(@rules) r
           WHERE r.value ->> 'queue' = h.queue AND r.value ->> 'type' IS NULL),
          0) = 1)`;

/** The columns `archiveZombies` returns of each rescued row: all but the payload. */
const ZOMBIE_COLUMNS = hotColumnsExcept('payload');

/** The rescue loop's statements: abandoned Fetched rows, and the zombie sweep's steps. */
export function rescueStatements(t: SqliteTables) {
  const { hot, queues } = t;
  return {
    /**
     * recoverAbandoned: Fetched rows untouched for `@timeoutMs` → Pending (no user code ran).
     * Lock: BEGIN IMMEDIATE; `status = 1` is re-checked by the UPDATE itself. Bounded by `@limit`.
     */
    recoverAbandoned: `UPDATE ${hot}
      SET status = 0, worker_id = NULL, lease_id = NULL, last_updated_utc = ${SQLITE_NOW_MS}
      WHERE status = 1 AND id IN (
        SELECT id FROM ${hot}
        WHERE status = 1 AND last_updated_utc < ${SQLITE_NOW_MS} - @timeoutMs
        ORDER BY last_updated_utc LIMIT @limit)`,

    /**
     * archiveZombies, step 1: the expired Processing rows, oldest heartbeat first, at most
     * `@limit`, as they are now (every column but the payload, which the result does not carry),
     * each with `retry`: the queue's RetryZombies, or the rescuer's handler rules in `@rules` (see
     * {@link ZOMBIE_RETRY}). Lock: BEGIN IMMEDIATE, in one transaction with steps 2 and 3, so
     * nothing changes these rows in between.
     */
    archiveZombies: `SELECT ${ZOMBIE_COLUMNS.map((c) => `h.${c}`).join(', ')}, ${ZOMBIE_RETRY} AS retry
      FROM ${hot} h LEFT JOIN ${queues} q ON q.name = h.queue
      WHERE h.status = 2
        AND COALESCE(h.heartbeat_utc, h.started_at_utc, h.last_updated_utc)
            < ${SQLITE_NOW_MS} - COALESCE(q.zombie_timeout_seconds * 1000, @defaultTimeoutMs)
      ORDER BY h.heartbeat_utc LIMIT @limit`,

    /**
     * archiveZombies, step 2: the rows of step 1 to retry (`@ids`) → Pending with LastError,
     * attempt kept. Same transaction as step 1.
     */
    archiveZombiesRetry: `UPDATE ${hot}
      SET status = 0, worker_id = NULL, lease_id = NULL, heartbeat_utc = NULL, held_since_utc = NULL,
          last_error = @error, last_updated_utc = ${SQLITE_NOW_MS}
      WHERE status = 2 AND id IN ${IDS}
      RETURNING id, queue`,

    /**
     * archiveZombies, step 3: the other rows of step 1 (`@ids`), step 1 of the Hot → DLQ (Zombie)
     * move: delete and capture them. Same transaction, with the inserts and counters.
     */
    archiveZombiesDelete: `DELETE FROM ${hot} WHERE status = 2 AND id IN ${IDS} RETURNING *`,
  };
}
