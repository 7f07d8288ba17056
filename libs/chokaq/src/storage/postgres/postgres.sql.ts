/**
 * Every SQL statement of the PostgreSQL dialect, one named function per statement, each a function of
 * the (already validated and quoted) schema identifier `s`.
 *
 * Rules that hold for every statement here (SPEC §2, §3):
 * - Status codes (0–6), outcome codes and failure reasons fixed by the statement are **literals** in
 *   the SQL text, so the partial indexes (`WHERE status = 0`, …) match even under generic plans.
 *   Every value that comes from outside is a `$n` parameter; identifiers come only from the validated
 *   schema name and from whitelisted column names.
 * - Times come from the database clock: `now()` (transaction start) for stored times, relative
 *   inputs are milliseconds added in SQL (`now() + $n * interval '1 millisecond'`).
 * - Unless a comment says otherwise, a statement runs in READ COMMITTED (the PostgreSQL default) as
 *   its own implicit transaction. A single statement with data-modifying CTEs is atomic: all its
 *   CTEs commit or roll back together, which is how every move is "one transaction".
 * - Batch inputs travel as a few `unnest($n::text[], …)` arrays, so a statement has a fixed number
 *   of bind parameters however many rows it touches (the protocol limit is 65,535).
 *
 * @see https://www.postgresql.org/docs/15/sql-select.html#SQL-FOR-UPDATE-SHARE
 * @see https://www.postgresql.org/docs/15/transaction-iso.html#XACT-READ-COMMITTED
 */
import { createHash } from 'node:crypto';
import { DlqFilter, HistoryFilter, ActiveFilter } from '../../interfaces/job-view.interface';
import type { ListRequest } from '../../validation/validate-list';
import { MAX_ATTEMPT_ERROR } from '../../validation/limits';
import { attemptOutcomeSql } from '../shared/attempts';
import { hotColumnsExcept } from '../shared/columns';
import { escapeLike } from '../shared/escape-like';
import { ERROR_PREFIX_CHARS, LIST_SORT_KEY } from '../shared/page';
import { AUDIT_TARGET_KEY_LENGTH } from './postgres.schema';

/** Quotes a schema name that already matched `^[A-Za-z_][A-Za-z0-9_]{0,62}$`. */
export function quoteSchema(schema: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new Error(`Refusing to build SQL for an unvalidated schema name: ${schema}`);
  }
  return `"${schema}"`;
}

/**
 * The `LISTEN/NOTIFY` channel woken on enqueue: the schema name itself, so two ChokaQ installations
 * in one database (two schemas) never wake each other. Payload: the queue name.
 */
export function enqueueChannel(schema: string): string {
  return schema;
}

/**
 * The channel told about cancellation requests of Processing jobs (payload: the job id, one
 * notification per job). Schema names cannot contain `:`, so it never collides with an enqueue
 * channel. A name longer than 56 characters would not fit PostgreSQL's 63-byte channel limit with
 * the suffix, so it is cut and a hash of the whole name added: two schemas sharing a long prefix
 * must not share this channel, or a worker would abort its own job that has the other's cancelled
 * id.
 */
export function cancelChannel(schema: string): string {
  if (schema.length <= 56) return `${schema}:cancel`;
  const hash = createHash('sha256').update(schema).digest('hex').slice(0, 8);
  return `${schema.slice(0, 47)}_${hash}:cancel`;
}

/** Hot columns copied unchanged into the archive (status is virtual there; heartbeat and cancel flags end with the run). */
const ARCHIVE_COPIED = hotColumnsExcept('status', 'heartbeat_utc', 'cancel_requested_utc');

/** Hot columns copied unchanged into the DLQ (all but `status`, which becomes the DLQ status). */
const DLQ_COPIED = hotColumnsExcept('status');

const cols = (list: readonly string[], alias?: string): string =>
  list.map((c) => (alias ? `${alias}.${c}` : c)).join(', ');

const MS = "* interval '1 millisecond'";

// ------------------------------------------------------------------------------------------ metric buckets

/**
 * Metric-bucket upsert of one outcome; `source` yields (queue, duration_ms) per moved row. One row per
 * (minute, queue, outcome, reason) and per statement (grouped first, so ON CONFLICT never meets a row
 * twice); concurrent movers serialise on that row only for this upsert. Buckets are one minute wide
 * (`METRIC_BUCKET_MS`): a day is 1,440 rows per queue and outcome, which a throughput series over
 * it reads in a few milliseconds.
 */
const bucketUpsert = (s: string, outcome: number, reasonSql: string, source: string): string => `
  INSERT INTO ${s}.metric_buckets AS b (
    bucket_utc, queue, outcome, failure_reason,
    completed_count, duration_count, total_duration_ms, max_duration_ms)
  SELECT date_trunc('minute', now()), queue, ${outcome}, ${reasonSql},
         count(*), count(duration_ms), coalesce(sum(duration_ms), 0), coalesce(max(duration_ms), 0)
  FROM ${source} AS o GROUP BY queue
  ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE
  SET completed_count = b.completed_count + EXCLUDED.completed_count,
      duration_count = b.duration_count + EXCLUDED.duration_count,
      total_duration_ms = b.total_duration_ms + EXCLUDED.total_duration_ms,
      max_duration_ms = greatest(b.max_duration_ms, EXCLUDED.max_duration_ms)`;

/**
 * Start lag of a row being started now, in ms: from when it became due (`coalesce(scheduled,
 * enqueued)`, the claim's due time) to `now()`. Never negative (a due time is at most now).
 */
const START_LAG_MS = (alias: string): string =>
  `greatest(0, round(extract(epoch FROM now() - coalesce(${alias}.scheduled_at_utc, ${alias}.enqueued_at_utc)) * 1000))::bigint`;

/**
 * The start bucket of this minute (outcome 4, reason −1) of each queue of `source`, which yields
 * (queue, lag_ms) per started row: `completed_count` and `lag_count` grow by the starts, `lag_sum_ms`
 * by their lags, `lag_max_ms` keeps the longest. Written by the statement that starts the rows (the
 * claim, `markAsProcessing`), so a start and its lag commit together. Two starters of one queue
 * serialise on this row only from the upsert to their COMMIT, which follows at once (autocommit).
 */
const startLagUpsert = (s: string, source: string): string => `
  INSERT INTO ${s}.metric_buckets AS b (
    bucket_utc, queue, outcome, failure_reason,
    completed_count, lag_count, lag_sum_ms, lag_max_ms)
  SELECT date_trunc('minute', now()), queue, 4, -1,
         count(*), count(*), sum(lag_ms), max(lag_ms)
  FROM ${source} AS o GROUP BY queue
  ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE
  SET completed_count = b.completed_count + EXCLUDED.completed_count,
      lag_count = b.lag_count + EXCLUDED.lag_count,
      lag_sum_ms = b.lag_sum_ms + EXCLUDED.lag_sum_ms,
      lag_max_ms = greatest(b.lag_max_ms, EXCLUDED.lag_max_ms)`;

/**
 * The `job_attempts` rows of runs a move ends (the rules: `storage/shared/attempts.ts`), as the
 * body of a CTE of that move's statement, so the history commits or rolls back with the move.
 * `source` yields (id, attempt_count, worker_id, lease_id, started_at_utc, outcome, error) per
 * ended run, read from the hot row the move locked. `seq` is one more than the job's last row:
 * a range read of the primary key `(job_id, seq)`, and no other writer can add a row for this job
 * meanwhile (only the mover of its locked hot row writes one). The error keeps its first
 * `MAX_ATTEMPT_ERROR` characters; the duration is the database clock's, finish minus start.
 */
const attemptInsert = (s: string, source: string): string => `
  INSERT INTO ${s}.job_attempts (
    job_id, seq, attempt, worker_id, lease_id, started_at_utc, finished_at_utc, outcome, error,
    duration_ms)
  SELECT a.id,
         coalesce((SELECT max(x.seq) FROM ${s}.job_attempts x WHERE x.job_id = a.id), 0) + 1,
         a.attempt_count, a.worker_id, a.lease_id, a.started_at_utc, now(), a.outcome,
         left(a.error, ${MAX_ATTEMPT_ERROR}),
         CASE WHEN a.started_at_utc IS NOT NULL
              THEN greatest(0, round(extract(epoch FROM now() - a.started_at_utc) * 1000))::bigint
         END
  FROM (${source}) AS a`;

/**
 * Deletes the `job_attempts` rows of the jobs whose ids `gone` (a CTE of deleted archive or DLQ
 * rows, with `id`) yields, as the body of a CTE of the same statement: the history goes with the
 * job's last row, in its transaction. One primary-key range per job.
 */
const attemptsDelete = (s: string, gone: string): string => `
  DELETE FROM ${s}.job_attempts t USING ${gone} g WHERE t.job_id = g.id`;

// ------------------------------------------------------------------------------------------ schema

/** Reads the applied migration versions, or nothing when the ledger does not exist yet (no lock). */
export const selectAppliedVersions = (s: string): string => `
SELECT version FROM ${s}.schema_migrations ORDER BY version`;

/** `to_regclass` of the ledger: NULL until the schema was created. $1 = quoted schema-qualified name. */
export const SELECT_LEDGER_EXISTS = `SELECT to_regclass($1) IS NOT NULL AS exists`;

/**
 * Serialises schema bootstrap across processes: a transaction-scoped advisory lock keyed by the
 * schema name, released by COMMIT/ROLLBACK (never leaks when a process dies). $1 = schema name.
 */
export const LOCK_SCHEMA = `SELECT pg_advisory_xact_lock(hashtextextended('chokaq.schema:' || $1, 0))`;

/** Records one applied migration. $1 version, $2 description. */
export const recordMigration = (s: string): string => `
INSERT INTO ${s}.schema_migrations (version, description, applied_at_utc)
VALUES ($1, $2, now())
ON CONFLICT (version) DO NOTHING`;

// ------------------------------------------------------------------------------------------ producer

/**
 * Inserts a chunk of validated jobs ($1..$12 are parallel arrays: id, queue, type, payload, tags,
 * idempotency_key, priority, delay_ms, run_at, created_by, trace_context, payload_version) and
 * returns the ids actually inserted.
 *
 * Lock/isolation: READ COMMITTED, one statement. `ON CONFLICT DO NOTHING` (no conflict target) covers
 * both the primary key (a retried insert with the same id) and the partial unique index on active
 * idempotency keys. A concurrent inserter of the same key waits for the first transaction on the
 * unique index, then skips: no error, no deadlock for single-key callers. Rows are inserted in
 * (idempotency_key, id) order so that two multi-key batches take the index locks in the same order.
 * Ids already in the archive or the DLQ are skipped too, so a retry after an ambiguous commit of a
 * job that has meanwhile finished does not resurrect it as a duplicate.
 *
 * `Queues` and `StatsSummary` rows are created only when missing (the NOT EXISTS probe avoids the
 * speculative-insertion path on the hot `StatsSummary` row). With `notify`, `pg_notify` runs in the
 * same statement, so listeners hear about it only after commit.
 */
