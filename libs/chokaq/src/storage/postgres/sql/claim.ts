/**
 * The claim (`fetchNextBatch`) and its steps: the budget and rate locks, the claim statement in its
 * two variants, the rate state of a short claim, and the rows an ambiguous earlier attempt took.
 * Each step names the lock and isolation it relies on; the design: docs/storage.md, "PostgreSQL:
 * the claim statement".
 */
import type { FetchRequest, HandledJobs } from '../../../interfaces/job.interface';
import { HOT_TIMESTAMPS, hotColumnsExcept } from '../../shared/columns';
import { typesOfQueue } from '../../shared/groups';
import { EPOCH_MS, GROUPED, MS, START_LAG_MS, startLagUpsert } from './fragments';

/**
 * Step 1 of a claim, in the claim's transaction: locks the `Queues` rows of the budgeted, the
 * rate-limited and the grouped queues among $1 (queue names), in name order so concurrent
 * claimers cannot deadlock on them, and returns their names (step 2 takes them as $10), which of
 * them are rate limited and which are grouped (each of those is claimed by
 * {@link fetchNextGroupedBatch}, in the same transaction).
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
SELECT name, rate_limit_max IS NOT NULL AS rate_limited,
       (group_concurrency IS NOT NULL OR group_rate_max IS NOT NULL) AS grouped
FROM ${s}.queues
WHERE name = ANY ($1::text[])
  AND (max_workers IS NOT NULL OR rate_limit_max IS NOT NULL OR group_concurrency IS NOT NULL
       OR group_rate_max IS NOT NULL)
ORDER BY name
FOR NO KEY UPDATE`;

/** Binds {@link fetchNextBatchLockBudgets}: $1 the queues the claim covers ({@link claimedQueues}). */
export function fetchNextBatchLockBudgetsParams(queues: readonly string[]): unknown[] {
  return [queues];
}

/**
 * A rate limit in SQL: `max` and `per` (an interval) are its settings, `st` the alias of the row
 * that holds its window state (`rate_window_start`, `rate_window_count`, `rate_window_last`,
 * `rate_prev_count`, `rate_prev_last`): a queue's own, or a group's (`job_groups`).
 */
interface RateSql {
  max: string;
  per: string;
  st: string;
}

/** A queue's own rate limit, of the `Queues` row `q`. */
const QUEUE_RATE: RateSql = { max: 'q.rate_limit_max', per: `q.rate_limit_per_ms ${MS}`, st: 'q' };

/**
 * Whether the rate window has rolled over at `t`: none yet, or its first start is at least one
 * window old. The rolled-over window becomes the previous one.
 */
const RATE_ROLLED = (t: string, r: RateSql = QUEUE_RATE): string =>
  `(${r.st}.rate_window_start IS NULL OR ${t} >= ${r.st}.rate_window_start + ${r.per})`;

/**
 * How many jobs may start at `t` under the rate limit (see {@link fetchNextBatch} and
 * `storage/shared/rate-window.ts`, which holds the same rule): `max` less the starts of the current
 * window, less those of the previous window while its last start is within one window of `t`.
 */
const RATE_ALLOWANCE = (t: string, r: RateSql = QUEUE_RATE): string => `greatest(0, ${r.max}
                - CASE WHEN ${RATE_ROLLED(t, r)}
                       THEN CASE WHEN ${r.st}.rate_window_last > ${t} - ${r.per}
                                 THEN coalesce(${r.st}.rate_window_count, 0) ELSE 0 END
                       ELSE coalesce(${r.st}.rate_window_count, 0)
                            + CASE WHEN ${r.st}.rate_prev_last > ${t} - ${r.per}
                                   THEN coalesce(${r.st}.rate_prev_count, 0) ELSE 0 END
                  END)`;

/**
 * The SET list that spends `n` starts at `t` of the rate window held by `st` (which must be the
 * updated row's own alias): a rolled-over window becomes the previous one and a new one starts.
 */
