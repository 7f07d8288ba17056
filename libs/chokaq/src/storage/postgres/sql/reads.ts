/**
 * The reads operators ask: one job across the pillars, counts, stats, health, throughput, error
 * families and bulk previews. Telemetry reads may be approximate (planner estimates); no state
 * transition relies on them.
 */
import type {
  CheckedCountQuery,
  CheckedOutcomesQuery,
  CheckedSeriesQuery,
} from '../../../validation/validate-reads';
import type { DlqFilter } from '../../../interfaces/job-view.interface';
import {
  METRIC_BUCKET_MS,
  TOP_ERRORS_WINDOW_MS,
  TOP_ERRORS_WINDOW_ROWS,
} from '../../../validation/limits';
import { ERROR_LINE_PREFIX } from '../../shared/error-family';
import { PILLAR_TABLE, filterClause } from './filters';
import { EPOCH_MS, METRIC_SEAL_SETTING, MS } from './fragments';

/** One job by id ($1) in each pillar; read one after the other (hot, archive, DLQ). */
export const getJobHot = (s: string): string => `SELECT * FROM ${s}.jobs_hot WHERE id = $1`;

/** @see getJobHot */
export const getJobArchive = (s: string): string => `SELECT * FROM ${s}.jobs_archive WHERE id = $1`;

/** @see getJobHot */
export const getJobDlq = (s: string): string => `SELECT * FROM ${s}.jobs_dlq WHERE id = $1`;

/** Binds {@link getJobHot}, {@link getJobArchive}, {@link getJobDlq} and {@link getJobAttempts}: $1 the id. */
export function getJobParams(id: string): unknown[] {
  return [id];
}

/**
 * The attempt rows of job $1, oldest first (`getJob` with `attempts`): one range of the primary
 * key `(job_id, seq)`, read in its order. A plain read (no lock).
 */
export const getJobAttempts = (s: string): string => `
SELECT * FROM ${s}.job_attempts WHERE job_id = $1 ORDER BY seq`;

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

/** {@link countExactly} for a checked query, with the filter's values. */
export function countExactlyQuery(
  s: string,
  query: CheckedCountQuery,
): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const where = filterClause(query.pillar, query.filter, values, 'x');
  return { text: countExactly(s, query.pillar, where), values };
}

/**
 * Rows a table retains, estimated without reading it, as the planner estimates a table's size
 * (`table_block_relation_estimate_size`): the density of the last VACUUM or ANALYZE (`reltuples /
 * relpages` of `pg_class`) times the table's current size in pages, so growth since then is
 * counted. A table never vacuumed or analysed has `reltuples = -1` (and one analysed while empty
 * has no density); then the statistics system's live-row count (`n_live_tup`, kept as rows are
 * inserted and deleted, reported at the end of each transaction, up to a few seconds late) stands
 * in. Either way an estimate; `countExactly` counts. Summed over the table and the leaves of its
 * `pg_partition_tree`: a partitioned Archive (`storage.partitioning`) holds its rows in its
 * partitions (the parent, which has no storage, adds 0), and a plain table has no tree.
 * @see https://www.postgresql.org/docs/15/catalog-pg-class.html
 * @see https://www.postgresql.org/docs/15/functions-info.html#FUNCTIONS-INFO-PARTITION
 * @see https://www.postgresql.org/docs/15/monitoring-stats.html#MONITORING-PG-STAT-ALL-TABLES-VIEW
 */
const estimatedRows = (regclass: string): string => `(
    SELECT sum(CASE
                 WHEN c.relpages > 0 AND c.reltuples >= 0
                   THEN round(c.reltuples / c.relpages
                              * (pg_relation_size(c.oid) / current_setting('block_size')::bigint))
                 ELSE pg_stat_get_live_tuples(c.oid)
               END)::bigint
    FROM pg_class c
    WHERE c.oid = ${regclass}::regclass
       OR c.oid IN (SELECT t.relid FROM pg_partition_tree(${regclass}::regclass) t WHERE t.isleaf))`;

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
  (SELECT coalesce(sum(deferred_total), 0) FROM ${s}.stats_summary) AS deferred_total,
  (SELECT coalesce(sum(resurrected_total), 0) FROM ${s}.stats_summary) AS resurrected_total,
  (SELECT count(*) FROM ${s}.jobs_hot WHERE status = 0) AS pending,
  (SELECT count(*) FROM ${s}.jobs_hot WHERE status = 1) AS fetched,
  (SELECT count(*) FROM ${s}.jobs_hot WHERE status = 2) AS processing,
  (SELECT count(*) FROM ${s}.jobs_hot WHERE status = 7) AS waiting,
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
 * Processing rows, as many as the workers run, through `ix_jobs_hot_active`; Waiting rows through
 * `ix_jobs_hot_waiting` (partial on `status = 7`, led by the queue).
 */
