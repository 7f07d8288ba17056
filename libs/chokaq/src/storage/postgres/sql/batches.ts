/**
 * Batches: the batch record and its callbacks written with its jobs (`enqueueBatch`), the settle
 * step every move out of the hot table runs in its own statement, the reopen step of a resurrect,
 * and the reads of a batch (its row and callbacks, its jobs still hot, its archived jobs' results).
 * The rules: docs/storage.md, "Batches".
 */
import type { ValidatedBatch } from '../../../validation/validate-job';
import { BATCH_CALLBACK_BITS, BatchCallbackBit } from '../../shared/batches';
import { MAX_ENQUEUE_MANY } from '../../../validation/limits';
import { GROUPED } from './fragments';

/**
 * Inserts batch $1 (created by $2, $3 jobs) and its callbacks ($4 kind bits, $5 job ids, $6 queues,
 * $7 types, $8 payloads, $9 tags, $10 priorities, $11 created by, $12 trace contexts, $13 payload
 * versions, $14 groups: parallel arrays, empty when it has none), and the queue rows of the
 * callbacks' queues, so the move that enqueues a callback only inserts its hot row. Runs in the
 * transaction that then inserts the batch's jobs.
 */
export const insertBatch = (s: string): string => `
WITH batch AS (
  INSERT INTO ${s}.batches (id, created_at_utc, created_by, total)
  VALUES ($1, now(), $2, $3)
),
callback AS (
  INSERT INTO ${s}.batch_callbacks (
    batch_id, kind, job_id, queue, type, payload, tags, priority, created_by, trace_context,
    payload_version, group_key)
  SELECT $1, c.kind, c.job_id, c.queue, c.type, c.payload, c.tags, c.priority, c.created_by,
         c.trace_context, c.payload_version, c.group_key
  FROM unnest($4::smallint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
              $10::int[], $11::text[], $12::text[], $13::int[], $14::text[])
    AS c(kind, job_id, queue, type, payload, tags, priority, created_by, trace_context,
         payload_version, group_key)
)
INSERT INTO ${s}.queues (name, last_updated_utc)
SELECT DISTINCT q, now() FROM unnest($6::text[]) AS q
ON CONFLICT (name) DO NOTHING`;

/** Binds {@link insertBatch}. */
export function insertBatchParams(batch: ValidatedBatch): unknown[] {
  const c = batch.callbacks;
  return [
    batch.id,
    batch.createdBy,
    batch.jobs.length,
    c.map((x) => BATCH_CALLBACK_BITS[x.kind]),
    c.map((x) => x.job.id),
    c.map((x) => x.job.queue),
    c.map((x) => x.job.type),
    c.map((x) => x.job.payload),
    c.map((x) => x.job.tags),
    c.map((x) => x.job.priority),
    c.map((x) => x.job.createdBy),
    c.map((x) => x.job.traceContext),
    c.map((x) => x.job.payloadVersion),
    c.map((x) => x.job.group),
  ];
}

/** The callbacks due when a batch settles: complete always, then success or failure. */
const DUE = (failed: string): string =>
  `(${BatchCallbackBit.Complete} | CASE WHEN ${failed} = 0 THEN ${BatchCallbackBit.Success} ` +
  `ELSE ${BatchCallbackBit.Failure} END)`;

/**
 * The settle step of a move out of the hot table, as CTEs of the move's own statement (a leading
 * comma included, to follow its last CTE). `moved` yields `(id, batch_id, ok)` per moved row, `ok`
 * true for the Archive. Per batch among them (callbacks excluded: a callback is not a member),
 * `batches` gets its counts; the batch that reaches its total is settled, and the callbacks due
 * then and never fired before (`fired`, a bit per kind) are inserted Pending into the hot table
 * with their ids made at enqueue.
 *
 * Lock/isolation: the UPDATE takes the batch row's lock, so two moves that finish the last jobs of
 * one batch at once serialise there; under READ COMMITTED the second re-reads the row the first
 * committed (EvalPlanQual) and computes its counts and its due callbacks from it. Exactly one of
 * them sees the batch reach its total. `fired_now` records which bits this update set, for the
 * insert that follows in the same statement. A move of rows outside any batch finds nothing in
 * `batch_delta` and writes nothing.
 */