export const enqueue = (s: string, notifyChannel: string | null): string => `
WITH input AS (
  SELECT * FROM unnest(
    $1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
    $6::text[], $7::int[], $8::float8[], $9::timestamptz[], $10::text[], $11::text[], $12::int[]
  ) AS i(id, queue, type, payload, tags, idempotency_key, priority, delay_ms, run_at, created_by,
         trace_context, payload_version)
),
new_queues AS (
  INSERT INTO ${s}.queues (name, last_updated_utc)
  SELECT DISTINCT i.queue, now() FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM ${s}.queues q WHERE q.name = i.queue)
  ON CONFLICT (name) DO NOTHING
),
new_stats AS (
  INSERT INTO ${s}.stats_summary (queue)
  SELECT DISTINCT i.queue FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM ${s}.stats_summary t WHERE t.queue = i.queue)
  ON CONFLICT (queue) DO NOTHING
),
inserted AS (
  INSERT INTO ${s}.jobs_hot (
    id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
    scheduled_at_utc, created_at_utc, enqueued_at_utc, last_updated_utc, created_by, trace_context,
    payload_version)
  SELECT i.id, i.queue, i.type, i.payload, i.tags, i.idempotency_key, i.priority, 0, 0,
         coalesce(i.run_at, now() + i.delay_ms ${MS}), now(), now(), now(), i.created_by,
         i.trace_context, i.payload_version
  FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM ${s}.jobs_archive a WHERE a.id = i.id)
    AND NOT EXISTS (SELECT 1 FROM ${s}.jobs_dlq d WHERE d.id = i.id)
  ORDER BY i.idempotency_key, i.id
  ON CONFLICT DO NOTHING
  RETURNING id, queue
)
SELECT id FROM inserted${
  notifyChannel === null
    ? ''
    : `
UNION ALL
SELECT NULL FROM (SELECT DISTINCT queue FROM inserted) x
CROSS JOIN LATERAL pg_notify(${literal(notifyChannel)}, x.queue)`
}`;

/**
 * After an insert skipped some rows: who holds their ids (any pillar) or their active idempotency
 * keys. $1 ids, $2 keys. Plain READ COMMITTED read; a holder that vanished in between makes the
 * caller try the insert again.
 */
export const enqueueHolders = (s: string): string => `
SELECT 'id' AS kind, id, NULL::text AS idempotency_key FROM ${s}.jobs_hot WHERE id = ANY ($1::text[])
UNION ALL
SELECT 'id', id, NULL FROM ${s}.jobs_archive WHERE id = ANY ($1::text[])
UNION ALL
SELECT 'id', id, NULL FROM ${s}.jobs_dlq WHERE id = ANY ($1::text[])
UNION ALL
SELECT 'key', id, idempotency_key FROM ${s}.jobs_hot WHERE idempotency_key = ANY ($2::text[])`;

/** Opens a transaction of ChokaQ's own (one round trip; see `withConnection`). */
export const BEGIN_READ_COMMITTED = 'START TRANSACTION ISOLATION LEVEL READ COMMITTED';

/**
 * `SET LOCAL statement_timeout` of a transactional handler's transaction, as a parameter ($1, the
 * milliseconds as text): every statement of the run, the archive move included, is cancelled by
 * the server after the run's execution timeout, so a handler stuck in a statement cannot hold its
 * connection (and the row locks it took) for longer. Ends with the transaction.
 */
export const SET_LOCAL_STATEMENT_TIMEOUT = "SELECT set_config('statement_timeout', $1, true)";

// ------------------------------------------------------------------------------------------ claim

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
 * Step 2 of a claim: claims up to $6 due Pending rows and returns them. $1 worker id, $2 lease id,
 * $3 queues with a queue-wide handler, $4/$5 parallel arrays of exact (queue, type) pairs and
 * $8/$9 the lowest and highest payload version each pair's handler runs, $6 limit,
 * $7 how many of the claimed rows (the first in claim order) start at once: status 2 with
 * `attempt_count + 1`, `started_at_utc` and `heartbeat_utc`, exactly as {@link markAsProcessing}
 * leaves them; the others are Fetched (status 1). $10 (budgeted variant): the queues step 1 locked.
 *
 * Payload versions: a row of an exact pair is taken only when its `payload_version` is within the
 * pair's range (`{ minVersion, maxVersion }` of `HandledJobs`), so a process never claims a job
 * its handler cannot run (a newer payload during a rolling deploy stays Pending, attempts
 * untouched, for a process that can). Queue-wide handlers take every version. The test is a
 * residual predicate of the per-queue index scan, like the type test: rejected rows are stepped
 * over (never locked: the filter runs before `FOR UPDATE`) and the scan goes on to the due rows
 * behind them, so it reads O(batch + rows it cannot run ahead of them).
 *
 * Lock/isolation: READ COMMITTED with a fresh snapshot taken after step 1's locks, so
 * `active` (Fetched + Processing of the queue, counted through `ix_jobs_hot_active`) includes every
 * claim committed before ours; never a dirty or stale count. Rows are taken with
 * `FOR UPDATE SKIP LOCKED` inside a per-queue `LATERAL` subquery: rows another claimer holds are
 * skipped, never waited for, and each row is re-checked (`status = 0`) after it is locked.
 *
 * `unbudgeted` variant (the fast path): the statement runs alone, in autocommit, without step 1,
 * and claims only from queues whose `max_workers` is NULL when it runs; budgeted queues are skipped
 * (no budget can be overspent, since nothing is counted). One round trip instead of four.
 *
 * Cost is O(batch): each queue's LATERAL is an ordered index scan of `ix_jobs_hot_pending`
 * (queue, priority DESC, due, id COLLATE "C") stopped by `LIMIT budget`; the due test is an index
 * condition on the third key column, so future-scheduled rows are skipped without heap visits.
 * Ties of priority and due time (a whole `enqueueMany` batch shares one `now()`) go by id, which
 * the producer made increasing (UUIDv7 with a counter): first in, first out. Without `id` in the
 * index and the ORDER BY, the B-tree would order ties by heap position, which changes when a row
 * moves. `COLLATE "C"` compares the ids byte by byte whatever the database's collation (a
 * linguistic one may treat `aa` as one letter), the order in which the ids were generated.
 * A window function over all pending rows would be O(backlog) and cannot be combined with
 * FOR UPDATE anyway.
 *
 * Across queues the best rows by (priority DESC, due, id) win, up to $6 in all (priority is global,
 * as for a single queue). Each queue's LATERAL locks at most min(budget, $6) rows; locked rows that
 * lose the final cut are released at COMMIT (other claimers merely skip them for that instant). The
 * row number that decides which rows start is taken over the same order, `id` last, so it is
 * deterministic and the started rows are exactly the first $7 returned.
 *
 * `runnable` is MATERIALIZED so each budgeted queue's active count runs once (inlined, the
 * planner would repeat the count in every place `budget` is used).
 * The UPDATE finds each picked row by its `ctid` (a TID scan per row), taken while the row was
 * locked: the lock is held to COMMIT, so nothing can move the tuple in between, and `id` and
 * `status = 0` are re-checked anyway. Joining on `id` alone let the planner drive the join from
 * the partial pending index (its predicate is `status = 0`): on a table not yet analysed it read
 * every pending row for each claim (42 ms instead of 0.6 ms for 50 rows over 5,000 pending).
 *
 * `picked` is MATERIALIZED: evaluated exactly once. Inlined, the planner could put it on the inner
 * side of a nested loop and rescan it, and every rescan of a `LIMIT … FOR UPDATE SKIP LOCKED`
 * subquery skips the rows already updated by this statement and locks new ones (claiming more
 * than the limit). The same rule applies to every "pick with SKIP LOCKED, then modify" below.
 *
 * `due` = coalesce(scheduled_at_utc, enqueued_at_utc): equivalent to "scheduled_at_utc IS NULL OR
 * scheduled_at_utc <= now()" because enqueued_at_utc is always in the past, and it is the indexed
 * expression.
 *
 * Rate limits (budgeted variant only): a queue with `rate_limit_max` gets at most its allowance
 * at `statement_timestamp()` ({@link RATE_ALLOWANCE}), and only when the claim starts every row
 * it takes ($7 >= $6: a rate-limited row is never buffered Fetched, so its start is this claim);
 * a rate-limited queue that step 1 did not lock (limited since) gets nothing this round. The
 * started rows of each rate-limited queue are spent in the same statement (`spent`, on the row
 * step 1 locked): the window rolls over when its first start is a window old. Started rows take
 * `statement_timestamp()` as their start time, the instant the allowance was computed: this
 * statement started after the previous claimer of the queue committed (step 1 waited for it), so
 * the start times of a queue increase in the order the claims were serialised, which is what the
 * window arithmetic needs (`now()`, the transaction's start, was taken before the lock wait).
 *
 * `relaxed`: the claim's own transaction commits without waiting for its WAL flush
 * (`synchronous_commit = off`, transaction-local like SET LOCAL, so the pooled connection keeps its
 * setting). A server crash can lose only the last such claims, and then their rows are Pending
 * again as if never claimed (a job started by its claim may run again: at-least-once, as after
 * any crash); the database stays consistent. Every synchronous commit that follows (a start, a
 * move) flushes the WAL up to and including the claim, so no later state survives without it.
 * Referenced by `wanted`, so it is evaluated (once) before anything is claimed.
 *
 * The rows started here are counted in the queue's start bucket of this minute (outcome 4, with
 * their start lag: from due to now) in the same statement, so a start and its lag commit
 * together; a claim that starts nothing writes no bucket. See {@link startLagUpsert}.
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
SELECT c.* FROM claimed c`;

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

/**
 * Rows a claim with this lease already took: a retry after an ambiguous commit (connection lost
 * after COMMIT) returns them instead of leaving them to `recoverAbandoned` (Fetched) or the zombie
 * sweep (started by the claim). $1 worker, $2 lease. Only that claim can have set this lease, and
 * its caller never received the rows, so nothing else can have moved them on.
 */
export const fetchNextBatchClaimed = (s: string): string => `
SELECT * FROM ${s}.jobs_hot
WHERE status IN (1, 2) AND worker_id = $1 AND lease_id = $2`;

// ------------------------------------------------------------------------------------------ worker-owned

/** Parallel lease arrays $1 ids, $2 worker ids, $3 lease ids. */
const LEASES = `unnest($1::text[], $2::text[], $3::text[]) AS l(id, worker_id, lease_id)`;
const OWNED = `j.id = l.id AND j.worker_id = l.worker_id AND j.lease_id = l.lease_id`;

/**
 * Fetched → Processing for owned rows; returns the ids started. The last stale-prefetch guard.
 * Lock/isolation: READ COMMITTED row locks of the UPDATE; a row changed concurrently is re-checked
 * against `status = 1` and the lease after the lock (EvalPlanQual), so a released or re-claimed row
 * is not started.
 *
 * Rows already Processing under the very same lease are returned too: only this call can have
 * started them, so they are a retry after an ambiguous commit (the first attempt committed, its
 * reply was lost). Without this the job would sit Processing, never run, until rescued as a zombie.
 * The second SELECT reads the statement's snapshot, taken before the UPDATE: no id comes twice.
 * The rows started (not those returned again) are counted in the start bucket with their lag, in
 * the same statement, as the claim does ({@link startLagUpsert}).
 */
export const markAsProcessing = (s: string): string => `
WITH started AS (
  UPDATE ${s}.jobs_hot j
  SET status = 2, attempt_count = j.attempt_count + 1, started_at_utc = now(),
      heartbeat_utc = now(), last_updated_utc = now()
  FROM ${LEASES}
  WHERE ${OWNED} AND j.status = 1
  RETURNING j.id, j.queue, ${START_LAG_MS('j')} AS lag_ms
),
bucket AS (${startLagUpsert(s, 'started')}
)
SELECT id FROM started
UNION ALL
SELECT j.id FROM ${s}.jobs_hot j, ${LEASES}
WHERE ${OWNED} AND j.status = 2`;

/**
 * One heartbeat statement per process: Processing rows get `heartbeat_utc`, Fetched rows
 * `last_updated_utc` (so a slow buffer keeps its claims). $1 ids, $2 worker ids, $3 lease ids,
 * $4 the calling worker. Returns every touched id and whether its cancellation was requested.
 * Lock/isolation: READ COMMITTED row locks, re-checked after locking.
 */
export const keepAlive = (s: string): string => `
UPDATE ${s}.jobs_hot j
SET heartbeat_utc = CASE WHEN j.status = 2 THEN now() ELSE j.heartbeat_utc END,
    last_updated_utc = CASE WHEN j.status = 1 THEN now() ELSE j.last_updated_utc END