export const getQueueStats = (s: string): string => `
SELECT q.name AS queue, q.is_paused, q.is_active, q.max_workers,
       p.pending, a.fetched, a.processing, w.waiting,
       coalesce(t.succeeded_total, 0) AS succeeded_total, coalesce(t.failed_total, 0) AS failed_total,
       coalesce(t.cancelled_total, 0) AS cancelled_total, coalesce(t.retried_total, 0) AS retried_total,
       coalesce(t.deferred_total, 0) AS deferred_total,
       coalesce(t.resurrected_total, 0) AS resurrected_total, t.last_activity_utc
FROM ${s}.queues q
LEFT JOIN ${s}.stats_summary t ON t.queue = q.name
CROSS JOIN LATERAL (
  SELECT count(*) AS pending FROM ${s}.jobs_hot j WHERE j.status = 0 AND j.queue = q.name) p
CROSS JOIN LATERAL (
  SELECT count(*) FILTER (WHERE j.status = 1) AS fetched,
         count(*) FILTER (WHERE j.status = 2) AS processing
  FROM ${s}.jobs_hot j WHERE j.status IN (1, 2) AND j.queue = q.name) a
CROSS JOIN LATERAL (
  SELECT count(*) AS waiting FROM ${s}.jobs_hot j WHERE j.status = 7 AND j.queue = q.name) w
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
 * `ix_jobs_hot_active`. The rows an open circuit holds (not due yet, `held_since_utc` set)
 * through `ix_jobs_hot_held`, which holds only those: their wait counts from when they were first
 * due, and the read returns the sums and counts of both passes for the mean. From
 * metric buckets: the start lag of the runs started in the current minute and the five before it
 * (the start rows, outcome 4, through `ix_metric_buckets_queue`).
 */
export const getQueueHealth = (s: string): string => `
SELECT q.name AS queue, q.max_workers,
       p.due_pending, p.lag_sum_ms, p.max_lag_ms, h.held_pending, h.held_lag_sum_ms,
       h.held_max_lag_ms, h.held_until_utc, a.active,
       l.lag_count, l.lag_sum_ms AS start_lag_sum_ms, l.lag_max_ms
FROM ${s}.queues q
CROSS JOIN LATERAL (
  SELECT count(*) AS due_pending,
         coalesce(sum(date_part('epoch', now() - coalesce(j.scheduled_at_utc, j.enqueued_at_utc))) * 1000, 0) AS lag_sum_ms,
         coalesce(date_part('epoch', now() - min(coalesce(j.scheduled_at_utc, j.enqueued_at_utc))) * 1000, 0) AS max_lag_ms
  FROM ${s}.jobs_hot j
  WHERE j.status = 0 AND j.queue = q.name
    AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()) p
CROSS JOIN LATERAL (
  SELECT count(*) AS held_pending,
         coalesce(sum(date_part('epoch', now() - j.held_since_utc)) * 1000, 0) AS held_lag_sum_ms,
         coalesce(date_part('epoch', now() - min(j.held_since_utc)) * 1000, 0) AS held_max_lag_ms,
         min(coalesce(j.scheduled_at_utc, j.enqueued_at_utc)) AS held_until_utc
  FROM ${s}.jobs_hot j
  WHERE j.status = 0 AND j.queue = q.name AND j.held_since_utc IS NOT NULL
    AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) > now()) h
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
 * most (failures split by reason add a few): about 115,000 for a day over 20 queues. `now()` is
 * the transaction's start, so both mentions of the window's start are one instant.
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

/** Binds {@link getQueueOutcomes}: $1 the window in whole minutes. */
export function getQueueOutcomesParams(query: CheckedOutcomesQuery): unknown[] {
  return [query.minutes];
}

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

