/**
 * The claim (`fetchNextBatch`) and its steps: the budget and rate locks, the claim statement in its
 * two variants, the rate state of a short claim, and the rows an ambiguous earlier attempt took.
 * Each step names the lock and isolation it relies on; the design: docs/storage.md, "PostgreSQL:
 * the claim statement".
 */
import type { FetchRequest, HandledJobs } from '../../../interfaces/job.interface';
import { HOT_COLUMNS, HOT_TIMESTAMPS } from '../../shared/columns';
import { MS, START_LAG_MS, startLagUpsert } from './fragments';

/**
 * Step 1 of a claim, in the claim's transaction: locks the `Queues` rows of the budgeted and the
 * rate-limited queues among $1 (queue names), in name order so concurrent claimers cannot deadlock
 * on them, and returns their names (step 2 takes them as $10) and which of them are rate limited.
 *
 * Lock/isolation: `FOR NO KEY UPDATE` row locks held to COMMIT. Two claims that spend one queue's
 * `MaxWorkers` budget or its rate are serialised here; other queues take no lock at all. NO KEY
 * UPDATE is enough (it conflicts with itself and with `updateQueue`'s UPDATE) and, unlike FOR
 * UPDATE, does not block foreign-key share locks. This must be its own statement: in READ
 * COMMITTED a statement's snapshot is taken when it starts, so the active count and the rate state
 * in step 2 only see the previous claimer's committed rows if step 2 starts after this lock was
 * granted.
 */
export const fetchNextBatchLockBudgets = (s: string): string => `
SELECT name, rate_limit_max IS NOT NULL AS rate_limited FROM ${s}.queues
WHERE name = ANY ($1::text[]) AND (max_workers IS NOT NULL OR rate_limit_max IS NOT NULL)
ORDER BY name
FOR NO KEY UPDATE`;

/** Binds {@link fetchNextBatchLockBudgets}: $1 the queues the claim covers ({@link claimedQueues}). */
export function fetchNextBatchLockBudgetsParams(queues: readonly string[]): unknown[] {
  return [queues];
}

/** The rate window of `q` (its `rate_limit_per_ms`) as an interval. */
const RATE_PER = `q.rate_limit_per_ms ${MS}`;

/**
 * Whether the rate window of `q` has rolled over at `t`: none yet, or its first start is at least
 * one window old. The rolled-over window becomes the previous one.
 */
const RATE_ROLLED = (t: string): string =>
  `(q.rate_window_start IS NULL OR ${t} >= q.rate_window_start + ${RATE_PER})`;

/**
 * How many of `q`'s jobs may start at `t` under its rate limit (see {@link fetchNextBatch} and
 * `storage/shared/rate-window.ts`, which holds the same rule): `max` less the starts of the current
 * window, less those of the previous window while its last start is within one window of `t`.
 */
const RATE_ALLOWANCE = (t: string): string => `greatest(0, q.rate_limit_max
                - CASE WHEN ${RATE_ROLLED(t)}
                       THEN CASE WHEN q.rate_window_last > ${t} - ${RATE_PER}
                                 THEN coalesce(q.rate_window_count, 0) ELSE 0 END
                       ELSE coalesce(q.rate_window_count, 0)
                            + CASE WHEN q.rate_prev_last > ${t} - ${RATE_PER}
                                   THEN coalesce(q.rate_prev_count, 0) ELSE 0 END
                  END)`;

/**
 * The columns a claim returns, of `alias`: every hot column, the timestamps as whole epoch
 * milliseconds under their own names (`floor`, so an instant truncates to the millisecond as the
 * driver's own date parsing does). A claimed row is then read with no date text to parse
 * (`mapClaimedRow`, the claim's hot path).
 */
const CLAIM_RETURNED = (alias: string): string =>
  HOT_COLUMNS.map((c) =>
    HOT_TIMESTAMPS.includes(c)
      ? `floor(extract(epoch FROM ${alias}.${c}) * 1000)::float8 AS ${c}`
      : `${alias}.${c}`,
  ).join(',\n       ');

/**
 * Step 2 of a claim: claims up to $6 due Pending rows of the handled queues and types (payload
 * versions within each pair's range), starts the first $7 of them in claim order (status 2,
 * `attempt_count + 1`, start and heartbeat, as {@link markAsProcessing} leaves them) and leaves the
 * rest Fetched; returns them. Values: {@link fetchNextBatchParams}.
 *
 * Lock/isolation: READ COMMITTED with a fresh snapshot taken after step 1's locks, so a budgeted
 * queue's active count includes every claim committed before ours; rows are taken with
 * `FOR UPDATE SKIP LOCKED` inside a per-queue `LATERAL … LIMIT budget` (never waited for, re-checked
 * after the lock); `picked` and `runnable` are MATERIALIZED (evaluated once). The `unbudgeted`
 * variant runs alone in autocommit and skips every queue with a budget or a rate limit. The
 * claim's transaction commits with `synchronous_commit = off`. Why each part has this shape (cost,
 * order and ties, the TID join, rate windows, the relaxed commit, the start bucket):
 * docs/storage.md, "PostgreSQL: the claim statement, part by part".
 */
