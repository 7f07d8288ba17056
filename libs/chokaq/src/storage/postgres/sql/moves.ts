/**
 * The moves between pillars, each one statement whose data-modifying CTEs commit together: hot →
 * Archive (`archiveSucceeded`), hot → DLQ (`moveToDlq`, `cancel`) and DLQ → hot (`resurrect`),
 * with their counters, buckets and attempt rows. Delete first, insert what was deleted.
 */
import type { DlqFilter } from '../../../interfaces/job-view.interface';
import { batchReopen, batchSettle } from './batches';
import { dependencySettle } from './dependencies';
import { filterClause } from './filters';
import type { CompletedJob, DlqMove, JobLease } from '../../../interfaces/job.interface';
import { FailureReason, JobStatus } from '../../../interfaces/job-status.enum';
import { dlqStatusFor, Outcome } from '../../shared/outcome';
import { attemptOutcomeSql } from '../../shared/attempts';
import {
  ARCHIVE_COPIED,
  GROUPED_QUEUES,
  STORED_GROUP,
  DlqMoveShape,
  OWNED,
  attemptInsert,
  statusIn,
  bucketUpsert,
  cols,
  counterUpsert,
  dlqInsert,
  literal,
  arrayLiteral,
  leaseParams,
} from './fragments';

/**
 * Atomic move Hot → Archive of owned rows (status 1 or 2). $1 ids, $2 worker ids, $3 lease ids,
 * $4 durations in ms (parallel arrays). Returns the archived ids.
 *
 * Lock/isolation: one READ COMMITTED statement = one transaction (SPEC "Transaction Integrity"):
 * the DELETE takes the exact owned rows first (row locks; a concurrently changed row is re-checked
 * against lease and status after the lock), RETURNING captures what was deleted, the INSERT writes
 * exactly that, then ONE `stats_summary` upsert and ONE metric-bucket upsert per queue of the batch
 * (StatsSummary is the hottest row, so it is touched once per batch, last, to keep its lock short).
 * Any error, e.g. in the archive insert, rolls back the delete too. The rows' batches are settled
 * in the same statement ({@link batchSettle}).
 *
 * `withResults` (a batch where some run records its result): $5 the results' JSON text (NULL for a
 * run that records none) go into the archive's `result`. Without it the text is that of a batch
 * with no result at all, the common case, which binds no fifth array.
 */
export const archiveSucceeded = (s: string, withResults = false): string => {
  /** `text` when the batch stores results, else nothing. */
  const results = (text: string) => (withResults ? text : '');
  return `
WITH input AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]${results(', $5::text[]')})
    AS l(id, worker_id, lease_id, duration_ms${results(', result')})
),
moved AS (
  DELETE FROM ${s}.jobs_hot j
  USING input l
  WHERE ${OWNED} AND ${statusIn('j', 1, 2)}
  RETURNING j.*, l.duration_ms AS run_ms${results(', l.result AS run_result')}
),
src AS (
  INSERT INTO ${s}.jobs_archive (${cols(ARCHIVE_COPIED)}, finished_at_utc, duration_ms${results(', result')})
  SELECT ${cols(ARCHIVE_COPIED, 'm')}, now(), m.run_ms${results(', m.run_result')}
  FROM moved m
  RETURNING id, lease_id, queue, duration_ms
),
counted AS (
  INSERT INTO ${s}.stats_summary AS t (queue, succeeded_total, last_activity_utc)
  SELECT queue, count(*), now() FROM src GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET succeeded_total = t.succeeded_total + EXCLUDED.succeeded_total,
      last_activity_utc = EXCLUDED.last_activity_utc
),
bucket AS (${bucketUpsert(s, 0, '-1', 'src')}
)${batchSettle(s, 'SELECT id, batch_id, true AS ok FROM moved')}${dependencySettle(s, 'SELECT id, has_dependents, true AS ok FROM moved')}
SELECT id, lease_id FROM src`;
};

/**
 * Binds {@link archiveSucceeded}: $1–$3 the runs' leases ({@link leaseParams}), $4 their durations in
 * ms, and with `withResults` $5 their results (null where a run records none).
 */