FROM ${LEASES}
WHERE ${OWNED} AND j.worker_id = $4 AND j.status IN (1, 2)
RETURNING j.id, j.cancel_requested_utc IS NOT NULL AS cancel_requested`;

/**
 * Fetched → Pending for owned rows; with $4 (delay ms, may be NULL) the row becomes due at
 * now() + $4 and `retried_total` grows by the rows released (an open circuit: no attempt spent),
 * as does the queue's retried bucket (outcome 3, reason 3 CircuitBreakerOpen).
 * Lock/isolation: READ COMMITTED, one statement; the counter and bucket upserts are one row per queue.
 */
export const release = (s: string): string => `
WITH released AS (
  UPDATE ${s}.jobs_hot j
  SET status = 0, worker_id = NULL, lease_id = NULL, last_updated_utc = now(),
      scheduled_at_utc = CASE WHEN $4::float8 IS NULL THEN j.scheduled_at_utc
                              ELSE now() + $4::float8 ${MS} END
  FROM ${LEASES}
  WHERE ${OWNED} AND j.status = 1
  RETURNING j.queue
),
counted AS (
  INSERT INTO ${s}.stats_summary AS t (queue, retried_total, last_activity_utc)
  SELECT queue, count(*), now() FROM released WHERE $4::float8 IS NOT NULL GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET retried_total = t.retried_total + EXCLUDED.retried_total,
      last_activity_utc = EXCLUDED.last_activity_utc
),
bucket AS (${bucketUpsert(s, 3, '3', '(SELECT queue, NULL::bigint AS duration_ms FROM released WHERE $4::float8 IS NOT NULL)')}
)
SELECT count(*)::int AS n FROM released`;

/**
 * Processing → Pending for owned rows whose handler never ran (started ahead, then handed back):
 * the attempt the claim counted is refunded and the start cleared; with $4 (delay ms, may be
 * NULL), as {@link release}: due at now() + $4, `retried_total` and the retried bucket (outcome 3,
 * reason 3) grow by the rows handed back. No attempt row: no run happened.
 * Lock/isolation: READ COMMITTED, one statement; the counter and bucket upserts are one row per queue.
 */
export const unstart = (s: string): string => `
WITH unstarted AS (
  UPDATE ${s}.jobs_hot j
  SET status = 0, attempt_count = j.attempt_count - 1, started_at_utc = NULL, heartbeat_utc = NULL,
      worker_id = NULL, lease_id = NULL, last_updated_utc = now(),
      scheduled_at_utc = CASE WHEN $4::float8 IS NULL THEN j.scheduled_at_utc
                              ELSE now() + $4::float8 ${MS} END
  FROM ${LEASES}
  WHERE ${OWNED} AND j.status = 2
  RETURNING j.queue
),
counted AS (
  INSERT INTO ${s}.stats_summary AS t (queue, retried_total, last_activity_utc)
  SELECT queue, count(*), now() FROM unstarted WHERE $4::float8 IS NOT NULL GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET retried_total = t.retried_total + EXCLUDED.retried_total,
      last_activity_utc = EXCLUDED.last_activity_utc
),
bucket AS (${bucketUpsert(s, 3, '3', '(SELECT queue, NULL::bigint AS duration_ms FROM unstarted WHERE $4::float8 IS NOT NULL)')}
)
SELECT count(*)::int AS n FROM unstarted`;

/**
 * Progress (0–100) and its note of an owned Processing row. $1 id, $2 worker, $3 lease,
 * $4 percent, $5 note (NULL clears it: a note describes the progress it came with).
 * Lock/isolation: READ COMMITTED, one statement (row lock on the job).
 */
export const reportProgress = (s: string): string => `
UPDATE ${s}.jobs_hot
SET progress = $4, progress_note = $5::text, last_updated_utc = now()
WHERE id = $1 AND worker_id = $2 AND lease_id = $3 AND status = 2
RETURNING id`;

/**
 * Processing → Pending after a retryable failure, due at now() + $4 ms, with `last_error` $5, and
 * `retried_total + 1`, the queue's retried bucket (outcome 3) and the run's attempt row (outcome
 * `retried`, {@link attemptInsert}). $1 id, $2 worker, $3 lease: the run's worker and lease are
 * the fence's, and its attempt and start time are columns the UPDATE leaves as they were (RETURNING
 * gives the new row).
 * Lock/isolation: READ COMMITTED, one statement (row lock on the job, then the queue's counter row
 * and bucket row).
 */
export const rescheduleForRetry = (s: string): string => `
WITH retried AS (
  UPDATE ${s}.jobs_hot j
  SET status = 0, worker_id = NULL, lease_id = NULL, heartbeat_utc = NULL,
      scheduled_at_utc = now() + $4::float8 ${MS}, last_error = $5, last_updated_utc = now()
  WHERE j.id = $1 AND j.worker_id = $2 AND j.lease_id = $3 AND j.status = 2
  RETURNING j.id, j.queue, j.attempt_count, j.started_at_utc
),
attempt AS (${attemptInsert(s, `SELECT r.id, r.attempt_count, $2::varchar AS worker_id, $3::varchar AS lease_id, r.started_at_utc, 'retried' AS outcome, $5::text AS error FROM retried r`)}
),
counted AS (
  INSERT INTO ${s}.stats_summary AS t (queue, retried_total, last_activity_utc)
  SELECT queue, count(*), now() FROM retried GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET retried_total = t.retried_total + EXCLUDED.retried_total,
      last_activity_utc = EXCLUDED.last_activity_utc
),
bucket AS (${bucketUpsert(s, 3, '-1', '(SELECT queue, NULL::bigint AS duration_ms FROM retried)')}
)
SELECT count(*)::int AS n FROM retried`;

/**
 * Atomic move Hot → Archive of owned rows (status 1 or 2). $1 ids, $2 worker ids, $3 lease ids,
 * $4 durations in ms (parallel arrays). Returns the archived ids.
 *
 * Lock/isolation: one READ COMMITTED statement = one transaction (SPEC "Transaction Integrity"):
 * the DELETE takes the exact owned rows first (row locks; a concurrently changed row is re-checked
 * against lease and status after the lock), RETURNING captures what was deleted, the INSERT writes
 * exactly that, then ONE `stats_summary` upsert and ONE metric-bucket upsert per queue of the batch
 * (StatsSummary is the hottest row, so it is touched once per batch, last, to keep its lock short).
 * Any error, e.g. in the archive insert, rolls back the delete too.
 */
export const archiveSucceeded = (s: string): string => `
WITH input AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
    AS l(id, worker_id, lease_id, duration_ms)
),
moved AS (
  DELETE FROM ${s}.jobs_hot j
  USING input l
  WHERE ${OWNED} AND j.status IN (1, 2)
  RETURNING j.*, l.duration_ms AS run_ms
),
src AS (
  INSERT INTO ${s}.jobs_archive (${cols(ARCHIVE_COPIED)}, finished_at_utc, duration_ms)
  SELECT ${cols(ARCHIVE_COPIED, 'm')}, now(), m.run_ms
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
)
SELECT id, lease_id FROM src`;

/** What a Hot → DLQ move writes: status, outcome and counter are fixed per statement text. */
export interface DlqMoveShape {
  /** DLQ status literal: 4 Failed, 5 Cancelled, 6 Zombie. */
  status: 4 | 5 | 6;
  /** Metric outcome literal: 1 failed, 2 cancelled. */
  outcome: 1 | 2;
  /** The lifetime counter that grows. */
  counter: 'failed_total' | 'cancelled_total';
}

/**
 * The DLQ insert of every Hot → DLQ move, as a CTE `src(id, queue)`, fed by a CTE `moved` of deleted
 * hot rows. The SQL arguments are the failure reason, the error text and the actor (NULL keeps
 * `last_modified_by`).
 */
const dlqInsert = (
  s: string,
  status: DlqMoveShape['status'],
  reasonSql: string,
  errorSql: string,
  actorSql: string,
): string => `
src AS (
  INSERT INTO ${s}.jobs_dlq (${cols(DLQ_COPIED)}, status, failure_reason, error_details, failed_at_utc)
  SELECT ${DLQ_COPIED.map((c) => (c === 'last_modified_by' ? `coalesce(${actorSql}, m.last_modified_by)` : `m.${c}`)).join(', ')},
         ${status}, ${reasonSql}, ${errorSql}, now()
  FROM moved m
  RETURNING id, queue
),`;

/** Lifetime counter upsert fed by `src(queue)`: one row per queue per statement. */
const counterUpsert = (s: string, counter: DlqMoveShape['counter']): string => `
counted AS (
  INSERT INTO ${s}.stats_summary AS t (queue, ${counter}, last_activity_utc)
  SELECT queue, count(*), now() FROM src GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET ${counter} = t.${counter} + EXCLUDED.${counter},
      last_activity_utc = EXCLUDED.last_activity_utc
),`;

/**
 * Atomic move Hot → DLQ of one row. Owned variant: $1 id, $2 worker, $3 lease (status 1 or 2), then
 * $4 reason, $5 error text, $6 actor, $7 duration ms (bucket; may be NULL). Admin/rescue variant
 * (`owned = false`, any hot status): $1 id, $2 reason, $3 error, $4 actor, $5 duration. Returns the
 * moved ids.
 *
 * Lock/isolation: one READ COMMITTED statement, same pattern as {@link archiveSucceeded}: DELETE the
 * exact row first (row lock, re-checked after locking), insert what was deleted, then the lifetime
 * counter (`failed_total` or `cancelled_total`) and the metric bucket, all or nothing. A row that
 * was Processing (its run had started) gets its run's attempt row in the same statement
 * ({@link attemptInsert}; outcome by the reason: timeout, cancelled, zombie, else failed); a
 * Pending or Fetched one ran nothing and gets none.
 */
export const moveToDlq = (s: string, shape: DlqMoveShape, owned: boolean): string => {
  const [reason, error, actor, duration] = owned ? [4, 5, 6, 7] : [2, 3, 4, 5];
  return `