const RATE_SPEND = (
  t: string,
  n: string,
  r: RateSql = QUEUE_RATE,
  guard: string | null = null,
): string => {
  const rolled = RATE_ROLLED(t, r);
  const set = (column: string, value: string): string =>
    `${column} = ${guard === null ? value : `CASE WHEN ${guard} THEN ${value} ELSE ${r.st}.${column} END`}`;
  return [
    set(
      'rate_prev_count',
      `CASE WHEN ${rolled} THEN ${r.st}.rate_window_count ELSE ${r.st}.rate_prev_count END`,
    ),
    set(
      'rate_prev_last',
      `CASE WHEN ${rolled} THEN ${r.st}.rate_window_last ELSE ${r.st}.rate_prev_last END`,
    ),
    set(
      'rate_window_count',
      `CASE WHEN ${rolled} THEN ${n} ELSE ${r.st}.rate_window_count + ${n} END`,
    ),
    set('rate_window_start', `CASE WHEN ${rolled} THEN ${t} ELSE ${r.st}.rate_window_start END`),
    set('rate_window_last', t),
  ].join(',\n      ');
};

/** The Pending rows of a queue that no group limit applies to: a queue without group limits. */
const UNGROUPED = 'q.group_concurrency IS NULL AND q.group_rate_max IS NULL';

/**
 * The columns a claim returns, of `alias`: every hot column but the two of the dependency graph (a
 * claimed row is Pending: it waits on nothing, and whether others wait on it is the moves'
 * business), the timestamps as whole epoch milliseconds under their own names ({@link EPOCH_MS}).
 * A claimed row is then read with no date text to parse (`mapClaimedRow`, the claim's hot path).
 */
const CLAIM_RETURNED = (alias: string): string =>
  hotColumnsExcept('waiting_on', 'has_dependents')
    .map((c) =>
      HOT_TIMESTAMPS.includes(c) ? `${EPOCH_MS(`${alias}.${c}`)} AS ${c}` : `${alias}.${c}`,
    )
    .join(',\n       ');

/** A claim's order within a queue, of the hot row `j`: priority, due time, id (byte order). */
const CLAIM_ORDER = (j: string): string =>
  `${j}.priority DESC, coalesce(${j}.scheduled_at_utc, ${j}.enqueued_at_utc), ${j}.id COLLATE "C"`;

/**
 * The due Pending rows of the runnable queue `r` (of `jobs_hot j`) of a type and payload version
 * this worker runs: a range of `ix_jobs_hot_pending`, with the type test as a residual predicate.
 */
const DUE_PENDING_OF_R = `j.status = 0
        AND j.queue = r.name
        AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
        AND (r.types IS NULL OR EXISTS (
          SELECT 1 FROM unnest(r.types, r.min_versions, r.max_versions) AS t(type, lo, hi)
          WHERE t.type = j.type AND j.payload_version BETWEEN t.lo AND t.hi))`;