export function archiveSucceededParams(
  completed: readonly CompletedJob[],
  withResults = false,
): unknown[] {
  const params: unknown[] = [
    ...leaseParams(completed),
    arrayLiteral(completed.map((c) => c.durationMs)),
  ];
  if (withResults) params.push(completed.map((c) => c.result ?? null));
  return params;
}

/**
 * Atomic move Hot → DLQ of one row. Owned variant: $1 id, $2 worker, $3 lease (status 1 or 2), then
 * $4 reason, $5 error text, $6 actor, $7 duration ms (bucket; may be NULL). Admin/rescue variant
 * (`owned = false`, any hot status, Waiting included; with `waitingOnly` only a Waiting row, as the
 * dependency check cancels one): $1 id, $2 reason, $3 error, $4 actor, $5 duration. Returns the
 * moved ids.
 *
 * Lock/isolation: one READ COMMITTED statement, same pattern as {@link archiveSucceeded}: DELETE the
 * exact row first (row lock, re-checked after locking), insert what was deleted, then the lifetime
 * counter (`failed_total` or `cancelled_total`) and the metric bucket, all or nothing. A row that
 * was Processing (its run had started) gets its run's attempt row in the same statement
 * ({@link attemptInsert}; outcome by the reason: timeout, cancelled, zombie, else failed); a
 * Pending or Fetched one ran nothing and gets none.
 */
export const moveToDlq = (
  s: string,
  shape: DlqMoveShape,
  owned: boolean,
  waitingOnly = false,
): string => {
  const [reason, error, actor, duration] = owned ? [4, 5, 6, 7] : [2, 3, 4, 5];
  const admin = waitingOnly ? 'j.status = 7' : 'j.status IN (0, 1, 2, 7)';
  return `
WITH moved AS (
  DELETE FROM ${s}.jobs_hot j
  WHERE j.id = $1 AND ${owned ? `j.worker_id = $2 AND j.lease_id = $3 AND ${statusIn('j', 1, 2)}` : admin}
  RETURNING j.*
),
${dlqInsert(s, shape.status, `$${reason}::smallint`, `$${error}::text`, `$${actor}::text`)}
attempt AS (${attemptInsert(s, `SELECT m.id, m.attempt_count, m.worker_id, m.lease_id, m.started_at_utc, ${attemptOutcomeSql(`$${reason}::smallint`)} AS outcome, $${error}::text AS error FROM moved m WHERE m.status = 2`)}
),
${counterUpsert(s, shape.counter)}
bucket AS (${bucketUpsert(s, shape.outcome, `$${reason}::smallint`, `(SELECT queue, $${duration}::bigint AS duration_ms FROM src)`)}
)${batchSettle(s, 'SELECT id, batch_id, false AS ok FROM moved')}${dependencySettle(s, 'SELECT id, has_dependents, false AS ok FROM moved')}
SELECT id FROM src`;
};

/** What {@link moveToDlq} writes for a failure `reason`: the DLQ status, the outcome and the counter. */
export function moveToDlqShape(reason: FailureReason): DlqMoveShape {
  const status = dlqStatusFor(reason);
  const cancelled = status === JobStatus.Cancelled;
  return {
    status: status as DlqMoveShape['status'],
    outcome: cancelled ? Outcome.Cancelled : Outcome.Failed,
    counter: cancelled ? 'cancelled_total' : 'failed_total',
  };
}

/**
 * Binds {@link moveToDlq}. Owned (a lease): $1 id, $2 worker, $3 lease, $4 reason, $5 error,
 * $6 actor, $7 duration (ms or NULL). Admin or rescue (an id): $1 id, $2 reason, $3 error,
 * $4 actor, $5 duration.
 */
export function moveToDlqParams(
  target: JobLease | { id: string },
  move: Required<Pick<DlqMove, 'reason' | 'error'>> & {
    actor: string | null;
    durationMs: number | null;
  },
): unknown[] {
  const rest = [move.reason, move.error, move.actor, move.durationMs];
  return 'leaseId' in target
    ? [target.id, target.workerId, target.leaseId, ...rest]
    : [target.id, ...rest];
}

