/**
 * Batches: the batch record and its callbacks written with its jobs (`enqueueBatch`), the settle
 * steps every move out of the hot table runs in its own transaction, the reopen step of a
 * resurrect, and the read of a batch. The rules: docs/storage.md, "Batches". PostgreSQL settles in
 * SQL, in the move's statement; a SQLite move is several statements driven from TypeScript, so it
 * settles between them: the counts here, the decision of which callbacks are due in code
 * (`dueCallbacks`), then the writes of that decision here.
 *
 * Lock/isolation of every statement below: it runs inside the BEGIN IMMEDIATE transaction of the
 * enqueue or of the move it belongs to (or inside the caller's transaction, for an enqueue), which
 * holds the file's single write lock from BEGIN to COMMIT. No other writer of any process can
 * change a batch row between the update of its counts and the decision taken on them, so two moves
 * that finish the last jobs of one batch run one after the other, and exactly one of them sees the
 * batch reach its total. No row lock or re-read is needed.
 */
import { MAX_ENQUEUE_MANY } from '../../../validation/limits';
import { SQLITE_NOW_MS, STORED_GROUP, SqliteTables } from './fragments';

/**
 * Per batch, how many of the moved rows `@moved` (a JSON array of `{id, batch_id}`, only rows of a
 * batch) are its members: a callback's job also carries its batch's id but is not a member, which
 * one probe of `batch_callbacks`' unique `job_id` index per row tells.
 */
const MEMBERS = (
  callbacks: string,
): string => `SELECT m.value ->> 'batch_id' AS batch_id, COUNT(*) AS n
        FROM json_each(@moved) AS m
        WHERE NOT EXISTS (SELECT 1 FROM ${callbacks} x WHERE x.job_id = m.value ->> 'id')
        GROUP BY m.value ->> 'batch_id'`;

/** The batch statements of the write half, for one prefix. */
export function batchStatements(t: SqliteTables) {
  const { hot, batches, callbacks, queues } = t;
  return {
    /**
     * enqueueBatch, step 1: the batch `@id` (created by `@createdBy`, `@total` jobs), with nothing
     * counted and nothing fired yet. Lock: the enqueue's BEGIN IMMEDIATE (or the caller's
     * transaction), with the steps that follow and the jobs' inserts.
     */
    insertBatch: `INSERT INTO ${batches} (id, created_at_utc, created_by, total)
      VALUES (@id, ${SQLITE_NOW_MS}, @createdBy, @total)`,

    /**
     * enqueueBatch, step 2: the callbacks of batch `@id` from `@rows` (a JSON array, one object per
     * callback with its kind bit and its job's columns, the id made at enqueue included). The
     * queue and stats rows of their queues are then ensured by the enqueue's own steps, so the
     * move that fires a callback only inserts its hot row. Lock: the transaction of step 1.
     */
    insertBatchCallbacks: `INSERT INTO ${callbacks} (batch_id, kind, job_id, queue, type, payload,
        tags, priority, created_by, trace_context, payload_version, group_key)
      SELECT @id, c.value ->> 'kind', c.value ->> 'job_id', c.value ->> 'queue', c.value ->> 'type',
        c.value ->> 'payload', c.value ->> 'tags', c.value ->> 'priority', c.value ->> 'created_by',
        c.value ->> 'trace_context', c.value ->> 'payload_version', c.value ->> 'group_key'
      FROM json_each(@rows) AS c ORDER BY c.key`,

    /**
     * Settle, step 1, after a move deleted rows of a batch from the hot table: adds the members
     * among `@moved` ({@link MEMBERS}) to their batches' succeeded (`@ok` 1, the Archive) or failed
     * (`@ok` 0, the DLQ) counts, and returns each batch touched as it is now, for the decision of
     * which callbacks are due. A primary-key update per batch. Lock: the move's BEGIN IMMEDIATE,
     * held until steps 2 and 3 have written that decision.
     */
    batchSettleCount: `UPDATE ${batches} AS b
      SET succeeded = b.succeeded + CASE WHEN @ok = 1 THEN d.n ELSE 0 END,
          failed = b.failed + CASE WHEN @ok = 1 THEN 0 ELSE d.n END
      FROM (${MEMBERS(callbacks)}) AS d
      WHERE b.id = d.batch_id
      RETURNING id, total, succeeded, failed, fired`,

    /**
     * Settle, step 2: the batches of `@settled` (a JSON array of `{id, due}`, those step 1 found
     * at their total) are settled now, and the callbacks `due` (a mask of kind bits, never one
     * fired before) are recorded as fired, so no later move fires them again. Lock: the move's
     * BEGIN IMMEDIATE, as step 1.
     */
    batchSettle: `UPDATE ${batches} AS b
      SET fired = b.fired | (s.value ->> 'due'), settled_at_utc = ${SQLITE_NOW_MS}
      FROM json_each(@settled) AS s
      WHERE b.id = s.value ->> 'id'`,

    /**
     * Settle, step 3, when some callback is due: the due callbacks of `@settled` enter the hot
     * table as Pending jobs with the ids made at enqueue (a range of `batch_callbacks`' primary key
     * per batch), in their batch, with their own group or, in a queue with group limits, the
     * shared group `''` ({@link STORED_GROUP}), as an enqueue stores them. No ON CONFLICT: a
     * callback fires at most once, and a failed insert rolls the whole move back. Lock: the
     * move's BEGIN IMMEDIATE, as step 1.
     */
    batchFire: `INSERT INTO ${hot} (id, queue, type, payload, tags, priority, status, attempt_count,
        created_at_utc, enqueued_at_utc, last_updated_utc, created_by, trace_context,
        payload_version, group_key, batch_id)
      SELECT c.job_id, c.queue, c.type, c.payload, c.tags, c.priority, 0, 0,
        ${SQLITE_NOW_MS}, ${SQLITE_NOW_MS}, ${SQLITE_NOW_MS}, c.created_by, c.trace_context,
        c.payload_version, ${STORED_GROUP(queues, 'c.group_key', 'c.queue')}, c.batch_id
      FROM json_each(@settled) AS s
      JOIN ${callbacks} c ON c.batch_id = s.value ->> 'id' AND (c.kind & (s.value ->> 'due')) <> 0
      ORDER BY s.key, c.kind`,

    /**
     * The reopen step of a resurrect, after the rows `@moved` left the DLQ for the hot table:
     * each batch of the members among them ({@link MEMBERS}) has that many fewer failed jobs and
     * is no longer settled. The callbacks that fired stay fired; those that did not may fire when
     * it settles again. Lock: the resurrect's BEGIN IMMEDIATE, after its DLQ delete and hot insert.
     */
    batchReopen: `UPDATE ${batches} AS b
      SET failed = b.failed - d.n, settled_at_utc = NULL
      FROM (${MEMBERS(callbacks)}) AS d
      WHERE b.id = d.batch_id`,
  };
}