WITH moved AS (
  DELETE FROM ${s}.jobs_hot j
  WHERE j.id = $1 AND ${owned ? 'j.worker_id = $2 AND j.lease_id = $3 AND j.status IN (1, 2)' : 'j.status IN (0, 1, 2)'}
  RETURNING j.*
),
${dlqInsert(s, shape.status, `$${reason}::smallint`, `$${error}::text`, `$${actor}::text`)}
attempt AS (${attemptInsert(s, `SELECT m.id, m.attempt_count, m.worker_id, m.lease_id, m.started_at_utc, ${attemptOutcomeSql(`$${reason}::smallint`)} AS outcome, $${error}::text AS error FROM moved m WHERE m.status = 2`)}
),
${counterUpsert(s, shape.counter)}
bucket AS (${bucketUpsert(s, shape.outcome, `$${reason}::smallint`, `(SELECT queue, $${duration}::bigint AS duration_ms FROM src)`)}
)
SELECT id FROM src`;
};

/**
 * Cancel, step 1: Pending/Fetched rows among $1 → DLQ as Cancelled (status 5, reason 1), with
 * $2 error text and $3 actor; `cancelled_total` and the cancelled bucket (outcome 2) in the same
 * statement. Returns the moved ids.
 * Lock/isolation: READ COMMITTED, runs in the cancel transaction before step 2. A row that a worker
 * marks Processing concurrently is re-checked after the DELETE's lock and no longer matches.
 */
export const cancel = (s: string): string => `
WITH moved AS (
  DELETE FROM ${s}.jobs_hot j
  WHERE j.id = ANY ($1::text[]) AND j.status IN (0, 1)
  RETURNING j.*
),
${dlqInsert(s, 5, '1', '$2::text', '$3::text')}
${counterUpsert(s, 'cancelled_total')}
bucket AS (${bucketUpsert(s, 2, '1', '(SELECT queue, NULL::bigint AS duration_ms FROM src)')}
)
SELECT id FROM src`;

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
  WHERE j.id = ANY ($1::text[]) AND j.status = 2
  RETURNING j.id
)
SELECT r.id FROM requested r${channel === null ? '' : `\nCROSS JOIN LATERAL pg_notify(${literal(channel)}, r.id)`}`;

// ------------------------------------------------------------------------------------------ DLQ → hot

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
 * dropped, `resurrected_total + n`.
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
    cancel_requested_utc, progress, trace_context, payload_version)
  SELECT t.id, t.queue, t.type, coalesce($1::text, t.payload),
         CASE WHEN $2::boolean THEN $3::text ELSE t.tags END,
         NULL, coalesce($4::int, t.priority), 0, 0,
         NULL, NULL, NULL, NULL, t.created_at_utc, now(),
         NULL, now(), t.created_by, coalesce($5::text, t.last_modified_by),
         coalesce(t.error_details, t.last_error), NULL, NULL, t.trace_context, t.payload_version
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
)
SELECT id FROM revived`;

/** Ids for {@link resurrect}: explicit ids ($6); the DELETE itself takes the row locks. */
export const CHOOSE_DLQ_BY_IDS = `SELECT unnest($6::text[]) AS id`;

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

// ------------------------------------------------------------------------------------------ rescue

/**
 * Fetched rows untouched for $1 ms → Pending (no user code ran, so this is always safe). At most
 * $2 rows, oldest first. Returns the ids.
 * Lock/isolation: READ COMMITTED; candidates come from `ix_jobs_hot_fetched` with
 * `FOR UPDATE SKIP LOCKED` in a MATERIALIZED CTE (evaluated once, see {@link fetchNextBatch}); a row
 * being heartbeated or started right now is skipped, and a row that changed after the statement's
 * snapshot is re-checked against the staleness condition when it is locked.
 */
export const recoverAbandoned = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT c.id FROM ${s}.jobs_hot c
  WHERE c.status = 1 AND c.last_updated_utc < now() - $1::float8 ${MS}
  ORDER BY c.last_updated_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)
UPDATE ${s}.jobs_hot j
SET status = 0, worker_id = NULL, lease_id = NULL, last_updated_utc = now()
FROM chosen c
WHERE j.id = c.id AND j.status = 1
RETURNING j.id`;

/** The columns `archiveZombies` returns of each rescued row: all but the payload. */
const RESCUED = hotColumnsExcept('payload');

/**
 * Processing rows whose heartbeat is older than their queue's `zombie_timeout_seconds` (or the
 * default $1 ms) → DLQ as Zombie (status 6, reason 2, outcome failed), or → Pending with
 * `last_error` (attempt kept) where the queue has `retry_zombies` or the rescuer's handler rules
 * say so. At most $2 rows; $3 is the error text; the rules are `unnest($4 queue, $5 type, $6 retry)`
 * (type NULL for a queue-wide handler, one rule per slot), resolved as a claim resolves a handler:
 * the exact `(queue, type)` rule, else the queue-wide one. Returns `kind` ('dlq' or 'retried') and
 * each rescued row as the rescue found it, every column but the payload (the worker that lost it
 * included): `candidates` read those values from the row it locked, and nothing else can change
 * the row before the statement ends.
 *
 * Lock/isolation: one READ COMMITTED statement. Candidates are locked `FOR UPDATE OF j SKIP LOCKED`
 * (a row its owner is finalising right now is skipped; if we lock first, the owner's fenced
 * statement finds nothing and reports "not applied"); the outer-joined queue row and rules are only
 * read. The range `heartbeat_utc < now() − shortest timeout` bounds the scan of
 * `ix_jobs_hot_processing`. Both the failed and the retried counts go into ONE `stats_summary`
 * upsert: two CTEs must never update the same row in one statement. The two bucket upserts touch
 * different rows (outcome 1 failed, outcome 3 retried, both with reason 2 Zombie). Every rescued
 * run, dead or retried, gets its attempt row (outcome `zombie`, the worker that lost it as
 * `candidates` read it) in the same statement ({@link attemptInsert}).
 */
export const archiveZombies = (s: string): string => `
WITH rule (queue, type, retry) AS (
  SELECT * FROM unnest($4::text[], $5::text[], $6::boolean[])
),
candidates AS MATERIALIZED (
  SELECT ${cols(RESCUED, 'j')},
         coalesce(q.retry_zombies, false) OR coalesce(e.retry, w.retry, false) AS retry
  FROM ${s}.jobs_hot j
  LEFT JOIN ${s}.queues q ON q.name = j.queue
  LEFT JOIN rule e ON e.queue = j.queue AND e.type = j.type
  LEFT JOIN rule w ON w.queue = j.queue AND w.type IS NULL
  WHERE j.status = 2
    AND j.heartbeat_utc < now() - (
          SELECT least($1::float8, min(zombie_timeout_seconds) * 1000.0) FROM ${s}.queues) ${MS}
    AND j.heartbeat_utc < now() - coalesce(q.zombie_timeout_seconds * 1000.0, $1::float8) ${MS}
  ORDER BY j.heartbeat_utc
  LIMIT $2
  FOR UPDATE OF j SKIP LOCKED
),
moved AS (
  DELETE FROM ${s}.jobs_hot j
  USING candidates c
  WHERE j.id = c.id AND NOT c.retry AND j.status = 2
  RETURNING j.*
),
${dlqInsert(s, 6, '2', '$3::text', 'NULL::text')}
retried AS (
  UPDATE ${s}.jobs_hot j
  SET status = 0, worker_id = NULL, lease_id = NULL, heartbeat_utc = NULL,
      last_error = $3::text, last_updated_utc = now()
  FROM candidates c
  WHERE j.id = c.id AND c.retry AND j.status = 2
  RETURNING j.id, j.queue
),
attempt AS (${attemptInsert(s, `SELECT c.id, c.attempt_count, c.worker_id, c.lease_id, c.started_at_utc, 'zombie' AS outcome, $3::text AS error FROM candidates c WHERE c.id IN (SELECT id FROM src UNION ALL SELECT id FROM retried)`)}
),
counted AS (
  INSERT INTO ${s}.stats_summary AS t (queue, failed_total, retried_total, last_activity_utc)
  SELECT queue, count(*) FILTER (WHERE kind = 'dlq'), count(*) FILTER (WHERE kind = 'retried'), now()
  FROM (SELECT 'dlq' AS kind, queue FROM src UNION ALL SELECT 'retried', queue FROM retried) x
  GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET failed_total = t.failed_total + EXCLUDED.failed_total,
      retried_total = t.retried_total + EXCLUDED.retried_total,
      last_activity_utc = EXCLUDED.last_activity_utc
),
bucket AS (${bucketUpsert(s, 1, '2', '(SELECT queue, NULL::bigint AS duration_ms FROM src)')}
),
retried_bucket AS (${bucketUpsert(s, 3, '2', '(SELECT queue, NULL::bigint AS duration_ms FROM retried)')}
)
SELECT x.kind, ${cols(RESCUED, 'c')}
FROM (SELECT 'dlq' AS kind, id FROM src UNION ALL SELECT 'retried', id FROM retried) x
JOIN candidates c ON c.id = x.id`;

// ------------------------------------------------------------------------------------------ workers

/**
 * One worker's report into its row of the Workers table (its heartbeat). $1 worker id, $2 host,
 * $3 pid, $4 library version, $5 concurrency, $6 running, $7 handled (JSON), $8 circuits (JSON),
 * $9 draining, $10 starting: sets `started_at_utc` and clears `stopped_at_utc` (a new run of the
 * process); a later report keeps both. Every time from the database clock.
 * Lock/isolation: `INSERT … ON CONFLICT DO UPDATE` is atomic under concurrency (no lost insert
 * race); READ COMMITTED, one statement, one row lock on the worker's own row.
 */
export const upsertWorker = (s: string): string => `
INSERT INTO ${s}.workers AS w (
  worker_id, host, pid, library_version, started_at_utc, last_seen_utc,
  concurrency, running, handled, circuits, is_draining, stopped_at_utc)
VALUES ($1, $2, $3, $4, now(), now(), $5, $6, $7, $8, $9, NULL)
ON CONFLICT (worker_id) DO UPDATE
SET host = EXCLUDED.host, pid = EXCLUDED.pid, library_version = EXCLUDED.library_version,
    started_at_utc = CASE WHEN $10::boolean THEN now() ELSE w.started_at_utc END,
    last_seen_utc = now(),
    concurrency = EXCLUDED.concurrency, running = EXCLUDED.running,
    handled = EXCLUDED.handled, circuits = EXCLUDED.circuits, is_draining = EXCLUDED.is_draining,
    stopped_at_utc = CASE WHEN $10::boolean THEN NULL ELSE w.stopped_at_utc END`;