/**
 * Cancel, step 1: Pending, Fetched and Waiting rows among $1 → DLQ as Cancelled (status 5, reason 1), with
 * $2 error text and $3 actor; `cancelled_total` and the cancelled bucket (outcome 2) in the same
 * statement. Returns the moved ids.
 * Lock/isolation: READ COMMITTED, runs in the cancel transaction before step 2. A row that a worker
 * marks Processing concurrently is re-checked after the DELETE's lock and no longer matches.
 */
export const cancel = (s: string): string => `
WITH moved AS (
  DELETE FROM ${s}.jobs_hot j
  WHERE j.id = ANY ($1::text[]) AND j.status IN (0, 1, 7)
  RETURNING j.*
),
${dlqInsert(s, 5, '1', '$2::text', '$3::text')}
${counterUpsert(s, 'cancelled_total')}
bucket AS (${bucketUpsert(s, 2, '1', '(SELECT queue, NULL::bigint AS duration_ms FROM src)')}
)${batchSettle(s, 'SELECT id, batch_id, false AS ok FROM moved')}${dependencySettle(s, 'SELECT id, has_dependents, false AS ok FROM moved')}
SELECT id FROM src`;

/** Binds {@link cancel}: $1 the job ids, $2 the stored error text, $3 the actor (or NULL). */
export function cancelParams(
  ids: readonly string[],
  error: string,
  actor: string | null,
): unknown[] {
  return [ids, error, actor];
}

/**
 * Cancel, step 2 (a new statement, so its snapshot sees rows that became Processing meanwhile):
 * Processing rows among $1 get `cancel_requested_utc` (kept if already set) and
 * `last_modified_by` $2; with a channel, `pg_notify` tells the owner at commit instead of at its
 * next heartbeat. Returns the ids. Lock/isolation: READ COMMITTED row locks.
 */
export const cancelRequest = (s: string, channel: string | null): string => `
WITH requested AS (
  UPDATE ${s}.jobs_hot j
  SET cancel_requested_utc = coalesce(j.cancel_requested_utc, now()),
      last_modified_by = coalesce($2::text, j.last_modified_by)
  WHERE j.id = ANY ($1::text[]) AND ${statusIn('j', 2)}
  RETURNING j.id
)
SELECT r.id FROM requested r${channel === null ? '' : `\nCROSS JOIN LATERAL pg_notify(${literal(channel)}, r.id)`}`;

/** Binds {@link cancelRequest}: $1 the job ids, $2 the actor (or NULL). */
export function cancelRequestParams(ids: readonly string[], actor: string | null): unknown[] {
  return [ids, actor];
}

/**
 * Atomic move DLQ → Hot as Pending of the DLQ rows whose ids `chosen` (a SELECT of `id`) yields.
 * Parameters: $1 new payload (NULL = keep), $2 whether tags change, $3 new tags, $4 new priority
 * (NULL = keep), $5 actor, then the selection's own parameters from $6. Returns the ids moved.
 *
 * Lock/isolation: one READ COMMITTED statement. The DLQ DELETE comes first and takes the row lock,
 * so of two operators resurrecting one job the second waits, then finds the row gone and inserts
 * nothing. If the hot insert fails (e.g. the id is somehow hot already), the DELETE rolls back.
 * The job restarts clean: attempt 0, no lease, no schedule, `enqueued_at_utc = now()` (the clock of
 * `maxJobAge`), `created_at_utc`, the producer's `trace_context` and the `payload_version` kept, the idempotency key
 * dropped, `resurrected_total + n`; its group kept (a job without one that comes back to a queue
 * with group limits joins the shared group, {@link STORED_GROUP}).
 */