/** The batch reads, for one prefix. */
export function batchReadStatements({ archive, batches, callbacks, hot }: SqliteTables) {
  return {
    /**
     * batchHotJobIds: the ids of batch `@id`'s jobs still in the hot table (a batch has at most
     * `MAX_ENQUEUE_MANY`), by the partial index on `batch_id`; its callbacks are not among them.
     * Lock: the read's deferred transaction.
     */
    batchHotJobIds: `SELECT h.id FROM ${hot} h
      WHERE h.batch_id = @id
        AND NOT EXISTS (SELECT 1 FROM ${callbacks} x WHERE x.job_id = h.id)
      LIMIT ${MAX_ENQUEUE_MANY}`,
    /**
     * getBatchResults: a page of batch `@id`'s results, its jobs in the archive after id `@after`
     * (exclusive; `''` for the first page, before every id) in id order, `@limit` rows at most (the
     * page's limit plus one, which says whether a next page exists), each with its stored result;
     * its callbacks are not among them. One range of `jobs_archive_batch_ix` on `(batch_id, id)`,
     * read in its order (TEXT compares byte for byte, BINARY). Lock: the read's deferred
     * transaction (one WAL snapshot).
     */
    getBatchResults: `SELECT a.id, a.result FROM ${archive} a
      WHERE a.batch_id = @id AND a.id > @after
        AND NOT EXISTS (SELECT 1 FROM ${callbacks} x WHERE x.job_id = a.id)
      ORDER BY a.id
      LIMIT @limit`,
    /**
     * getBatch: batch `@id` with its callbacks (one row per callback, or one row with NULL callback
     * columns), a primary-key read of each table. Lock: the read's deferred transaction (one WAL
     * snapshot), so the counts and the fired mask are read as one commit left them.
     */
    getBatch: `SELECT b.id, b.created_at_utc, b.created_by, b.total, b.succeeded, b.failed, b.fired,
        b.settled_at_utc, c.kind, c.job_id, c.queue, c.type
      FROM ${batches} b
      LEFT JOIN ${callbacks} c ON c.batch_id = b.id
      WHERE b.id = @id
      ORDER BY c.kind`,
  };
}