/**
 * A clean stop of worker $1: stop and last-seen times now, nothing running. Returns the worker id
 * when a row changed. Lock/isolation: READ COMMITTED, one row lock.
 */
export const markWorkerStopped = (s: string): string => `
UPDATE ${s}.workers
SET stopped_at_utc = now(), last_seen_utc = now(), running = 0
WHERE worker_id = $1 AND stopped_at_utc IS NULL
RETURNING worker_id`;

/**
 * The Workers table, most recently seen first, at most $2 rows, each with `is_lost`: not stopped
 * and not seen for more than $1 ms by the database clock. A plain read (no lock); the table holds
 * live workers and the stopped or lost ones retention has not removed yet.
 */
export const listWorkers = (s: string): string => `
SELECT w.*, (w.stopped_at_utc IS NULL AND w.last_seen_utc < now() - $1::float8 ${MS}) AS is_lost
FROM ${s}.workers w
ORDER BY w.last_seen_utc DESC, w.worker_id
LIMIT $2`;

// ------------------------------------------------------------------------------------------ queues

/** All queue rows. */
export const getQueues = (s: string): string => `SELECT * FROM ${s}.queues ORDER BY name`;

/**
 * Upserts a queue and applies the patch. $1 name; $2 is_paused, $3 is_active, $4 retry_zombies
 * (NULL = unchanged); nullable fields come as (set?, value) pairs: $5/$6 max_workers,
 * $7/$8 zombie_timeout_seconds, $9/$10 execution_timeout_ms, $11/$12/$13 the rate limit (max,
 * per ms). Clearing the rate limit clears its window state too; changing it keeps the starts
 * already counted.
 * Lock/isolation: `INSERT … ON CONFLICT DO UPDATE` is atomic under concurrency (no lost insert race);
 * it takes the same row lock that claims take on budgeted queues, so a budget change waits for an
 * in-flight claim.
 */
export const updateQueue = (s: string): string => `
INSERT INTO ${s}.queues AS q (
  name, is_paused, is_active, retry_zombies, max_workers, zombie_timeout_seconds,
  execution_timeout_ms, rate_limit_max, rate_limit_per_ms, last_updated_utc)
VALUES ($1, coalesce($2::boolean, false), coalesce($3::boolean, true), coalesce($4::boolean, false),
        CASE WHEN $5::boolean THEN $6::int END, CASE WHEN $7::boolean THEN $8::int END,
        CASE WHEN $9::boolean THEN $10::int END, CASE WHEN $11::boolean THEN $12::int END,
        CASE WHEN $11::boolean THEN $13::int END, now())
ON CONFLICT (name) DO UPDATE
SET is_paused = coalesce($2::boolean, q.is_paused),
    is_active = coalesce($3::boolean, q.is_active),
    retry_zombies = coalesce($4::boolean, q.retry_zombies),
    max_workers = CASE WHEN $5::boolean THEN $6::int ELSE q.max_workers END,
    rate_limit_max = CASE WHEN $11::boolean THEN $12::int ELSE q.rate_limit_max END,
    rate_limit_per_ms = CASE WHEN $11::boolean THEN $13::int ELSE q.rate_limit_per_ms END,
    rate_window_start = CASE WHEN $11::boolean AND $12::int IS NULL THEN NULL
                             ELSE q.rate_window_start END,
    rate_window_last = CASE WHEN $11::boolean AND $12::int IS NULL THEN NULL
                            ELSE q.rate_window_last END,
    rate_window_count = CASE WHEN $11::boolean AND $12::int IS NULL THEN NULL
                             ELSE q.rate_window_count END,
    rate_prev_last = CASE WHEN $11::boolean AND $12::int IS NULL THEN NULL ELSE q.rate_prev_last END,
    rate_prev_count = CASE WHEN $11::boolean AND $12::int IS NULL THEN NULL
                           ELSE q.rate_prev_count END,
    zombie_timeout_seconds = CASE WHEN $7::boolean THEN $8::int ELSE q.zombie_timeout_seconds END,
    execution_timeout_ms = CASE WHEN $9::boolean THEN $10::int ELSE q.execution_timeout_ms END,
    last_updated_utc = now()
RETURNING *`;

// ------------------------------------------------------------------------------------------ purge

/**
 * Deletes DLQ rows by id ($1, one bounded chunk). Lock/isolation: READ COMMITTED; rows another
 * transaction holds (e.g. being resurrected) are skipped, not waited for. Counters untouched.
 */
export const purgeDlq = (s: string): string =>
  purgeDlqByFilter(
    s,
    `SELECT f.id FROM ${s}.jobs_dlq f WHERE f.id = ANY ($1::text[]) FOR UPDATE SKIP LOCKED`,
  );

/**
 * Deletes the DLQ rows whose ids `chosen` yields (evaluated once, see {@link fetchNextBatch}) and
 * their attempt rows ({@link attemptsDelete}), in one statement.
 */
export const purgeDlqByFilter = (s: string, chosen: string): string => `
WITH chosen AS MATERIALIZED (${chosen}),
gone AS (DELETE FROM ${s}.jobs_dlq d USING chosen c WHERE d.id = c.id RETURNING d.id),
history AS (${attemptsDelete(s, 'gone')}
)
SELECT id FROM gone`;

/**
 * Retention, one bounded batch: archive rows finished more than $1 ms ago, at most $2, oldest
 * first, and their attempt rows ({@link attemptsDelete}).
 * Lock/isolation: each batch its own short transaction (one statement); the batch is picked once
 * in a MATERIALIZED CTE with SKIP LOCKED, so it never waits on row locks of a concurrent purge or
 * retention run. Counters untouched (they are lifetime).
 */
export const applyRetentionArchive = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.id FROM ${s}.jobs_archive r
  WHERE r.finished_at_utc < now() - $1::float8 ${MS}
  ORDER BY r.finished_at_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
gone AS (DELETE FROM ${s}.jobs_archive a USING chosen c WHERE a.id = c.id RETURNING a.id),
history AS (${attemptsDelete(s, 'gone')}
)
SELECT id FROM gone`;

/**
 * Retention batch of the DLQ (failed more than $1 ms ago, at most $2) and their attempt rows; as
 * {@link applyRetentionArchive}.
 */
export const applyRetentionDlq = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.id FROM ${s}.jobs_dlq r
  WHERE r.failed_at_utc < now() - $1::float8 ${MS}
  ORDER BY r.failed_at_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
gone AS (DELETE FROM ${s}.jobs_dlq d USING chosen c WHERE d.id = c.id RETURNING d.id),
history AS (${attemptsDelete(s, 'gone')}
)
SELECT id FROM gone`;

/** Retention batch of metric buckets older than $1 ms (at most $2), by primary key; as {@link applyRetentionArchive}. */
export const applyRetentionBuckets = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.bucket_utc, r.queue, r.outcome, r.failure_reason FROM ${s}.metric_buckets r
  WHERE r.bucket_utc < now() - $1::float8 ${MS}
  ORDER BY r.bucket_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED)
DELETE FROM ${s}.metric_buckets b USING chosen c
WHERE b.bucket_utc = c.bucket_utc AND b.queue = c.queue
  AND b.outcome = c.outcome AND b.failure_reason = c.failure_reason
RETURNING 1 AS deleted`;

/**
 * Retention batch of the Workers table: rows last seen more than $1 ms ago (stopped or lost
 * workers: a live one reports every heartbeat), at most $2; as {@link applyRetentionArchive}. A
 * worker that reports again after its row was removed writes it anew.
 */
export const applyRetentionWorkers = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.worker_id FROM ${s}.workers r
  WHERE r.last_seen_utc < now() - $1::float8 ${MS}
  ORDER BY r.last_seen_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED)
DELETE FROM ${s}.workers w USING chosen c WHERE w.worker_id = c.worker_id
RETURNING w.worker_id`;

// ------------------------------------------------------------------------------------------ reads

/** One job by id ($1) in each pillar; read one after the other (hot, archive, DLQ). */
export const getJobHot = (s: string): string => `SELECT * FROM ${s}.jobs_hot WHERE id = $1`;
/** @see getJobHot */
export const getJobArchive = (s: string): string => `SELECT * FROM ${s}.jobs_archive WHERE id = $1`;
/** @see getJobHot */
export const getJobDlq = (s: string): string => `SELECT * FROM ${s}.jobs_dlq WHERE id = $1`;

/**
 * The attempt rows of job $1, oldest first (`getJob` with `attempts`): one range of the primary
 * key `(job_id, seq)`, read in its order. A plain read (no lock).
 */
export const getJobAttempts = (s: string): string => `
SELECT * FROM ${s}.job_attempts WHERE job_id = $1 ORDER BY seq`;

/** Table of each pillar. */
const PILLAR_TABLE = { hot: 'jobs_hot', archive: 'jobs_archive', dlq: 'jobs_dlq' } as const;

/** Date column the `from`/`to` filters of bulk DLQ actions and error families apply to. */
const PILLAR_DATE = {
  hot: 'enqueued_at_utc',
  archive: 'finished_at_utc',
  dlq: 'failed_at_utc',
} as const;

/** Error text columns a search looks in: the DLQ error and the last retry error. */
const ERROR_COLUMNS = {
  hot: ['last_error'],
  archive: ['last_error'],
  dlq: ['error_details', 'last_error'],
} as const;

/** Appends `value` to `params` and returns its placeholder. */
function bind(params: unknown[], value: unknown): string {
  params.push(value);
  return `$${params.length}`;
}

/** The tag filter: one tag, exactly, inside the stored `,a,b,` string. */
function tagPredicate(column: string, tag: string, params: unknown[]): string {
  return `${column} LIKE '%,' || ${bind(params, escapeLike(tag))} || ',%' ESCAPE '\\'`;
}

/**
 * The search filter: a case-insensitive substring (ILIKE, like SQL Server's and SQLite's default
 * LIKE) of the id, the type, the payload or the error text, with `%`, `_`, `[` matched literally.
 */
function searchPredicate(
  pillar: 'hot' | 'archive' | 'dlq',
  c: (column: string) => string,
  search: string,
  params: unknown[],
): string {
  const term = bind(params, `%${escapeLike(search)}%`);
  const columns = ['id', 'type', 'payload', ...ERROR_COLUMNS[pillar]];
  return `(${columns.map((col) => `${c(col)} ILIKE ${term} ESCAPE '\\'`).join(' OR ')})`;
}

/**
 * Builds the WHERE clause of a bulk DLQ action, its preview, the error families or `countExactly`
 * (any pillar, with the filter of that pillar's list, without a cursor), appending
 * values to `params` (every value is a parameter; the hot-table status is a validated literal 0–2
 * so partial indexes apply). Tag: exact match inside the `,a,b,` string; search: see
 * {@link searchPredicate}. `alias` prefixes the columns.
 */