export const batchSettle = (s: string, moved: string): string => {
  /** The batch reaches its total with the moved rows. */
  const reached = 'b.succeeded + d.ok + b.failed + d.failed >= b.total';
  const due = DUE('b.failed + d.failed');
  return `,
batch_delta AS (
  SELECT m.batch_id, count(*) FILTER (WHERE m.ok) AS ok, count(*) FILTER (WHERE NOT m.ok) AS failed
  FROM (${moved}) m
  WHERE m.batch_id IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM ${s}.batch_callbacks x WHERE x.job_id = m.id)
  GROUP BY m.batch_id
),
batch_settled AS (
  UPDATE ${s}.batches b
  SET succeeded = b.succeeded + d.ok,
      failed = b.failed + d.failed,
      settled_at_utc = CASE WHEN ${reached}
                            THEN now() END,
      fired_now = CASE WHEN ${reached}
                       THEN ${due} & ~b.fired ELSE 0 END,
      fired = b.fired | CASE WHEN ${reached}
                             THEN ${due} ELSE 0 END
  FROM batch_delta d
  WHERE b.id = d.batch_id
  RETURNING b.id, b.fired_now
),
batch_fired AS (
  INSERT INTO ${s}.jobs_hot (
    id, queue, type, payload, tags, priority, status, attempt_count, created_at_utc,
    enqueued_at_utc, last_updated_utc, created_by, trace_context, payload_version, group_key,
    batch_id)
  SELECT c.job_id, c.queue, c.type, c.payload, c.tags, c.priority, 0, 0, now(), now(), now(),
         c.created_by, c.trace_context, c.payload_version,
         coalesce(c.group_key, CASE WHEN EXISTS (
           SELECT 1 FROM ${s}.queues gq WHERE gq.name = c.queue AND ${GROUPED('gq')}) THEN '' END),
         c.batch_id
  FROM ${s}.batch_callbacks c
  JOIN batch_settled t ON t.id = c.batch_id AND (t.fired_now & c.kind) <> 0
)`;
};

/**
 * The reopen step of a resurrect, as a CTE of its statement (a leading comma included): each batch
 * of the rows `taken` from the DLQ (callbacks excluded) has that many fewer failed jobs and is no
 * longer settled. The callbacks that fired stay fired; those that did not may fire when it settles
 * again. Lock/isolation: the batch row's lock, as {@link batchSettle}.
 */
export const batchReopen = (s: string, taken: string): string => `,
batch_reopened AS (
  UPDATE ${s}.batches b
  SET failed = b.failed - d.n, settled_at_utc = NULL, fired_now = 0
  FROM (
    SELECT t.batch_id, count(*) AS n FROM ${taken} t
    WHERE t.batch_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM ${s}.batch_callbacks x WHERE x.job_id = t.id)
    GROUP BY t.batch_id
  ) d
  WHERE b.id = d.batch_id
)`;

/**
 * The ids of batch $1's jobs still in the hot table (a batch has at most `MAX_ENQUEUE_MANY`), by
 * the partial index on `batch_id`; its callbacks are not among them. A plain READ COMMITTED read.
 */
export const batchHotJobIds = (s: string): string => `
SELECT h.id FROM ${s}.jobs_hot h
WHERE h.batch_id = $1
  AND NOT EXISTS (SELECT 1 FROM ${s}.batch_callbacks x WHERE x.job_id = h.id)
LIMIT ${MAX_ENQUEUE_MANY}`;

/**
 * A page of batch $1's results: its jobs in the Archive after id $2 (exclusive; `''` for the first
 * page, before every id), in id order, $3 rows at most (the page's limit plus one, which says
 * whether a next page exists), each with its stored result; its callbacks are not among them. One
 * range of `ix_jobs_archive_batch` on `(batch_id, id COLLATE "C")`, read in its order: ids compare
 * and sort byte for byte, as the lists' tie-breaker does, so the cursor is the same whatever the
 * database's collation. A plain READ COMMITTED read, no row locks: a page shows the jobs archived
 * when it ran, and a job archived later with an id before the cursor is on none of the next pages.
 */
export const getBatchResults = (s: string): string => `
SELECT a.id, a.result FROM ${s}.jobs_archive a
WHERE a.batch_id = $1 AND a.id COLLATE "C" > $2::text
  AND NOT EXISTS (SELECT 1 FROM ${s}.batch_callbacks x WHERE x.job_id = a.id)
ORDER BY a.id COLLATE "C"
LIMIT $3`;

/** Binds {@link getBatchResults}: the batch id, the cursor (`''` for none) and the page's limit. */
export function getBatchResultsParams(batchId: string, after: string, limit: number): unknown[] {
  return [batchId, after, limit + 1];
}

/** Batch $1 with its callbacks (one row per callback, or one row with NULL callback columns). */
export const getBatch = (s: string): string => `
SELECT b.id, b.created_at_utc, b.created_by, b.total, b.succeeded, b.failed, b.fired,
       b.settled_at_utc, c.kind, c.job_id, c.queue, c.type
FROM ${s}.batches b
LEFT JOIN ${s}.batch_callbacks c ON c.batch_id = b.id
WHERE b.id = $1
ORDER BY c.kind`;

/** Binds {@link getBatch}: $1 the batch id. */
export function getBatchParams(id: string): unknown[] {
  return [id];
}