/** Binds {@link getThroughput}: $1 the queue, or NULL for every queue. */
export function getThroughputParams(queue: string | undefined): unknown[] {
  return [queue ?? null];
}

/** The sums of a series row over `b`: metric buckets, or per-bucket sums under the same names. */
const seriesSums = (b: string): string => `
       sum(${b}.completed_count) AS count, sum(${b}.duration_count) AS duration_count,
       sum(${b}.total_duration_ms) AS total_duration_ms, sum(${b}.lag_count) AS lag_count,
       sum(${b}.lag_sum_ms) AS lag_sum_ms, max(${b}.lag_max_ms) AS lag_max_ms`;

/**
 * The buckets of every queue over [$1, $2): `metric_totals` (one row per minute and outcome) for
 * the minutes the last seal covers, `metric_buckets` for the rest (`sealMetricTotals`: the minutes
 * from its mark on, which a transaction may still be writing). Each a range of its primary key;
 * the mark is read once (an InitPlan), and without one every minute comes from the buckets.
 */
const sealedAndOpenBuckets = (s: string): string => `
  WITH seal AS MATERIALIZED (
    SELECT coalesce((SELECT to_timestamp(m.value::float8) FROM ${s}.settings m
                     WHERE m.name = '${METRIC_SEAL_SETTING}'), '-infinity') AS upto)
  SELECT t.bucket_utc, t.outcome, t.completed_count, t.duration_count, t.total_duration_ms,
         t.lag_count, t.lag_sum_ms, t.lag_max_ms
  FROM ${s}.metric_totals t
  WHERE t.bucket_utc >= $1::timestamptz AND t.bucket_utc < least($2::timestamptz, (SELECT upto FROM seal))
  UNION ALL
  SELECT b.bucket_utc, b.outcome, b.completed_count, b.duration_count, b.total_duration_ms,
         b.lag_count, b.lag_sum_ms, b.lag_max_ms
  FROM ${s}.metric_buckets b
  WHERE b.bucket_utc >= greatest($1::timestamptz, (SELECT upto FROM seal)) AND b.bucket_utc < $2::timestamptz`;

/**
 * A throughput series: the metric buckets of [$1, $2) summed per step and outcome. $1/$2 the start
 * (a whole minute) and end of the series, $3 the step in ms, $4 the queue (only with `queue`). For
 * one queue, a range of `ix_metric_buckets_queue (queue, bucket_utc)`: a day at one-minute buckets
 * is 1,440 rows per outcome. For every queue, {@link sealedAndOpenBuckets}: the per-minute totals
 * of the sealed minutes and the buckets of the rest, where the buckets alone were 115,000 rows
 * for a day of 20 queues and 4 outcomes. Steps without buckets have no row (the caller fills
 * them), and a step may have several rows (the caller adds them up).
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
  const grouped = queue
    ? `
FROM ${s}.metric_buckets b
WHERE b.bucket_utc >= $1::timestamptz AND b.bucket_utc < $2::timestamptz AND b.queue = $4::text
GROUP BY b.bucket_utc, b.outcome`
    : `
FROM (${sealedAndOpenBuckets(s)}) b
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

/** {@link getThroughputSeries} for a checked query, with its values ($1 from, $2 to, $3 step, $4 queue). */
export function getThroughputSeriesQuery(
  s: string,
  query: CheckedSeriesQuery,
): { text: string; values: unknown[] } {
  const values: unknown[] = [query.from, query.to, query.stepMs];
  if (query.queue !== null) values.push(query.queue);
  const perBucket = query.stepMs === METRIC_BUCKET_MS;
  return { text: getThroughputSeries(s, query.queue !== null, perBucket), values };
}

/**
 * The window of `getTopDlqErrors`: the first line of the error (at most `ERROR_LINE_PREFIX`
 * characters: the rest is never sent) of the newest `TOP_ERRORS_WINDOW_ROWS` DLQ rows matching
 * `where` that failed within the last `windowParam` ms. A backward range scan of
 * `ix_jobs_dlq_failed` (or of the queue's or the reason's index), stopped by the row bound, so it
 * reads at most that many rows whatever the size of the DLQ. The families are grouped in
 * `shared/error-family.ts`. The failure time goes as epoch milliseconds ({@link EPOCH_MS}), not as
 * a `timestamptz`: the driver parses 10,000 text dates in about 5 ms on the bench's machine, and
 * 10,000 numbers in about 1 ms.
 */