export function filterClause(
  pillar: 'hot' | 'archive' | 'dlq',
  filter: ActiveFilter & DlqFilter,
  params: unknown[],
  alias: string,
): string {
  const p = (value: unknown): string => bind(params, value);
  const c = (column: string): string => `${alias}.${column}`;
  const parts: string[] = [];
  if (filter.queue !== undefined) parts.push(`${c('queue')} = ${p(filter.queue)}`);
  if (filter.type !== undefined) parts.push(`${c('type')} = ${p(filter.type)}`);
  if (pillar === 'hot' && filter.status !== undefined) {
    parts.push(`${c('status')} = ${statusLiteral(filter.status)}`);
  }
  if (filter.tag !== undefined) parts.push(tagPredicate(c('tags'), filter.tag, params));
  if (filter.search !== undefined && filter.search !== '') {
    parts.push(searchPredicate(pillar, c, filter.search, params));
  }
  // The time range is on each list's sort key: enqueued (hot), finished (archive), failed (DLQ).
  const dateColumn = c(PILLAR_DATE[pillar]);
  const history = filter as HistoryFilter;
  if (history.from !== undefined) parts.push(`${dateColumn} >= ${p(history.from)}::timestamptz`);
  if (history.to !== undefined) parts.push(`${dateColumn} < ${p(history.to)}::timestamptz`);
  if (pillar === 'dlq') {
    if (filter.reason !== undefined)
      parts.push(`${c('failure_reason')} = ${p(filter.reason)}::smallint`);
    if (filter.ids !== undefined) parts.push(`${c('id')} = ANY (${p([...filter.ids])}::text[])`);
  }
  return parts.length === 0 ? 'TRUE' : parts.join(' AND ');
}

/** A validated hot status (0, 1 or 2) as a literal, so the partial indexes apply. */
function statusLiteral(value: unknown): number {
  const status = Number(value);
  if (![0, 1, 2].includes(status)) throw new Error(`Unvalidated hot status ${String(value)}`);
  return status;
}

// ------------------------------------------------------------------------------------------ lists

/**
 * What a list item reads of each pillar: no payload and no full error text. `payload_bytes` is
 * `octet_length(payload)`, which for `text` "need[s] not detoast the input at all": it reads the
 * value's length from its header, or from the TOAST pointer of a value stored out of line
 * (`textoctetlen`, https://github.com/postgres/postgres/blob/REL_15_STABLE/src/backend/utils/adt/varlena.c),
 * so a 1 MB payload costs a list nothing (it lives in the TOAST table, which the list never
 * reads). `error_prefix` is the first {@link ERROR_PREFIX_CHARS} characters of the error, read as
 * a slice.
 */
const LIST_COLUMNS = {
  hot:
    'x.id, x.queue, x.type, x.status, x.attempt_count, x.priority, x.tags, x.created_at_utc, ' +
    'x.enqueued_at_utc, x.scheduled_at_utc, x.started_at_utc, x.worker_id, x.progress, ' +
    `left(x.last_error, ${ERROR_PREFIX_CHARS}) AS error_prefix, octet_length(x.payload) AS payload_bytes`,
  archive:
    'x.id, x.queue, x.type, x.attempt_count, x.priority, x.tags, x.created_at_utc, ' +
    'x.enqueued_at_utc, x.scheduled_at_utc, x.started_at_utc, x.finished_at_utc, x.duration_ms, ' +
    `x.worker_id, x.progress, left(x.last_error, ${ERROR_PREFIX_CHARS}) AS error_prefix, ` +
    'octet_length(x.payload) AS payload_bytes',
  dlq:
    'x.id, x.queue, x.type, x.status, x.failure_reason, x.attempt_count, x.priority, x.tags, ' +
    'x.created_at_utc, x.enqueued_at_utc, x.scheduled_at_utc, x.started_at_utc, x.failed_at_utc, ' +
    `x.worker_id, x.progress, left(coalesce(x.error_details, x.last_error), ${ERROR_PREFIX_CHARS}) AS error_prefix, ` +
    'octet_length(x.payload) AS payload_bytes',
} as const;

/** The WHERE clause of a list page: `indexed` on an index's keys, `unindexed` (tag, search) or null. */
export interface ListWhere {
  indexed: string;
  unindexed: string | null;
}

/**
 * The conditions of a list page, values appended to `params`. `indexed`: queue, type, status,
 * failure reason, ids, the time range on the sort key and the cursor, all on the keys of the
 * list's indexes (the status and type of hot rows excepted: the hot table is small by design).
 * The cursor is a row comparison, `(key, id COLLATE "C") < ($k, $id)` (newest first) or `>`
 * (oldest first), which a B-tree index on `(key, id COLLATE "C")` (after any equality on its
 * leading keys) reads as one range (https://www.postgresql.org/docs/15/functions-comparisons.html#ROW-WISE-COMPARISON,
 * https://www.postgresql.org/docs/15/indexes-multicolumn.html). The key is bound as text at
 * microsecond precision (`timestamptz` keeps microseconds). `unindexed`: the tag and the search.
 */
export function listWhere(
  request: ListRequest<ActiveFilter & DlqFilter>,
  params: unknown[],
): ListWhere {
  const { pillar, filter } = request;
  const p = (value: unknown): string => bind(params, value);
  const key = `x.${LIST_SORT_KEY[pillar]}`;
  const parts: string[] = [];
  if (filter.queue !== undefined) parts.push(`x.queue = ${p(filter.queue)}`);
  if (filter.type !== undefined) parts.push(`x.type = ${p(filter.type)}`);
  if (pillar === 'hot' && filter.status !== undefined) {
    parts.push(`x.status = ${statusLiteral(filter.status)}`);
  }
  if (pillar === 'dlq') {
    if (filter.reason !== undefined) parts.push(`x.failure_reason = ${p(filter.reason)}::smallint`);
    if (filter.ids !== undefined) parts.push(`x.id = ANY (${p([...filter.ids])}::text[])`);
  }
  if (filter.from !== undefined) parts.push(`${key} >= ${p(filter.from)}::timestamptz`);
  if (filter.to !== undefined) parts.push(`${key} < ${p(filter.to)}::timestamptz`);
  if (request.after !== null) {
    const op = request.order === 'newest' ? '<' : '>';
    parts.push(
      `(${key}, x.id COLLATE "C") ${op} (${p(request.after.at)}::timestamptz, ${p(request.after.id)}::text)`,
    );
  }
  const unindexed: string[] = [];
  if (filter.tag !== undefined) unindexed.push(tagPredicate('x.tags', filter.tag, params));
  if (filter.search !== undefined && filter.search !== '') {
    unindexed.push(searchPredicate(pillar, (col) => `x.${col}`, filter.search, params));
  }
  return {
    indexed: parts.length === 0 ? 'TRUE' : parts.join(' AND '),
    unindexed: unindexed.length === 0 ? null : unindexed.join(' AND '),
  };
}

/**
 * One page of a list (`listActive`, `listArchive`, `listDlq`): `where` from {@link listWhere},
 * `limitParam` the parameter holding `limit + 1`. Read committed, one autocommit statement, no
 * row locks. See `shared/page.ts` for the two shapes. The plain one is an index range scan in list
 * order that stops after `limit + 1` rows. The bounded scan reads the first `scanBound + 1` rows
 * in the same order (an index range scan with a LIMIT: the payload is read only to test
 * the search term), ranks them and keeps the matches and the two rows at the bound.
 */
export function listJobs(
  s: string,
  request: ListRequest<unknown>,
  where: ListWhere,
  limitParam: string,
): string {
  const { pillar } = request;
  const dir = request.order === 'newest' ? 'DESC' : 'ASC';
  const key = LIST_SORT_KEY[pillar];
  // Microseconds, which a JS Date would drop: the cursor must name the row exactly.
  const sortAt = `to_char(x.${key} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_at`;
  const from = `FROM ${s}.${PILLAR_TABLE[pillar]} x`;
  if (request.scanBound === null || where.unindexed === null) {
    return `
SELECT ${LIST_COLUMNS[pillar]}, ${sortAt}
${from}
WHERE ${where.indexed}
ORDER BY x.${key} ${dir}, x.id COLLATE "C" ${dir}
LIMIT ${limitParam}`;
  }
  const bound = request.scanBound;
  const inOrder = `ORDER BY w.${key} ${dir}, w.id COLLATE "C" ${dir}`;
  return `
SELECT r.* FROM (
  SELECT w.*,
         row_number() OVER (${inOrder}) AS rn,
         sum(w.hit) OVER (${inOrder} ROWS UNBOUNDED PRECEDING) AS hit_rank
  FROM (
    SELECT ${LIST_COLUMNS[pillar]}, ${sortAt},
           CASE WHEN ${where.unindexed} THEN 1 ELSE 0 END AS hit
    ${from}
    WHERE ${where.indexed}
    ORDER BY x.${key} ${dir}, x.id COLLATE "C" ${dir}
    LIMIT ${bound + 1}) w
) r
WHERE (r.hit = 1 AND r.hit_rank <= ${limitParam} AND r.rn <= ${bound}) OR r.rn >= ${bound}
ORDER BY r.rn`;
}

/** The rows a bulk DLQ filter matches: the matched count of `previewDlqFilter`. */
export function previewDlqFilterCount(s: string, where: string): string {
  return `SELECT count(*)::bigint AS total FROM ${s}.jobs_dlq x WHERE ${where}`;
}

/**
 * The exact number of rows of one pillar matching `where` (`countExactly`). A plain `count(*)`:
 * O(matching rows), for the operator who asks for it, never for a dashboard that polls.
 */
export function countExactly(s: string, pillar: 'hot' | 'archive' | 'dlq', where: string): string {
  return `SELECT count(*)::bigint AS total FROM ${s}.${PILLAR_TABLE[pillar]} x WHERE ${where}`;
}

/**
 * Rows a table retains, estimated without reading it, as the planner estimates a table's size
 * (`table_block_relation_estimate_size`): the density of the last VACUUM or ANALYZE (`reltuples /
 * relpages` of `pg_class`) times the table's current size in pages, so growth since then is
 * counted. A table never vacuumed or analysed has `reltuples = -1` (and one analysed while empty
 * has no density); then the statistics system's live-row count (`n_live_tup`, kept as rows are
 * inserted and deleted, reported at the end of each transaction, up to a few seconds late) stands
 * in. Either way an estimate; `countExactly` counts.
 * @see https://www.postgresql.org/docs/15/catalog-pg-class.html
 * @see https://www.postgresql.org/docs/15/monitoring-stats.html#MONITORING-PG-STAT-ALL-TABLES-VIEW
 */
const estimatedRows = (regclass: string): string => `(
    SELECT CASE
             WHEN c.relpages > 0 AND c.reltuples >= 0
               THEN round(c.reltuples / c.relpages
                          * (pg_relation_size(c.oid) / current_setting('block_size')::bigint))
             ELSE pg_stat_get_live_tuples(c.oid)
           END::bigint
    FROM pg_class c WHERE c.oid = ${regclass}::regclass)`;

/**
 * Lifetime counters summed over queues, exact hot counts by status (through the partial indexes;
 * the hot table is small by design), and ESTIMATED archive and DLQ row counts
 * ({@link estimatedRows}): a dashboard polls this, and counting a history table of millions of
 * rows on every poll is what it must not do. $1, $2: the archive's and the DLQ's qualified names.
 */
