/**
 * Dedupe keys (`NewJob.dedupe`): the key table's statements. An enqueue with a key runs them in one
 * transaction with the job's insert, in the order of `storage/shared/dedupe.ts`: take a free key
 * ({@link dedupeTake}); else lock and read its holder ({@link dedupeHolder}) and hold, replace the
 * Pending holder ({@link dedupeReplace}) or insert the job and move the key to it
 * ({@link dedupeMove}).
 */
import type { ValidatedJob } from '../../../validation/validate-job';
import { dedupeColumns } from '../../shared/dedupe';
import { MS } from './fragments';

/** The window's end for a key of mode $m and window $w ms: none for unique (mode 3). */
const windowEnd = (mode: string, windowMs: string) =>
  `CASE WHEN ${mode} = 3 THEN NULL ELSE now() + ${windowMs} ${MS} END`;

/**
 * Takes key $1 for job $2 (mode $3, state bits $4, window $5 ms) if no row holds it; returns the
 * job id when it did.
 *
 * Lock/isolation: READ COMMITTED. A concurrent taker of the same key waits on the primary key for
 * the first transaction, then skips (`DO NOTHING`) and goes on to {@link dedupeHolder}, which sees
 * the committed row: N enqueues of one key make one row.
 */
export const dedupeTake = (s: string): string => `
INSERT INTO ${s}.dedupe_keys (key, job_id, mode, states, window_ms, window_started_utc, window_ends_utc)
VALUES ($1, $2, $3::smallint, $4::smallint, $5::bigint, now(), ${windowEnd('$3::smallint', '$5::bigint')})
ON CONFLICT (key) DO NOTHING
RETURNING job_id`;

/** Binds {@link dedupeTake} and {@link dedupeMove}: $1 key, $2 job id, $3 mode, $4 states, $5 window. */
export function dedupeTakeParams(job: ValidatedJob): unknown[] {
  const d = dedupeColumns(job.dedupe!);
  return [job.dedupe!.key, job.id, d.mode, d.states, d.windowMs];
}

/**
 * Key $1's holder, the key row locked until the enqueue commits: its job, whether the key's window
 * is still open, the holder's hot status (NULL when not hot), and whether it succeeded within the
 * last $2 ms. No row when the key is free again (retention removed it meanwhile).
 *
 * Lock/isolation: `FOR UPDATE OF k` serialises every enqueue of this key (and retention's delete of
 * it) from here to commit; the holder's own row is read, not locked: a claim may take it after
 * this read, which {@link dedupeReplace}'s guard catches.
 */
export const dedupeHolder = (s: string): string => `
SELECT k.job_id, coalesce(k.window_ends_utc > now(), false) AS in_window, h.status AS hot_status,
       EXISTS (SELECT 1 FROM ${s}.jobs_archive a
               WHERE a.id = k.job_id AND a.finished_at_utc > now() - $2::float8 ${MS})
         AS finished_within_window
FROM ${s}.dedupe_keys k
LEFT JOIN ${s}.jobs_hot h ON h.id = k.job_id
WHERE k.key = $1
FOR UPDATE OF k`;

/** Binds {@link dedupeHolder}: $1 the key, $2 the enqueue's window (0 without one). */
export function dedupeHolderParams(job: ValidatedJob): unknown[] {
  return [job.dedupe!.key, dedupeColumns(job.dedupe!).windowMs];
}

/**
 * Debounce: gives holder $1, if it is still Pending, payload $2 (version $3, trace context $4)
 * and a run time $5 ms from now, and moves key $6's window to end then; returns the holder's id.
 *
 * Lock/isolation: one READ COMMITTED statement. A claim that took the row first holds its row
 * lock; the UPDATE waits, re-checks `status = 0` and changes nothing (no row: the caller inserts
 * a new job instead). The key row is already locked by {@link dedupeHolder}.
 */
export const dedupeReplace = (s: string): string => `
WITH replaced AS (
  UPDATE ${s}.jobs_hot j
  SET payload = $2, payload_version = $3, trace_context = $4,
      scheduled_at_utc = now() + $5::float8 ${MS}, last_updated_utc = now()
  WHERE j.id = $1 AND j.status = 0
  RETURNING j.id
),
moved AS (
  UPDATE ${s}.dedupe_keys k
  SET window_started_utc = now(), window_ends_utc = now() + $5::float8 ${MS}
  WHERE k.key = $6 AND EXISTS (SELECT 1 FROM replaced)
)
SELECT id FROM replaced`;

/** Binds {@link dedupeReplace}: $1 the holder, $2–$4 the new job's payload, $5 its window, $6 its key. */
export function dedupeReplaceParams(holder: string, job: ValidatedJob): unknown[] {
  return [
    holder,
    job.payload,
    job.payloadVersion,
    job.traceContext,
    job.dedupe!.windowMs,
    job.dedupe!.key,
  ];
}

/**
 * Points key $1 at job $2, just inserted, with mode $3, states $4 and a new window of $5 ms from
 * now. The key row is already locked by {@link dedupeHolder}.
 */
export const dedupeMove = (s: string): string => `
UPDATE ${s}.dedupe_keys
SET job_id = $2, mode = $3::smallint, states = $4::smallint, window_ms = $5::bigint,
    window_started_utc = now(), window_ends_utc = ${windowEnd('$3::smallint', '$5::bigint')}
WHERE key = $1`;

/** The key job $1 holds, if any (`getJob`). */
export const dedupeOfJob = (s: string): string => `
SELECT key, mode, states, window_ms, window_started_utc, window_ends_utc
FROM ${s}.dedupe_keys WHERE job_id = $1`;

/**
 * Retention batch of dedupe keys that hold nothing any more, at most $2 ($1, the age, is unused):
 * a throttle or debounce window that ended; a unique key whose holder is neither hot nor
 * succeeded within the key's window (a holder in the DLQ never holds a unique key). A key row
 * whose enqueue is under way is skipped (SKIP LOCKED), and that enqueue may find its key gone
 * only before it locked it, when it takes the key anew.
 */
export const applyRetentionDedupeKeys = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT k.key FROM ${s}.dedupe_keys k
  WHERE $1::float8 >= 0
    AND CASE WHEN k.mode = 3
          THEN NOT EXISTS (SELECT 1 FROM ${s}.jobs_hot h WHERE h.id = k.job_id)
           AND NOT EXISTS (SELECT 1 FROM ${s}.jobs_archive a
                           WHERE a.id = k.job_id AND a.finished_at_utc > now() - k.window_ms ${MS})
          ELSE k.window_ends_utc <= now() END
  LIMIT $2
  FOR UPDATE SKIP LOCKED)
DELETE FROM ${s}.dedupe_keys d USING chosen c WHERE d.key = c.key
RETURNING d.key`;