export const getTopDlqErrors = (
  s: string,
  where: string,
  windowParam: string,
  rowsParam: string,
  prefix: number,
): string => `
SELECT left(split_part(coalesce(x.error_details, ''), E'\\n', 1), ${Number(prefix)}) AS line,
       ${EPOCH_MS('x.failed_at_utc')} AS failed_at_ms
FROM ${s}.jobs_dlq x
WHERE ${where} AND x.failed_at_utc >= now() - ${windowParam}::float8 ${MS}
ORDER BY x.failed_at_utc DESC
LIMIT ${rowsParam}`;

/**
 * {@link getTopDlqErrors} over a DLQ filter, with its values: the filter's, then the window's
 * length in ms and its most rows (`TOP_ERRORS_WINDOW_MS`, `TOP_ERRORS_WINDOW_ROWS`).
 */
export function getTopDlqErrorsQuery(s: string, f: DlqFilter): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const where = filterClause('dlq', f, values, 'x');
  values.push(TOP_ERRORS_WINDOW_MS, TOP_ERRORS_WINDOW_ROWS);
  const window = `$${values.length - 1}`;
  const rows = `$${values.length}`;
  return { text: getTopDlqErrors(s, where, window, rows, ERROR_LINE_PREFIX), values };
}

/** Sample ids (in the order bulk actions take them: oldest failure first) for a preview. */
export const previewDlqFilterSample = (s: string, where: string, limitParam: string): string => `
SELECT x.id FROM ${s}.jobs_dlq x WHERE ${where}
ORDER BY x.failed_at_utc, x.id
LIMIT ${limitParam}`;

/**
 * A bulk preview's two reads over a DLQ filter, with their values: the matched count
 * ({@link previewDlqFilterCount}) and up to `sample` ids ({@link previewDlqFilterSample}).
 */
export function previewDlqFilterQueries(
  s: string,
  f: DlqFilter,
  sample: number,
): { count: { text: string; values: unknown[] }; sample: { text: string; values: unknown[] } } {
  const values: unknown[] = [];
  const where = filterClause('dlq', f, values, 'x');
  return {
    count: { text: previewDlqFilterCount(s, where), values },
    sample: {
      text: previewDlqFilterSample(s, where, `$${values.length + 1}`),
      values: [...values, sample],
    },
  };
}

/**
 * The busiest groups of queue $1, at most $2: Pending and active (Fetched, Processing) rows per
 * group, most active first, then most pending, then by key. Each half reads one partial index
 * of the queue's (`ix_jobs_hot_group_pending`, of grouped rows only; `ix_jobs_hot_active`, by
 * queue and group).
 */
export const getQueueGroups = (s: string): string => `
SELECT x.group_key, sum(x.pending)::int AS pending, sum(x.running)::int AS running
FROM (
  SELECT j.group_key, count(*) AS pending, 0 AS running FROM ${s}.jobs_hot j
  WHERE j.status = 0 AND j.queue = $1 AND j.group_key IS NOT NULL GROUP BY j.group_key
  UNION ALL
  SELECT j.group_key, 0, count(*) FROM ${s}.jobs_hot j
  WHERE j.status IN (1, 2) AND j.queue = $1 AND j.group_key IS NOT NULL GROUP BY j.group_key
) x
GROUP BY x.group_key
ORDER BY running DESC, pending DESC, x.group_key
LIMIT $2`;

/**
 * How far a hot standby's reads trail its primary, in ms (`lag_ms`): null on a server that is not
 * in recovery (a primary), 0 while everything received has been replayed (an idle primary sends
 * nothing, so the age of the last replayed transaction would grow without any lag), else the age of
 * the last transaction replayed. https://www.postgresql.org/docs/15/functions-admin.html#FUNCTIONS-RECOVERY-INFO-TABLE
 */
export const SELECT_REPLICATION_LAG = `
SELECT CASE
  WHEN NOT pg_is_in_recovery() THEN NULL
  WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
  ELSE round(extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000)
END AS lag_ms`;