export const getSummary = (s: string): string => `
SELECT
  (SELECT coalesce(sum(succeeded_total), 0) FROM ${s}.stats_summary) AS succeeded_total,
  (SELECT coalesce(sum(failed_total), 0) FROM ${s}.stats_summary) AS failed_total,
  (SELECT coalesce(sum(cancelled_total), 0) FROM ${s}.stats_summary) AS cancelled_total,
  (SELECT coalesce(sum(retried_total), 0) FROM ${s}.stats_summary) AS retried_total,
  (SELECT coalesce(sum(resurrected_total), 0) FROM ${s}.stats_summary) AS resurrected_total,
  (SELECT count(*) FROM ${s}.jobs_hot WHERE status = 0) AS pending,
  (SELECT count(*) FROM ${s}.jobs_hot WHERE status = 1) AS fetched,
  (SELECT count(*) FROM ${s}.jobs_hot WHERE status = 2) AS processing,
  coalesce(${estimatedRows('$1')}, 0) AS archived,
  coalesce(${estimatedRows('$2')}, 0) AS dlq`;

/** The qualified names `getSummary` estimates, as its parameters $1 and $2. */
export const getSummaryParams = (s: string): [string, string] => [
  `${s}.jobs_archive`,
  `${s}.jobs_dlq`,
];

/**
 * Per-queue counters, hot counts by status, and controls. No archive or DLQ count: those were a
 * `GROUP BY queue` over both history tables on every call. Each queue's Pending rows are counted
 * in its range of the claim's index `ix_jobs_hot_pending` (led by the queue, partial on
 * `status = 0`): an index-only scan, where a `GROUP BY queue` over the hot table read every row
 * (admin-reads bench, 100,000 pending rows over 20 queues: p95 10 ms, was 24 ms). Fetched and
 * Processing rows, as many as the workers run, through `ix_jobs_hot_active`.
 */
export const getQueueStats = (s: string): string => `
SELECT q.name AS queue, q.is_paused, q.is_active, q.max_workers,
       p.pending, a.fetched, a.processing,
       coalesce(t.succeeded_total, 0) AS succeeded_total, coalesce(t.failed_total, 0) AS failed_total,
       coalesce(t.cancelled_total, 0) AS cancelled_total, coalesce(t.retried_total, 0) AS retried_total,
       coalesce(t.resurrected_total, 0) AS resurrected_total, t.last_activity_utc
FROM ${s}.queues q
LEFT JOIN ${s}.stats_summary t ON t.queue = q.name
CROSS JOIN LATERAL (
  SELECT count(*) AS pending FROM ${s}.jobs_hot j WHERE j.status = 0 AND j.queue = q.name) p
CROSS JOIN LATERAL (
  SELECT count(*) FILTER (WHERE j.status = 1) AS fetched,
         count(*) FILTER (WHERE j.status = 2) AS processing
  FROM ${s}.jobs_hot j WHERE j.status IN (1, 2) AND j.queue = q.name) a
ORDER BY q.name`;

/**
 * Per-queue lag and saturation. Live, from the hot table: the due pending rows of each queue, their
 * average wait and the age of the oldest (the longest wait), read in one pass over the queue's
 * range of the claim's index `ix_jobs_hot_pending`, whose keys hold the due expression
 * `coalesce(scheduled_at_utc, enqueued_at_utc)` and which INCLUDEs both columns since schema
 * version 8, so the pass is an index-only scan: the planner takes one only when every column a
 * query names is stored in the index, an expression key not being enough
 * (https://www.postgresql.org/docs/15/indexes-index-only-scans.html); it read 33,920 heap blocks
 * for 100,000 pending rows before (admin-reads bench: p95 15 ms, was 64 ms). Waits are
 * `date_part` (double precision), not `extract` (numeric since PostgreSQL 14: 100,000 numeric
 * subtractions and a numeric mean cost more than the float ones). The active count through
 * `ix_jobs_hot_active`. From
 * metric buckets: the start lag of the runs started in the current minute and the five before it
 * (the start rows, outcome 4, through `ix_metric_buckets_queue`).
 */
export const getQueueHealth = (s: string): string => `
SELECT q.name AS queue, q.max_workers,
       p.due_pending, p.avg_lag_ms, p.max_lag_ms, a.active,
       l.lag_count, l.lag_sum_ms, l.lag_max_ms
FROM ${s}.queues q
CROSS JOIN LATERAL (
  SELECT count(*) AS due_pending,
         coalesce(avg(date_part('epoch', now() - coalesce(j.scheduled_at_utc, j.enqueued_at_utc))) * 1000, 0) AS avg_lag_ms,
         coalesce(date_part('epoch', now() - min(coalesce(j.scheduled_at_utc, j.enqueued_at_utc))) * 1000, 0) AS max_lag_ms
  FROM ${s}.jobs_hot j
  WHERE j.status = 0 AND j.queue = q.name
    AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()) p
CROSS JOIN LATERAL (
  SELECT count(*) AS active FROM ${s}.jobs_hot j WHERE j.status IN (1, 2) AND j.queue = q.name) a
CROSS JOIN LATERAL (
  SELECT coalesce(sum(b.lag_count), 0) AS lag_count, coalesce(sum(b.lag_sum_ms), 0) AS lag_sum_ms,
         coalesce(max(b.lag_max_ms), 0) AS lag_max_ms
  FROM ${s}.metric_buckets b
  WHERE b.queue = q.name AND b.outcome = 4
    AND b.bucket_utc >= date_trunc('minute', now()) - interval '5 minutes') l
ORDER BY q.name`;

/**
 * How each queue's runs ended over the window that starts $1 whole minutes before the current
 * minute: the buckets of outcomes 0–3 (succeeded, failed, cancelled, retried) from then on, a
 * range of the primary key (bucket_utc first), summed per queue in one pass, then joined to every
 * `queues` row (zeros for a queue without buckets). It reads ($1 + 1) × queues × outcomes rows at
 * most (failures split by reason add a few): about 115,000 for a day over 20 queues, the cost of
 * a day's throughput series. `now()` is the transaction's start, so both mentions of the window's
 * start are one instant.
 */
export const getQueueOutcomes = (s: string): string => `
SELECT q.name AS queue, date_trunc('minute', now()) - $1::integer * interval '1 minute' AS from_utc,
       coalesce(o.succeeded, 0) AS succeeded, coalesce(o.failed, 0) AS failed,
       coalesce(o.cancelled, 0) AS cancelled, coalesce(o.retried, 0) AS retried
FROM ${s}.queues q
LEFT JOIN (
  SELECT b.queue,
         sum(b.completed_count) FILTER (WHERE b.outcome = 0) AS succeeded,
         sum(b.completed_count) FILTER (WHERE b.outcome = 1) AS failed,
         sum(b.completed_count) FILTER (WHERE b.outcome = 2) AS cancelled,
         sum(b.completed_count) FILTER (WHERE b.outcome = 3) AS retried
  FROM ${s}.metric_buckets b
  WHERE b.bucket_utc >= date_trunc('minute', now()) - $1::integer * interval '1 minute'
    AND b.outcome IN (0, 1, 2, 3)
  GROUP BY b.queue) o ON o.queue = q.name
ORDER BY q.name`;

/**
 * Completions over the last minute and the last five from metric buckets (a range of the primary
 * key on bucket_utc); $1 queue or NULL. Buckets are one minute wide, so a window is the current
 * minute plus the whole minutes before it, and `span_*` is its length in seconds so far (60–120 s,
 * 300–360 s): the rates divide by what the counts cover.
 */
export const getThroughput = (s: string): string => `
SELECT
  coalesce(sum(completed_count) FILTER (WHERE bucket_utc >= date_trunc('minute', now()) - interval '1 minute'), 0) AS total_1m,
  coalesce(sum(completed_count), 0) AS total_5m,
  coalesce(sum(completed_count) FILTER (WHERE outcome = 0 AND bucket_utc >= date_trunc('minute', now()) - interval '1 minute'), 0) AS succeeded_1m,
  coalesce(sum(completed_count) FILTER (WHERE outcome = 1 AND bucket_utc >= date_trunc('minute', now()) - interval '1 minute'), 0) AS failed_1m,
  coalesce(sum(completed_count) FILTER (WHERE outcome = 0), 0) AS succeeded_5m,
  coalesce(sum(completed_count) FILTER (WHERE outcome = 1), 0) AS failed_5m,
  extract(epoch FROM now() - (date_trunc('minute', now()) - interval '1 minute')) AS span_1m,
  extract(epoch FROM now() - (date_trunc('minute', now()) - interval '5 minutes')) AS span_5m
FROM ${s}.metric_buckets
WHERE bucket_utc >= date_trunc('minute', now()) - interval '5 minutes'
  AND outcome IN (0, 1, 2)
  AND ($1::text IS NULL OR queue = $1::text)`;

/** The sums of a series row over `b`: metric buckets, or per-bucket sums under the same names. */
const seriesSums = (b: string): string => `
       sum(${b}.completed_count) AS count, sum(${b}.duration_count) AS duration_count,
       sum(${b}.total_duration_ms) AS total_duration_ms, sum(${b}.lag_count) AS lag_count,
       sum(${b}.lag_sum_ms) AS lag_sum_ms, max(${b}.lag_max_ms) AS lag_max_ms`;

/**
 * A throughput series: the metric buckets of [$1, $2) summed per step and outcome. $1/$2 the start
 * (a whole minute) and end of the series, $3 the step in ms, $4 the queue (only with `queue`). A
 * range of the primary key (bucket_utc first) or, for one queue, of
 * `ix_metric_buckets_queue (queue, bucket_utc)`: a day at one-minute buckets is 1,440 rows per
 * queue and outcome, so 115,000 rows for 20 queues and 4 outcomes. Steps without buckets have no
 * row (the caller fills them), and a step may have several rows (the caller adds them up).
 *
 * The rows are grouped by their own `bucket_utc` (a plain 8-byte key), and the step's index
 * (`slot`) is computed once per group, not per row: the slot of each row, as
 * `extract(epoch …) * 1000` (numeric), cost more than the sums (admin-reads bench, all queues
 * over a day at one-minute steps: p95 34 ms, was 68 ms). With a one-minute step (`perBucket`) each
 * group is its step; with a longer one, the per-bucket sums (bigint) are summed again per step,
 * so that no more rows than steps × outcomes are sent.
 */
export const getThroughputSeries = (s: string, queue: boolean, perBucket: boolean): string => {
  const slot = (b: string) =>
    `(date_part('epoch', ${b}.bucket_utc - $1::timestamptz) * 1000)::bigint / $3::bigint`;
  const grouped = `
FROM ${s}.metric_buckets b
WHERE b.bucket_utc >= $1::timestamptz AND b.bucket_utc < $2::timestamptz${queue ? ' AND b.queue = $4::text' : ''}
GROUP BY b.bucket_utc, b.outcome`;
  if (perBucket) {
    return `
SELECT ${slot('b')} AS slot, b.outcome,${seriesSums('b')}${grouped}`;
  }
  return `
SELECT ${slot('m')} AS slot, m.outcome,${seriesSums('m')}
FROM (
  SELECT b.bucket_utc, b.outcome,
         sum(b.completed_count)::bigint AS completed_count, sum(b.duration_count)::bigint AS duration_count,
         sum(b.total_duration_ms)::bigint AS total_duration_ms, sum(b.lag_count)::bigint AS lag_count,
         sum(b.lag_sum_ms)::bigint AS lag_sum_ms, max(b.lag_max_ms) AS lag_max_ms${grouped}) m
GROUP BY 1, 2`;
};