export const resurrect = (s: string, chosen: string): string => `
WITH chosen AS MATERIALIZED (${chosen}),
taken AS (
  DELETE FROM ${s}.jobs_dlq d
  USING chosen c
  WHERE d.id = c.id
  RETURNING d.*
),
revived AS (
  INSERT INTO ${s}.jobs_hot (
    id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
    worker_id, lease_id, heartbeat_utc, scheduled_at_utc, created_at_utc, enqueued_at_utc,
    started_at_utc, last_updated_utc, created_by, last_modified_by, last_error,
    cancel_requested_utc, progress, trace_context, payload_version, group_key, batch_id,
    waiting_on, has_dependents)
  SELECT t.id, t.queue, t.type, coalesce($1::text, t.payload),
         CASE WHEN $2::boolean THEN $3::text ELSE t.tags END,
         NULL, coalesce($4::int, t.priority), 0, 0,
         NULL, NULL, NULL, NULL, t.created_at_utc, now(),
         NULL, now(), t.created_by, coalesce($5::text, t.last_modified_by),
         coalesce(t.error_details, t.last_error), NULL, NULL, t.trace_context, t.payload_version,
         ${STORED_GROUP('t.group_key', 't.queue', GROUPED_QUEUES(s, '(SELECT array_agg(queue::text) FROM taken)'))},
         t.batch_id, t.waiting_on, t.has_dependents
  FROM taken t
  RETURNING id, queue
),
new_queues AS (
  INSERT INTO ${s}.queues (name, last_updated_utc)
  SELECT DISTINCT queue, now() FROM revived
  ON CONFLICT (name) DO NOTHING
),
counted AS (
  INSERT INTO ${s}.stats_summary AS t (queue, resurrected_total, last_activity_utc)
  SELECT queue, count(*), now() FROM revived GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET resurrected_total = t.resurrected_total + EXCLUDED.resurrected_total,
      last_activity_utc = EXCLUDED.last_activity_utc
)${batchReopen(s, 'taken')}
SELECT id FROM revived`;

/** Ids for {@link resurrect}: explicit ids ($6); the DELETE itself takes the row locks. */
export const CHOOSE_DLQ_BY_IDS = `SELECT unnest($6::text[]) AS id`;

/** What a resurrect changes: a new payload (NULL = keep), tags (undefined = keep), priority (NULL = keep). */
export interface ResurrectEdits {
  payload: string | null;
  tags?: string | null;
  priority: number | null;
}

/** $1–$5 of {@link resurrect}: payload, whether tags change, tags, priority, actor. */
function resurrectEditParams(edits: ResurrectEdits, actor: string | null): unknown[] {
  return [edits.payload, edits.tags !== undefined, edits.tags ?? null, edits.priority, actor];
}

/** Binds {@link resurrect} over {@link CHOOSE_DLQ_BY_IDS}: $1–$5 the edits and actor, $6 the ids. */
export function resurrectByIdsParams(
  edits: ResurrectEdits,
  actor: string | null,
  ids: readonly string[],
): unknown[] {
  return [...resurrectEditParams(edits, actor), ids];
}

/**
 * Ids for {@link resurrect} / {@link purgeDlqByFilter} by filter: at most `limitParam` matching rows, oldest
 * failure first, skipping rows another transaction holds (FOR UPDATE SKIP LOCKED), so two bulk
 * actions never block each other and never both touch one row.
 */
export const chooseDlqByFilter = (s: string, where: string, limitParam: string): string => `
  SELECT f.id FROM ${s}.jobs_dlq f
  WHERE ${where}
  ORDER BY f.failed_at_utc, f.id
  LIMIT ${limitParam}
  FOR UPDATE SKIP LOCKED`;

/**
 * One batch of a resurrect by filter: {@link resurrect} over {@link chooseDlqByFilter}, with its
 * values ($1–$5 no edits and the actor, then the filter's, then the batch size).
 */
export function resurrectByFilterQuery(
  s: string,
  filter: DlqFilter,
  batch: number,
  actor: string | null,
): { text: string; values: unknown[] } {
  const values = resurrectEditParams({ payload: null, priority: null }, actor);
  const where = filterClause('dlq', filter, values, 'f');
  values.push(batch);
  return { text: resurrect(s, chooseDlqByFilter(s, where, `$${values.length}`)), values };
}