/**
 * Step 2 of a claim: claims up to $6 due Pending rows of the handled queues and types (payload
 * versions within each pair's range), starts the first $7 of them in claim order (status 2,
 * `attempt_count + 1`, start and heartbeat, as {@link markAsProcessing} leaves them) and leaves the
 * rest Fetched; returns them. Values: {@link fetchNextBatchParams}.
 *
 * Lock/isolation: READ COMMITTED with a fresh snapshot taken after step 1's locks, so a budgeted
 * queue's active count includes every claim committed before ours; rows are taken with
 * `FOR UPDATE SKIP LOCKED` inside a per-queue `LATERAL` (never waited for, re-checked after the
 * lock) that locks only the queue's share of the claim: with more than one runnable queue,
 * `shares` reads each queue's best `budget` rows without locks and counts each queue's rows among
 * the best $6 across queues (one queue: its budget); `picked`, `runnable` and `shares` are
 * MATERIALIZED (evaluated once; `shares` only when read). The `unbudgeted`
 * variant runs alone in autocommit and skips every queue with a budget or a rate limit. The
 * claim's transaction commits with `synchronous_commit = off`. Why each part has this shape (cost,
 * order and ties, the TID join, rate windows, the relaxed commit, the start bucket, the rows it locks):
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
  WHERE NOT q.is_paused AND q.is_active AND ${UNGROUPED}`
    : `
  SELECT q.name, w.types, w.min_versions, w.max_versions, $6::int AS budget
  FROM wanted w
  JOIN ${s}.queues q ON q.name = w.queue
  WHERE NOT q.is_paused AND q.is_active AND q.max_workers IS NULL AND q.rate_limit_max IS NULL
    AND ${UNGROUPED}`
}
),
shares AS MATERIALIZED (
  SELECT b.queue, count(*)::int AS share
  FROM (
    SELECT r.name AS queue
    FROM runnable r
    CROSS JOIN LATERAL (
      SELECT j.priority, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due, j.id
      FROM ${s}.jobs_hot j
      WHERE ${DUE_PENDING_OF_R}
      ORDER BY ${CLAIM_ORDER('j')}
      LIMIT r.budget
    ) c
    ORDER BY c.priority DESC, c.due, c.id COLLATE "C"
    LIMIT $6
  ) b
  GROUP BY b.queue
),
picked AS MATERIALIZED (
  SELECT c.id, c.tid,
         row_number() OVER (ORDER BY c.priority DESC, c.due, c.id COLLATE "C") AS rn
  FROM runnable r
  CROSS JOIN LATERAL (
    SELECT j.id, j.ctid AS tid, j.priority, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due
    FROM ${s}.jobs_hot j
    WHERE ${DUE_PENDING_OF_R}
    ORDER BY ${CLAIM_ORDER('j')}
    LIMIT CASE WHEN (SELECT count(*) FROM runnable) = 1 THEN r.budget
               ELSE coalesce((SELECT x.share FROM shares x WHERE x.queue = r.name), 0) END
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
  SET ${RATE_SPEND('statement_timestamp()', 'x.n')}
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

/** A group's rate limit: the settings of the grouped queue `gq`, the window state of `g` (`job_groups`). */
const GROUP_RATE: RateSql = {
  max: 'gq.group_rate_max',
  per: `gq.group_rate_per_ms ${MS}`,
  st: 'g',
};

/** Whether the hot row `j` may run here: due, of a type (and payload version) this worker runs ($5/$6/$7; NULL: every type). */
const GROUP_ROW_READY = (
  j: string,
): string => `coalesce(${j}.scheduled_at_utc, ${j}.enqueued_at_utc) <= now()
        AND ($5::text[] IS NULL OR EXISTS (
          SELECT 1 FROM unnest($5::text[], $6::int[], $7::int[]) AS t(type, lo, hi)
          WHERE t.type = ${j}.type AND ${j}.payload_version BETWEEN t.lo AND t.hi))`;

/**
 * The head of the first group of queue $3 with a Pending row after `after` (of any group when
 * `after` is null): the group's key and its first Pending row in claim order, with whether that row
 * may run here (`ready`), and `wrapped`, the walk's flag after this step. One descent of
 * `ix_jobs_hot_group_pending`, whose order this is: groups with nothing Pending are not in it, so
 * a drained group costs nothing.
 */
const GROUP_HEAD = (s: string, after: string | null, wrapped: string): string => `(
      SELECT j.group_key AS k, ${wrapped} AS wrapped, j.id, j.ctid AS tid, j.priority,
             coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due, ${GROUP_ROW_READY('j')} AS ready
      FROM ${s}.jobs_hot j
      WHERE j.status = 0 AND j.queue = $3
        AND ${after === null ? 'j.group_key IS NOT NULL' : `j.group_key > ${after}`}
      ORDER BY j.group_key, ${CLAIM_ORDER('j')}
      LIMIT 1)`;

/**
 * The next group the walk visits, after `after` (`wrapped`: it already went round from the first
 * group once): the head ({@link GROUP_HEAD}) of the first group after it, else, once, of the first
 * group of all; no row when there is no group left. `UNION ALL … LIMIT 1` reads its branches in
 * order and stops at the first row, so the second descent is made only when the first finds none.
 */
const NEXT_VISIT = (s: string, after: string, wrapped: string): string => `LATERAL (
    ${GROUP_HEAD(s, after, wrapped)}
    UNION ALL
    (SELECT * FROM ${GROUP_HEAD(s, null, 'true')} h WHERE NOT ${wrapped})
    LIMIT 1
  )`;