export const fetchNextBatch = (
  s: string,
  variant: 'budgeted' | 'unbudgeted' = 'budgeted',
): string => `
WITH relaxed AS MATERIALIZED (
  SELECT set_config('synchronous_commit', 'off', true) AS setting
),
handled (queue, type, min_version, max_version) AS (
  SELECT h.queue, NULL::text, NULL::int, NULL::int FROM unnest($3::text[]) AS h(queue)
  UNION ALL
  SELECT p.queue, p.type, p.min_version, p.max_version
  FROM unnest($4::text[], $5::text[], $8::int[], $9::int[]) AS p(queue, type, min_version, max_version)
),
wanted AS (
  SELECT queue,
         CASE WHEN bool_or(type IS NULL) THEN NULL ELSE array_agg(type) END AS types,
         array_agg(min_version) AS min_versions,
         array_agg(max_version) AS max_versions
  FROM handled CROSS JOIN relaxed
  GROUP BY queue
),
runnable AS MATERIALIZED (${
  variant === 'budgeted'
    ? `
  SELECT q.name, w.types, w.min_versions, w.max_versions,
         least(
           CASE WHEN q.max_workers IS NULL THEN $6::int
                ELSE greatest(0, least($6::int, q.max_workers - (
                       SELECT count(*) FROM ${s}.jobs_hot a
                       WHERE a.status IN (1, 2) AND a.queue = q.name)))::int
           END,
           CASE WHEN q.rate_limit_max IS NULL THEN $6::int
                WHEN $7::int < $6::int OR NOT (q.name = ANY ($10::text[])) THEN 0
                ELSE ${RATE_ALLOWANCE('statement_timestamp()')}
           END) AS budget
  FROM wanted w
  JOIN ${s}.queues q ON q.name = w.queue
  WHERE NOT q.is_paused AND q.is_active`
    : `
  SELECT q.name, w.types, w.min_versions, w.max_versions, $6::int AS budget
  FROM wanted w
  JOIN ${s}.queues q ON q.name = w.queue
  WHERE NOT q.is_paused AND q.is_active AND q.max_workers IS NULL AND q.rate_limit_max IS NULL`
}
),
picked AS MATERIALIZED (
  SELECT c.id, c.tid,
         row_number() OVER (ORDER BY c.priority DESC, c.due, c.id COLLATE "C") AS rn
  FROM runnable r
  CROSS JOIN LATERAL (
    SELECT j.id, j.ctid AS tid, j.priority, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due
    FROM ${s}.jobs_hot j
    WHERE j.status = 0
      AND j.queue = r.name
      AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
      AND (r.types IS NULL OR EXISTS (
        SELECT 1 FROM unnest(r.types, r.min_versions, r.max_versions) AS t(type, lo, hi)
        WHERE t.type = j.type AND j.payload_version BETWEEN t.lo AND t.hi))
    ORDER BY j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"
    LIMIT r.budget
    FOR UPDATE SKIP LOCKED
  ) c
  ORDER BY c.priority DESC, c.due, c.id COLLATE "C"
  LIMIT $6
),
claimed AS (
  UPDATE ${s}.jobs_hot j
  SET status = CASE WHEN p.rn <= $7 THEN 2 ELSE 1 END,
      attempt_count = CASE WHEN p.rn <= $7 THEN j.attempt_count + 1 ELSE j.attempt_count END,
      started_at_utc = CASE WHEN p.rn <= $7 THEN statement_timestamp() ELSE j.started_at_utc END,
      heartbeat_utc = CASE WHEN p.rn <= $7 THEN statement_timestamp() ELSE j.heartbeat_utc END,
      worker_id = $1, lease_id = $2, last_updated_utc = statement_timestamp()
  FROM picked p
  WHERE j.ctid = p.tid AND j.id = p.id AND j.status = 0
  RETURNING j.*
),${
  variant === 'budgeted'
    ? `
