/**
 * The steps of the moves between pillars, run together in one `BEGIN IMMEDIATE` transaction: delete
 * (capturing the rows with RETURNING), insert what was captured, then the counters and buckets.
 */
import { HOT_COLUMNS } from '../../shared/columns';
import { SqlWhere } from './filters';
import {
  ARCHIVE_COPIED,
  IDS,
  LEASE_CTE,
  OWNED,
  SQLITE_NOW_MS,
  STORED_GROUP,
  SqliteTables,
  fromMoved,
} from './fragments';

/** The DLQ rows a bulk action takes next: oldest failure first, at most `@limit`. */
export function chooseDlqByFilter(dlqTable: string, where: SqlWhere): string {
  return `SELECT id FROM ${dlqTable} WHERE ${where.sql} ORDER BY failed_at_utc, id LIMIT @limit`;
}

/** resurrectByFilter step 1: delete and capture one batch (BEGIN IMMEDIATE, delete first). */
export function resurrectByFilter(dlqTable: string, where: SqlWhere): string {
  return `DELETE FROM ${dlqTable} WHERE id IN (${chooseDlqByFilter(dlqTable, where)}) RETURNING *`;
}

/**
 * Step 1 of archiveSucceeded, without or `withResults` (then the leases' `result` goes into the
 * archive's `result`). The text without results is the one every batch took before stored results.
 *
 * `CROSS JOIN` keeps the leases the outer loop, each finding its row by the primary key: SQLite
 * never reorders the tables of a CROSS JOIN (https://sqlite.org/optoverview.html, "Manual Control
 * Of Query Plans Using CROSS JOIN"). With a plain JOIN, statistics gathered while few rows were
 * claimed made it scan the claimed rows' partial index and, for each, the leases: every claimed
 * row read for every lease (108 ms for 100 leases beside 1,000 claimed rows; bench `scale`).
 */
function archiveInsert({ hot, archive }: SqliteTables, withResults: boolean): string {
  const result = (column: string) => (withResults ? `, ${column}` : '');
  return `WITH completed(id, worker_id, lease_id, duration_ms${result('result')}) AS (
        SELECT value ->> 'id', value ->> 'workerId', value ->> 'leaseId', value ->> 'durationMs'${result("value ->> 'result'")}
        FROM json_each(@leases)
      )
      INSERT INTO ${archive} (${ARCHIVE_COPIED.join(', ')}, finished_at_utc, duration_ms${result('result')})
      SELECT ${ARCHIVE_COPIED.map((c) => `h.${c}`).join(', ')}, ${SQLITE_NOW_MS}, c.duration_ms${result('c.result')}
      FROM completed c
      CROSS JOIN ${hot} h ON h.id = c.id AND h.worker_id = c.worker_id AND h.lease_id = c.lease_id
      WHERE h.status IN (1, 2)
      RETURNING id, queue, duration_ms, batch_id, has_dependents`;
}