/**
 * The due Pending rows of group `k` of queue $3 of a type (and payload version) this worker runs
 * ({@link GROUP_ROW_READY}), in the group's claim order (priority, due time, id): a range of
 * `ix_jobs_hot_group_pending`, read in index order, so `LIMIT 1` stops at the first.
 */
const GROUP_DUE = (s: string, k: string): string => `
      SELECT j.id, j.ctid AS tid, j.priority, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) AS due
      FROM ${s}.jobs_hot j
      WHERE j.status = 0 AND j.queue = $3 AND j.group_key = ${k}
        AND ${GROUP_ROW_READY('j')}
      ORDER BY ${CLAIM_ORDER('j')}`;

/**
 * A visited group, the row `v` of {@link NEXT_VISIT}: its first due row of a type this worker
 * runs (the head, when it is `ready`, else the first of {@link GROUP_DUE}, read only then; all
 * NULL when it has none) and how many of its jobs may start now (`room`): none without such a row
 * (a group whose jobs are all scheduled later, or of other types, is passed over rather than
 * counted as found), else the queue's budget, less what the group concurrency leaves (its Fetched
 * and Processing rows, `ix_jobs_hot_active (queue, group_key)`), less what the group's rate window
 * allows (no `job_groups` row: the whole of `max`). The first row is what `took` starts first of
 * the group, so a claim that takes one row per group reads each group's rows once, and in the
 * common case (the head is due) one descent finds both the group and that row.
 */
const GROUP_VISIT = (s: string, v: string): string => `LATERAL (
    SELECT f.id, f.tid, f.priority, f.due,
           CASE WHEN f.id IS NULL THEN 0
           ELSE least(gq.budget,
             CASE WHEN gq.group_concurrency IS NULL THEN gq.budget
                  ELSE greatest(0, gq.group_concurrency - (
                         SELECT count(*) FROM ${s}.jobs_hot a
                         WHERE a.status IN (1, 2) AND a.queue = $3 AND a.group_key = ${v}.k))::int
             END,
             CASE WHEN gq.group_rate_max IS NULL THEN gq.budget
                  ELSE coalesce((SELECT ${RATE_ALLOWANCE('statement_timestamp()', GROUP_RATE)}
                                 FROM ${s}.job_groups g WHERE g.queue = $3 AND g.group_key = ${v}.k),
                                gq.group_rate_max)
             END) END AS room
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
      SELECT ${v}.id, ${v}.tid, ${v}.priority, ${v}.due WHERE ${v}.ready
      UNION ALL
      (${GROUP_DUE(s, `${v}.k`)}
       LIMIT 1)
      LIMIT 1
    ) f ON true
    OFFSET 0
  )`;