spent AS (
  UPDATE ${s}.queues q
  SET rate_prev_count = CASE WHEN ${RATE_ROLLED('statement_timestamp()')}
                             THEN q.rate_window_count ELSE q.rate_prev_count END,
      rate_prev_last = CASE WHEN ${RATE_ROLLED('statement_timestamp()')}
                            THEN q.rate_window_last ELSE q.rate_prev_last END,
      rate_window_count = CASE WHEN ${RATE_ROLLED('statement_timestamp()')}
                               THEN x.n ELSE q.rate_window_count + x.n END,
      rate_window_start = CASE WHEN ${RATE_ROLLED('statement_timestamp()')}
                               THEN statement_timestamp() ELSE q.rate_window_start END,
      rate_window_last = statement_timestamp()
  FROM (SELECT c.queue, count(*)::int AS n FROM claimed c WHERE c.status = 2 GROUP BY c.queue) x
  WHERE q.name = x.queue AND q.rate_limit_max IS NOT NULL AND q.name = ANY ($10::text[])
),`
    : ''
}
bucket AS (${startLagUpsert(s, `(SELECT c.queue, ${START_LAG_MS('c')} AS lag_ms FROM claimed c WHERE c.status = 2)`)}
)
SELECT ${CLAIM_RETURNED('c')}
FROM claimed c`;

/**
 * The queues a claim covers: those with a queue-wide handler, and the queues of the exact
 * `(queue, type)` pairs of the others.
 */
export function claimedQueues(handled: HandledJobs): string[] {
  const { wide, pairs } = splitHandled(handled);
  return [...new Set([...wide, ...pairs.map((p) => p.queue)])];
}

/** Queue-wide handlers, and the exact pairs of the queues that have none. */
function splitHandled(handled: HandledJobs): { wide: string[]; pairs: HandledJobs['types'] } {
  const wide = [...new Set(handled.queues)];
  const wideSet = new Set(wide);
  return { wide, pairs: handled.types.filter((p) => !wideSet.has(p.queue)) };
}

/**
 * Binds {@link fetchNextBatch}: $1 worker id, $2 lease id, $3 queues with a queue-wide handler,
 * $4/$5 the queue and type of each exact `(queue, type)` pair (parallel arrays), $6 the limit,
 * $7 how many of the claimed rows (the first in claim order) start at once, $8/$9 the lowest and
 * highest payload version each pair's handler runs (parallel to $4/$5; 1 when it says none).
 * The budgeted variant takes $10 too: {@link fetchNextBatchBudgetedParams}.
 */
export function fetchNextBatchParams(
  request: Pick<FetchRequest, 'workerId' | 'leaseId' | 'limit' | 'handled'> & { start: number },
): unknown[] {
  const { wide, pairs } = splitHandled(request.handled);
  return [
    request.workerId,
    request.leaseId,
    wide,
    pairs.map((p) => p.queue),
    pairs.map((p) => p.type),
    request.limit,
    request.start,
    pairs.map((p) => p.minVersion ?? 1),
    pairs.map((p) => p.maxVersion ?? 1),
  ];
}

/** Binds the budgeted variant of {@link fetchNextBatch}: {@link fetchNextBatchParams}, then $10 the queues step 1 locked. */
export function fetchNextBatchBudgetedParams(
  request: Parameters<typeof fetchNextBatchParams>[0],
  locked: readonly string[],
): unknown[] {
  return [...fetchNextBatchParams(request), locked];
}

/**
 * Step 3 of a claim that took fewer rows than asked while a queue it locked is rate limited: the
 * rate state of those queues ($1) and the database clock, both as epoch milliseconds, from which
 * the store computes how long until the first of them may start a job again
 * (`storage/shared/rate-window.ts`). Read in the claim's transaction, after its spend, under the
 * locks of step 1.
 */
export const fetchNextBatchRateState = (s: string): string => `
SELECT rate_limit_max AS max, rate_limit_per_ms AS per_ms, rate_window_count AS window_count,
       rate_prev_count AS prev_count,
       (extract(epoch FROM rate_window_start) * 1000)::float8 AS window_start_ms,
       (extract(epoch FROM rate_window_last) * 1000)::float8 AS window_last_ms,
       (extract(epoch FROM rate_prev_last) * 1000)::float8 AS prev_last_ms,
       (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms
FROM ${s}.queues
WHERE name = ANY ($1::text[]) AND rate_limit_max IS NOT NULL`;

/** Binds {@link fetchNextBatchRateState}: $1 the rate-limited queues step 1 locked. */
export function fetchNextBatchRateStateParams(queues: readonly string[]): unknown[] {
  return [queues];
}

/**
 * Rows a claim with this lease already took: a retry after an ambiguous commit (connection lost
 * after COMMIT) returns them instead of leaving them to `recoverAbandoned` (Fetched) or the zombie
 * sweep (started by the claim). $1 worker, $2 lease. Only that claim can have set this lease, and
 * its caller never received the rows, so nothing else can have moved them on.
 */
export const fetchNextBatchClaimed = (s: string): string => `
SELECT ${CLAIM_RETURNED('j')}
FROM ${s}.jobs_hot j
WHERE j.status IN (1, 2) AND j.worker_id = $1 AND j.lease_id = $2`;

/** Binds {@link fetchNextBatchClaimed}: $1 worker id, $2 lease id of the claim being retried. */
export function fetchNextBatchClaimedParams(workerId: string, leaseId: string): unknown[] {
  return [workerId, leaseId];
}