/** The moves between pillars: each step of hot → Archive, hot → DLQ (and cancel) and DLQ → hot. */
export function moveStatements(t: SqliteTables) {
  const { hot, dlq, queues } = t;
  const dlqColumns = [...HOT_COLUMNS, 'failure_reason', 'error_details'];
  return {
    /**
     * Step 1 of archiveSucceeded: copy the owned rows (Status 1 or 2) of `@leases` (which carry
     * `durationMs`) into the archive, straight from the hot table, and return (id, queue,
     * duration_ms) for the counters, batch_id for the batches' counts and has_dependents for the
     * settle of their edges. Step 2 deletes exactly those rows
     * ({@link archiveSucceededDelete}): inside BEGIN IMMEDIATE nothing can change between the two,
     * and any error rolls both back.
     * Insert-then-delete in SQL, rather than delete-returning-then-insert through JSON, keeps the
     * payloads out of JavaScript: the archive is the hottest move.
     */
    archiveSucceeded: archiveInsert(t, false),

    /**
     * Step 1 of archiveSucceeded for a batch where some run records its result: as
     * {@link archiveSucceeded}, and each lease of `@leases` may carry `result` (its JSON text, kept
     * as the text of a JSON string), stored in the archive's `result` (NULL where a lease has none).
     * A batch without results takes the statement above, which does not name the column.
     */
    archiveSucceededWithResults: archiveInsert(t, true),

    /**
     * Step 2 of archiveSucceeded: delete the rows step 1 archived (same `@leases`, without their
     * results, same test) and return which run each was, `(id, lease_id)`.
     */
    archiveSucceededDelete: `WITH ${LEASE_CTE}
      DELETE FROM ${hot} WHERE status IN (1, 2) AND ${OWNED}
      RETURNING id, lease_id`,

    /**
     * Step 1 of moveToDlq with a lease: delete the exact owned rows (Status 1 or 2)
     * and capture them. Inside BEGIN IMMEDIATE with the inserts and counters that follow; any error
     * before COMMIT rolls the delete back.
     */
    moveToDlq: `WITH ${LEASE_CTE}
      DELETE FROM ${hot} WHERE status IN (1, 2) AND ${OWNED} RETURNING *`,

    /** Step 1 of an admin/rescue moveToDlq by id: any hot row. Same transaction shape. */
    moveToDlqById: `DELETE FROM ${hot} WHERE id = @id RETURNING *`,

    /**
     * Step 1 of the dependency check's move of a dependent to the DLQ (`DependencyFailed`): row
     * `@id` only while it is still Waiting (one cancelled or resurrected meanwhile is left as it
     * is). Inside the check round's BEGIN IMMEDIATE, with the inserts, counters and settle steps
     * of every Hot → DLQ move.
     */
    moveToDlqWaiting: `DELETE FROM ${hot} WHERE id = @id AND status = 7 RETURNING *`,

    /**
     * Step 2 of every Hot → DLQ move: insert the captured rows (`@moved`, whose `status` already holds
     * the DLQ status and which carry `failure_reason` and `error_details`); a conflict aborts the move.
     */
    moveToDlqInsert: `INSERT INTO ${dlq} (${dlqColumns.join(', ')}, failed_at_utc)
      SELECT ${fromMoved(dlqColumns)}, ${SQLITE_NOW_MS}
      FROM json_each(@moved) AS m ORDER BY m.key`,

    /** Step 1 of cancel: Pending, Fetched and Waiting rows among `@ids`. Same transaction shape. */
    cancel: `DELETE FROM ${hot} WHERE status IN (0, 1, 7) AND id IN ${IDS} RETURNING *`,

    /** Processing rows get CancelRequestedUtc; their owner aborts them and moves them to the DLQ. */
    cancelRequest: `UPDATE ${hot}
      SET cancel_requested_utc = COALESCE(cancel_requested_utc, ${SQLITE_NOW_MS}),
          last_modified_by = COALESCE(@actor, last_modified_by)
      WHERE status = 2 AND id IN ${IDS}
      RETURNING id`,

    /**
     * Step 1 of resurrect and resurrectMany: delete from the DLQ first and capture. Under BEGIN
     * IMMEDIATE two operators are serialised, and the second finds nothing to delete (SPEC §8.9).
     */
    resurrect: `DELETE FROM ${dlq} WHERE id IN ${IDS} RETURNING *`,

    /**
     * Step 2 of every resurrect (by id, many, by filter): the captured rows return as Pending,
     * attempts 0, EnqueuedAtUtc = now, CreatedAtUtc, the producer's trace context and the payload
     * version kept, no
     * idempotency key, the DLQ error kept as LastError, the group kept (a job without one that
     * comes back to a queue with group limits joins the shared group, {@link STORED_GROUP}), the
     * batch kept (its batch reopens: `batchReopen`), the dependency columns kept (`waiting_on`,
     * `has_dependents`: no edge is touched; a dependency brought back settles its open edges at
     * its next move).
     * Edits: `@payload` (null = keep),
     * `@setTags` 1 with `@tags`, `@priority` (null = keep). No ON CONFLICT: if the insert fails,
     * the whole transaction, DLQ delete included, rolls back.
     */
    resurrectInsert: `INSERT INTO ${hot} (id, queue, type, payload, tags, idempotency_key, priority,
        status, attempt_count, scheduled_at_utc, created_at_utc, enqueued_at_utc, last_updated_utc,
        created_by, last_modified_by, last_error, trace_context, payload_version, group_key,
        batch_id, waiting_on, has_dependents)
      SELECT m.value ->> 'id', m.value ->> 'queue', m.value ->> 'type',
        COALESCE(@payload, m.value ->> 'payload'),
        CASE WHEN @setTags = 1 THEN @tags ELSE m.value ->> 'tags' END,
        NULL, COALESCE(@priority, m.value ->> 'priority'), 0, 0, NULL,
        m.value ->> 'created_at_utc', ${SQLITE_NOW_MS}, ${SQLITE_NOW_MS},
        m.value ->> 'created_by', COALESCE(@actor, m.value ->> 'last_modified_by'),
        COALESCE(m.value ->> 'error_details', m.value ->> 'last_error'),
        m.value ->> 'trace_context', m.value ->> 'payload_version',
        ${STORED_GROUP(queues, "m.value ->> 'group_key'", "m.value ->> 'queue'")},
        m.value ->> 'batch_id', m.value ->> 'waiting_on', m.value ->> 'has_dependents'
      FROM json_each(@moved) AS m ORDER BY m.key`,
  };
}