/**
 * Step 2 of a claim, for one grouped queue ($3, whose row step 1 locked): starts up to $4 of its
 * due Pending rows, taking turns across its groups, within each group's concurrency and rate
 * limit and the queue's own budget and rate; every row it takes starts (a grouped queue never
 * leaves rows Fetched or starts ahead). Values: {@link fetchNextGroupedBatchParams}.
 *
 * The turns: `walk` visits the groups that have Pending rows in key order (byte order), starting
 * after the queue's `group_cursor` and wrapping round once, one index descent per group
 * (`min(group_key) > previous` on `ix_jobs_hot_group_pending`: groups with nothing Pending are not
 * in that index, so a drained group costs nothing), and stops once it found as many groups with
 * room and a due job as the budget (each of them gets at least one row) or after $8 visits. Each
 * visited group gives up to its room of rows in its own claim order (priority, due time, id); the
 * rows are then taken round-robin — every group's first row, then every group's second — up to
 * the budget. With F groups found, round-robin takes a group's k-th row only if the budget exceeds
 * the F first rows and the group's own k − 2 before it, so no group gives more than budget − F + 1
 * rows, and none is read (`took`'s LIMIT): a walk that found a group per free slot reads one row
 * of each. The cursor moves to the last group visited, so
 * the next claim starts with the group after it: every group with due rows and room is served
 * within one round of the walk, however long another group's backlog is.
 *
 * Lock/isolation: READ COMMITTED, in the claim's transaction after step 1's row lock on the
 * queue, which serialises every grouped claim of the queue (the running counts and the rate
 * windows are read after the previous claimer committed). No other claim takes a grouped queue's
 * rows (both variants of {@link fetchNextBatch} skip grouped queues), so the candidates are read
 * without row locks — locking every group's candidates would write a lock into far more rows
 * than the claim takes — and the UPDATE re-checks `status = 0` on each row it starts (a row an
 * operator moved meanwhile is skipped; one an operator is editing is waited for, then
 * re-checked). `job_groups` rows are written only here and by retention, under that lock.
 *
 * The `alone` variant is the whole claim of one grouped queue in one autocommit statement (one
 * round trip where the transaction takes four): `locked` takes the queue's row lock, and `fresh`
 * compares the version it locked with the version the statement's snapshot sees. In READ COMMITTED
 * a statement's snapshot is taken when it starts, before the lock is granted; a locked row that a
 * transaction committed since has a newer version than the snapshot's (`FOR NO KEY UPDATE` waits
 * for that transaction, then locks and returns the newest version), and every grouped claim that
 * walked a group updates the queue's row (`turned`). So when the two versions are one, no claim
 * committed between the snapshot and the lock, and the running counts and rate windows the
 * snapshot shows are those the transaction would read; when they differ, the statement writes
 * nothing and its one row says so (`current` false) and the store claims in the transaction
 * instead. Its first columns: `current`, `grouped` (the queue still has group limits) and
 * `rate_limited` (the queue has a rate limit of its own), on every row; no row at all when the
 * queue has no row; one row with a NULL `id` when it started nothing.
 */
export const fetchNextGroupedBatch = (
  s: string,
  variant: 'locked' | 'alone' = 'locked',
): string => `
WITH RECURSIVE relaxed AS MATERIALIZED (
  SELECT set_config('synchronous_commit', 'off', true) AS setting
),${
  variant === 'alone'
    ? `