/**
 * The window of `getTopDlqErrors`: the first line of the error (at most `ERROR_LINE_PREFIX`
 * characters: the rest is never sent) of the newest `TOP_ERRORS_WINDOW_ROWS` DLQ rows matching
 * `where` that failed within the last `windowParam` ms. A backward range scan of
 * `ix_jobs_dlq_failed` (or of the queue's or the reason's index), stopped by the row bound, so it
 * reads at most that many rows whatever the size of the DLQ. The families are grouped in
 * `shared/error-family.ts`.
 */
export const getTopDlqErrors = (
  s: string,
  where: string,
  windowParam: string,
  rowsParam: string,
  prefix: number,
): string => `
SELECT left(split_part(coalesce(x.error_details, ''), E'\\n', 1), ${Number(prefix)}) AS line,
       x.failed_at_utc
FROM ${s}.jobs_dlq x
WHERE ${where} AND x.failed_at_utc >= now() - ${windowParam}::float8 ${MS}
ORDER BY x.failed_at_utc DESC
LIMIT ${rowsParam}`;

/** Sample ids (in the order bulk actions take them: oldest failure first) for a preview. */
export const previewDlqFilterSample = (s: string, where: string, limitParam: string): string => `
SELECT x.id FROM ${s}.jobs_dlq x WHERE ${where}
ORDER BY x.failed_at_utc, x.id
LIMIT ${limitParam}`;

// ------------------------------------------------------------------------------------------ recurring

/**
 * Creates or updates a recurring definition. $1 name, $2 cron, $3 zone, $4 queue, $5 type,
 * $6 payload, $7 misfire policy, $8 next slot, $9 source. `last_slot_utc`, `last_job_id` and
 * `is_paused` are kept; `next_slot_utc` is reset only when the cron or zone changed (every SET
 * reads the old row).
 */
export const upsertRecurringJob = (s: string): string => `
INSERT INTO ${s}.recurring_jobs AS r (
  name, cron, time_zone, queue, type, payload, last_slot_utc, next_slot_utc, misfire_policy, is_paused, source)
VALUES ($1, $2, $3, $4, $5, $6, NULL, $8, $7, false, $9)
ON CONFLICT (name) DO UPDATE
SET next_slot_utc = CASE WHEN r.cron IS DISTINCT FROM EXCLUDED.cron
                           OR r.time_zone IS DISTINCT FROM EXCLUDED.time_zone
                         THEN EXCLUDED.next_slot_utc ELSE r.next_slot_utc END,
    cron = EXCLUDED.cron, time_zone = EXCLUDED.time_zone, queue = EXCLUDED.queue,
    type = EXCLUDED.type, payload = EXCLUDED.payload, misfire_policy = EXCLUDED.misfire_policy,
    source = EXCLUDED.source`;

/** All recurring definitions. */
export const getRecurringJobs = (s: string): string =>
  `SELECT * FROM ${s}.recurring_jobs ORDER BY name`;

/** Pauses ($2 true) or resumes ($2 false) recurring job $1; a row back when it exists. */
export const setRecurringJobPaused = (s: string): string => `
UPDATE ${s}.recurring_jobs SET is_paused = $2 WHERE name = $1
RETURNING name`;

/** Deletes recurring job $1; a row back when it existed. */
export const removeRecurringJob = (s: string): string => `
DELETE FROM ${s}.recurring_jobs WHERE name = $1
RETURNING name`;

/**
 * Records job $2 as the last run of recurring job $1, leaving the slots alone; a row back when the
 * job exists. Runs first in the trigger's transaction: its row lock (READ COMMITTED) makes a
 * concurrent remove wait for the enqueue to commit, or the trigger find no row and enqueue nothing.
 * Also corrects the claim's `last_job_id` when the slot's idempotency key met a job already hot.
 */
export const triggerRecurringJob = (s: string): string => `
UPDATE ${s}.recurring_jobs SET last_job_id = $2 WHERE name = $1
RETURNING name`;

/**
 * Compare-and-set of a recurring slot: advances `next_slot_utc` from $2 to $3 (and records $2 as
 * `last_slot_utc`, and $4, the slot's job when one is enqueued, as `last_job_id`) only if it still
 * equals $2. Lock/isolation: READ COMMITTED row lock; a second process racing for the same slot
 * waits, then re-checks `next_slot_utc = $2` on the new row version and updates nothing. Runs in one
 * transaction with the slot's enqueue.
 */
export const claimRecurringSlot = (s: string): string => `
UPDATE ${s}.recurring_jobs
SET last_slot_utc = $2, next_slot_utc = $3, last_job_id = coalesce($4, last_job_id)
WHERE name = $1 AND next_slot_utc = $2
RETURNING name`;

// ------------------------------------------------------------------------------------------ audit log

/**
 * The audit row of an action ($1 id, $2 actor, $3 action, $4 target, $5 rows affected, $6 details),
 * in the transaction of the change it records. The first batch of an action inserts it; a later
 * batch of the same action (same id) adds its rows and, when it brings details ($6 not null),
 * replaces them (a retention run's counts so far). `now()` is the transaction's start: the time of
 * the action's first write. Lock/isolation: READ COMMITTED; only the action's own transactions
 * touch its row, one after the other.
 */
export const recordAudit = (s: string): string => `
INSERT INTO ${s}.audit_log AS a (id, at_utc, actor, action, target, rows_affected, details)
VALUES ($1, now(), $2, $3, $4, $5, $6)
ON CONFLICT (id) DO UPDATE
SET rows_affected = a.rows_affected + EXCLUDED.rows_affected,
    details = coalesce(EXCLUDED.details, a.details)`;

/**
 * A page of the audit log, newest first from the cursor ($1 at, $2 id; both null for the first
 * page), filtered by actor ($3), action ($4), from ($5, inclusive) and to ($6, exclusive), at most
 * $7 rows: read backwards along `ix_audit_log_at (at_utc, id)`. A plain read (no lock).
 *
 * With `byTarget`, only the entries whose target is $8: read backwards along
 * `ix_audit_log_target (left(target, 255), at_utc, id)` (schema version 9) from the cursor, so a
 * page costs its own rows, not a walk of the log. The condition on the key's expression is what
 * lets the planner use the index (it matches an expression index only by the same expression);
 * the whole target is compared too, for targets longer than the key. Its own text, not an
 * `$8 IS NULL OR …` term: only a plan made for the bound values can fold such a term away, and an
 * OR left in a generic plan cannot seek the index.
 */
export const getAuditLog = (s: string, byTarget = false): string => `
SELECT a.* FROM ${s}.audit_log a
WHERE ($1::timestamptz IS NULL OR (a.at_utc, a.id COLLATE "C") < ($1::timestamptz, $2::text COLLATE "C"))
  AND ($3::text IS NULL OR a.actor = $3)
  AND ($4::text IS NULL OR a.action = $4)
  AND ($5::timestamptz IS NULL OR a.at_utc >= $5)
  AND ($6::timestamptz IS NULL OR a.at_utc < $6)${
    byTarget
      ? `
  AND left(a.target, ${AUDIT_TARGET_KEY_LENGTH}) = left($8::text, ${AUDIT_TARGET_KEY_LENGTH}) AND a.target = $8::text`
      : ''
  }
ORDER BY a.at_utc DESC, a.id COLLATE "C" DESC
LIMIT $7`;

/**
 * The confirmation secret: stores $1 unless a secret exists, and returns the stored one. `ON
 * CONFLICT DO UPDATE` (a no-op update of the row found) returns the row whichever call inserted
 * it: when two first calls race, the second waits for the first to commit and then updates and
 * returns that committed row ("an atomic INSERT or UPDATE outcome",
 * https://www.postgresql.org/docs/15/sql-insert.html#SQL-ON-CONFLICT). `DO NOTHING` followed by a
 * SELECT of the table in the same statement would not do: the SELECT reads the statement's
 * snapshot, taken before the first call committed, and finds no row.
 */
export const confirmationSecret = (s: string): string => `
INSERT INTO ${s}.settings (name, value) VALUES ('confirmation-secret', $1)
ON CONFLICT (name) DO UPDATE SET value = ${s}.settings.value
RETURNING value`;

/** Retention batch of the audit log: entries older than $1 ms, at most $2; as {@link applyRetentionArchive}. */
export const applyRetentionAudit = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.id FROM ${s}.audit_log r
  WHERE r.at_utc < now() - $1::float8 ${MS}
  ORDER BY r.at_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED)
DELETE FROM ${s}.audit_log a USING chosen c WHERE a.id = c.id
RETURNING a.id`;

// ------------------------------------------------------------------------------------------ misc

/**
 * The store's fixed statements, built once per schema, each under the name of the method it serves
 * (a suffix for a step of that method). Being fixed texts, they are the ones that run as named
 * prepared statements (`postgres.connection.ts`); the statements built per call are not.
 */
export const hotPathStatements = (
  s: string,
  notifyChannel: string | null,
  cancelNotifyChannel: string | null,
) => ({
  enqueue: enqueue(s, notifyChannel),
  enqueueHolders: enqueueHolders(s),
  fetchNextBatch: fetchNextBatch(s),
  fetchNextBatchUnbudgeted: fetchNextBatch(s, 'unbudgeted'),
  fetchNextBatchLockBudgets: fetchNextBatchLockBudgets(s),
  fetchNextBatchClaimed: fetchNextBatchClaimed(s),
  fetchNextBatchRateState: fetchNextBatchRateState(s),
  markAsProcessing: markAsProcessing(s),
  keepAlive: keepAlive(s),
  release: release(s),
  unstart: unstart(s),
  reportProgress: reportProgress(s),
  rescheduleForRetry: rescheduleForRetry(s),
  archiveSucceeded: archiveSucceeded(s),
  cancel: cancel(s),
  cancelRequest: cancelRequest(s, cancelNotifyChannel),
  recoverAbandoned: recoverAbandoned(s),
  archiveZombies: archiveZombies(s),
  upsertWorker: upsertWorker(s),
});

/** The database clock. */
export const SELECT_NOW = `SELECT clock_timestamp() AS now`;

/** Server version, checked once by `prepare()`. */
export const SELECT_SERVER_VERSION = `SELECT current_setting('server_version_num')::int AS version`;

/** A SQL string literal of trusted text (channel names built from the validated schema). */
function literal(text: string): string {
  if (!/^[A-Za-z0-9_:]+$/.test(text)) throw new Error(`Refusing to inline ${text}`);
  return `'${text}'`;
}