locked AS MATERIALIZED (
  SELECT q.ctid AS tid, ${GROUPED('q')} AS grouped, q.rate_limit_max IS NOT NULL AS rate_limited
  FROM ${s}.queues q
  WHERE q.name = $3
  FOR NO KEY UPDATE
),
fresh AS MATERIALIZED (
  SELECT l.tid = (SELECT q.ctid FROM ${s}.queues q WHERE q.name = $3) AS current,
         l.grouped, l.rate_limited
  FROM locked l
),`
    : ''
}
gq AS MATERIALIZED (
  SELECT q.name, q.group_concurrency, q.group_rate_max, q.group_rate_per_ms,
         coalesce(q.group_cursor, '') AS cursor,
         least(
           CASE WHEN q.max_workers IS NULL THEN $4::int
                ELSE greatest(0, least($4::int, q.max_workers - (
                       SELECT count(*) FROM ${s}.jobs_hot a
                       WHERE a.status IN (1, 2) AND a.queue = q.name)))::int
           END,
           CASE WHEN q.rate_limit_max IS NULL THEN $4::int
                ELSE ${RATE_ALLOWANCE('statement_timestamp()')}
           END) AS budget
  FROM ${s}.queues q CROSS JOIN relaxed${variant === 'alone' ? ' CROSS JOIN fresh f' : ''}
  WHERE q.name = $3 AND NOT q.is_paused AND q.is_active
    AND ${GROUPED('q')}${variant === 'alone' ? ' AND f.current' : ''}
),
walk (k, n, wrapped, id, tid, priority, due, room, found) AS (
  SELECT v.k, 1, v.wrapped, r.id, r.tid, r.priority, r.due, r.room, sign(r.room)::int
  FROM gq
  CROSS JOIN ${NEXT_VISIT(s, 'gq.cursor', 'false')} v
  CROSS JOIN ${GROUP_VISIT(s, 'v')} r
  WHERE gq.budget > 0
  UNION ALL
  SELECT v.k, w.n + 1, v.wrapped, r.id, r.tid, r.priority, r.due, r.room, w.found + sign(r.room)::int
  FROM walk w
  CROSS JOIN gq
  CROSS JOIN ${NEXT_VISIT(s, 'w.k', 'w.wrapped')} v
  CROSS JOIN ${GROUP_VISIT(s, 'v')} r
  WHERE w.n < $8 AND w.found < gq.budget AND NOT (v.wrapped AND v.k > gq.cursor)
),
took AS MATERIALIZED (
  SELECT w.id, w.tid, w.n, 1::bigint AS rn
  FROM walk w
  WHERE w.room > 0
  UNION ALL
  SELECT t.id, t.tid, w.n,
         1 + row_number() OVER (PARTITION BY w.n ORDER BY t.priority DESC, t.due, t.id COLLATE "C") AS rn
  FROM walk w
  CROSS JOIN LATERAL (${GROUP_DUE(s, 'w.k')}
    OFFSET 1
    LIMIT least(w.room, (SELECT gq.budget FROM gq) - (SELECT max(x.found) FROM walk x) + 1) - 1
  ) t
  WHERE w.room > 1
),
picked AS MATERIALIZED (
  SELECT t.id, t.tid FROM took t
  ORDER BY t.rn, t.n
  LIMIT (SELECT budget FROM gq)
),
claimed AS (
  UPDATE ${s}.jobs_hot j
  SET status = 2, attempt_count = j.attempt_count + 1, started_at_utc = statement_timestamp(),
      heartbeat_utc = statement_timestamp(), worker_id = $1, lease_id = $2,
      last_updated_utc = statement_timestamp()
  FROM picked p
  WHERE j.ctid = p.tid AND j.id = p.id AND j.status = 0
  RETURNING j.*
),
turned AS (
  UPDATE ${s}.queues q
  SET group_cursor = (SELECT w.k FROM walk w ORDER BY w.n DESC LIMIT 1),
      ${RATE_SPEND('statement_timestamp()', 'x.n', QUEUE_RATE, 'q.rate_limit_max IS NOT NULL AND x.n > 0')}
  FROM (SELECT count(*)::int AS n FROM claimed) x
  WHERE q.name = $3 AND EXISTS (SELECT 1 FROM walk)
),
spent AS (
  INSERT INTO ${s}.job_groups AS g (queue, group_key, rate_window_start, rate_window_count,
                                    rate_window_last)
  SELECT $3, x.group_key, statement_timestamp(), x.n, statement_timestamp()
  FROM (SELECT c.group_key, count(*)::int AS n FROM claimed c GROUP BY c.group_key) x
  CROSS JOIN gq
  WHERE gq.group_rate_max IS NOT NULL
  ORDER BY x.group_key
  ON CONFLICT (queue, group_key) DO UPDATE
  SET ${RATE_SPEND('statement_timestamp()', 'excluded.rate_window_count', { ...GROUP_RATE, per: `(SELECT gq.group_rate_per_ms ${MS} FROM gq)` })}
),
bucket AS (${startLagUpsert(s, `(SELECT c.queue, ${START_LAG_MS('c')} AS lag_ms FROM claimed c)`)}
)${
  variant === 'alone'
    ? `
SELECT f.current, f.grouped, f.rate_limited,
       ${CLAIM_RETURNED('c')}
FROM fresh f
LEFT JOIN claimed c ON true`
    : `
SELECT ${CLAIM_RETURNED('c')}
FROM claimed c`
}`;

/**
 * Binds {@link fetchNextGroupedBatch}: $1 worker id, $2 lease id, $3 the grouped queue, $4 how
 * many rows to start, $5/$6/$7 the types the worker handles in that queue with their lowest and
 * highest payload version (parallel arrays; $5 NULL when it handles the whole queue), $8 the most
 * groups one claim visits.
 */
export function fetchNextGroupedBatchParams(
  request: Pick<FetchRequest, 'workerId' | 'leaseId' | 'handled'>,
  queue: string,
  start: number,
  maxVisits: number,
): unknown[] {
  const mine = typesOfQueue(request.handled, queue);
  return [
    request.workerId,
    request.leaseId,
    queue,
    start,
    mine?.map((p) => p.type) ?? null,
    mine?.map((p) => p.minVersion ?? 1) ?? null,
    mine?.map((p) => p.maxVersion ?? 1) ?? null,
    maxVisits,
  ];
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
