/**
 * The reads operators ask: one job, summary, queue stats and health, outcomes, throughput, and the
 * per-filter counts, error families and previews. Reads never block writers (WAL).
 */
import { METRIC_BUCKET_MS } from '../../../validation/limits';
import { SqlWhere } from './filters';
import { BUCKET_NOW, SQLITE_NOW_MS, SqliteTables } from './fragments';
import { chooseDlqByFilter } from './moves';

/**
 * The series read of `getThroughputSeries`; steps without buckets have no row. The slot is cast:
 * better-sqlite3 binds a JavaScript number as REAL, and REAL division does not truncate.
 */
function seriesStatement(buckets: string, queue: boolean): string {
  return `SELECT CAST((bucket_utc - @from) / @step AS INTEGER) AS slot, outcome,
        SUM(completed_count) AS count, SUM(duration_count) AS duration_count,
        SUM(total_duration_ms) AS total_duration_ms, SUM(lag_count) AS lag_count,
        SUM(lag_sum_ms) AS lag_sum_ms, MAX(lag_max_ms) AS lag_max_ms
      FROM ${buckets}
      WHERE bucket_utc >= @from AND bucket_utc < @to${queue ? ' AND queue = @queue' : ''}
      GROUP BY slot, outcome`;
}

/** The rows a bulk DLQ filter matches: the matched count of `previewDlqFilter`. */
export function previewDlqFilterCount(dlqTable: string, where: SqlWhere): string {
  return `SELECT COUNT(*) AS n FROM ${dlqTable} WHERE ${where.sql}`;
}

/**
 * The window of getTopDlqErrors: the first line of the error (at most `@prefix` characters; the
 * rest is never read out) of the newest `@rows` DLQ rows matching `where` that failed within the
 * last `@window` ms (database clock), through `jobs_dlq_failed_ix` (or the queue's or the
 * reason's index) newest first, stopped by the row bound. The families are grouped in
 * `shared/error-family.ts`.
 */
export function getTopDlqErrors(dlqTable: string, where: SqlWhere): string {
  return `SELECT substr(CASE WHEN instr(COALESCE(error_details, ''), char(10)) > 0
                          THEN substr(error_details, 1, instr(error_details, char(10)) - 1)
                          ELSE COALESCE(error_details, '') END, 1, @prefix) AS line,
        failed_at_utc
      FROM ${dlqTable}
      WHERE ${where.sql} AND failed_at_utc >= ${SQLITE_NOW_MS} - @window
      ORDER BY failed_at_utc DESC LIMIT @rows`;
}

/** countExactly: the rows of one pillar matching `where` (a plain COUNT, on request only). */
export function countExactly(table: string, where: SqlWhere): string {
  return `SELECT COUNT(*) AS n FROM ${table} WHERE ${where.sql}`;
}

/** previewDlqFilter: the ids a bulk action would take first. */
export function previewDlqFilterSample(dlqTable: string, where: SqlWhere): string {
  return chooseDlqByFilter(dlqTable, where);
}

/** The fixed reads: one job, summary, queue stats and health, outcomes, throughput. */
export function readStatements(t: SqliteTables, p: string) {
  const { hot, archive, dlq, stats, buckets, queues, rowCounts } = t;
  /** The claim's index of Pending rows (schema version 1), which the hot counts read. */
  const pendingIndex = `${p}jobs_hot_pending_ix`;
  const heldIndex = `${p}jobs_hot_held_ix`;
  /** The Waiting rows' index (schema version 17), which the waiting counts read. */
  const waitingIndex = `${p}jobs_hot_waiting_ix`;
  return {
    /** getJob: hot first, then archive, then DLQ (primary-key reads). */
    getJobHot: `SELECT * FROM ${hot} WHERE id = @id`,

    getJobArchive: `SELECT * FROM ${archive} WHERE id = @id`,

    getJobDlq: `SELECT * FROM ${dlq} WHERE id = @id`,

    /** getJob with attempts: the job's attempt rows, oldest first (a range of the primary key). */
    getJobAttempts: `SELECT * FROM ${t.attempts} WHERE job_id = @id ORDER BY seq`,

    /**
     * getSummary: lifetime counters summed over queues, then the hot counts by status, Waiting
     * included (the hot table is small by design), then the archive's and the DLQ's row counts,
     * which the triggers of schema version 2 keep exact with every insert and delete
     * (`row_counts`): two rows read, never a count of the history t.
     */
    getSummary: `SELECT COALESCE(SUM(succeeded_total), 0) AS succeeded_total,
        COALESCE(SUM(failed_total), 0) AS failed_total,
        COALESCE(SUM(cancelled_total), 0) AS cancelled_total,
        COALESCE(SUM(retried_total), 0) AS retried_total,
        COALESCE(SUM(deferred_total), 0) AS deferred_total,
        COALESCE(SUM(resurrected_total), 0) AS resurrected_total
      FROM ${stats}`,

    getSummaryHot: `SELECT status, COUNT(*) AS n FROM ${hot} GROUP BY status`,

    getSummaryRetained: `SELECT pillar, row_count FROM ${rowCounts}`,

    /**
     * getQueueStats: every queue known to `Queues` or `StatsSummary`, with its counters and
     * controls; then the hot counts per queue and status (`getQueueStatsHot`). No archive or DLQ
     * count per queue.
     */
    getQueueStats: `WITH names(queue) AS (SELECT name FROM ${queues} UNION SELECT queue FROM ${stats})
      SELECT n.queue, s.succeeded_total, s.failed_total, s.cancelled_total, s.retried_total,
        s.deferred_total, s.resurrected_total, s.last_activity_utc, q.is_paused, q.is_active, q.max_workers
      FROM names n
      LEFT JOIN ${stats} s ON s.queue = n.queue
      LEFT JOIN ${queues} q ON q.name = n.queue
      ORDER BY n.queue`,

    /**
     * getQueueStats, hot counts: the Pending rows of each queue counted in the claim's index
     * `jobs_hot_pending_ix` (led by the queue, partial on `status = 0`, so it covers the count),
     * and the Fetched and Processing rows, as many as the workers run, through
     * `jobs_hot_active_ix`. A `GROUP BY queue, status` over the whole table read every row
     * (admin-reads bench, 100,000 pending rows: p95 7.5 ms, was 65 ms). `INDEXED BY`
     * requires the index: with the statistics of `ANALYZE`, the planner otherwise prefers the
     * active list's `(queue, enqueued_at_utc, id)` for its order and reads each row for its
     * status. SQLite keeps `INDEXED BY` for a time-sensitive statement whose plan must not change,
     * a statement that cannot use the index failing instead of scanning
     * (https://www.sqlite.org/lang_indexedby.html); the gentler means its planner checklist names
     * first, a unary `+` on the grouped column, gave a full scan here.
     */
    getQueueStatsHot: `SELECT queue, 0 AS status, COUNT(*) AS n
        FROM ${hot} INDEXED BY ${pendingIndex} WHERE status = 0 GROUP BY queue
      UNION ALL
      SELECT queue, status, COUNT(*) AS n FROM ${hot} WHERE status IN (1, 2) GROUP BY queue, status`,

    /**
     * getQueueStats, waiting counts: the Waiting rows of each queue (jobs waiting on their
     * dependencies), counted in `jobs_hot_waiting_ix` (led by the queue, partial on `status = 7`,
     * so it covers the count), pinned by `INDEXED BY` as `getQueueStatsHot` pins the pending
     * index. Runs in the same read transaction as the other counts (one WAL snapshot).
     */
    getQueueStatsWaiting: `SELECT queue, COUNT(*) AS n
      FROM ${hot} INDEXED BY ${waitingIndex} WHERE status = 7 GROUP BY queue`,

    /**
     * getQueueHealth: due Pending rows, their average wait and the age of the oldest, from
     * `COALESCE(scheduled_at_utc, enqueued_at_utc)`, the pending index's own expression, which
     * SQLite reads from the index entry (https://www.sqlite.org/expridx.html), so one pass over
     * `jobs_hot_pending_ix` serves the due test and the waits without reading a row; active
     * counts; and the start lag of the current minute bucket and the five before it (start rows,
     * outcome 4). `INDEXED BY` pins the pending index, as in `getQueueStatsHot`: with the
     * statistics of `ANALYZE` the planner took the active list's index and read every row
     * (admin-reads bench, 100,000 pending rows: p95 14 ms, was 60 ms). The rows an open circuit
     * holds (not due yet, `held_since_utc` set) through `jobs_hot_held_ix`, which holds only those:
     * their wait counts from when they were first due.
     */
    getQueueHealth: `WITH names(queue) AS (SELECT name FROM ${queues} UNION SELECT DISTINCT queue FROM ${hot}),
      due AS (
        SELECT queue, COUNT(*) AS due_pending,
          SUM(${SQLITE_NOW_MS} - COALESCE(scheduled_at_utc, enqueued_at_utc)) AS lag_sum_ms,
          ${SQLITE_NOW_MS} - MIN(COALESCE(scheduled_at_utc, enqueued_at_utc)) AS max_lag_ms
        FROM ${hot} INDEXED BY ${pendingIndex}
        WHERE status = 0 AND COALESCE(scheduled_at_utc, enqueued_at_utc) <= ${SQLITE_NOW_MS}
        GROUP BY queue),
      held AS (
        SELECT queue, COUNT(*) AS held_pending,
          SUM(${SQLITE_NOW_MS} - held_since_utc) AS held_lag_sum_ms,
          ${SQLITE_NOW_MS} - MIN(held_since_utc) AS held_max_lag_ms,
          MIN(COALESCE(scheduled_at_utc, enqueued_at_utc)) AS held_until_utc
        FROM ${hot} INDEXED BY ${heldIndex}
        WHERE status = 0 AND held_since_utc IS NOT NULL
          AND COALESCE(scheduled_at_utc, enqueued_at_utc) > ${SQLITE_NOW_MS}
        GROUP BY queue),
      active AS (SELECT queue, COUNT(*) AS n FROM ${hot} WHERE status IN (1, 2) GROUP BY queue),
      lag AS (
        SELECT queue, SUM(lag_count) AS lag_count, SUM(lag_sum_ms) AS lag_sum_ms,
          MAX(lag_max_ms) AS lag_max_ms
        FROM ${buckets}
        WHERE outcome = 4 AND bucket_utc >= ${BUCKET_NOW} - ${5 * METRIC_BUCKET_MS}
        GROUP BY queue)
      SELECT n.queue, COALESCE(d.due_pending, 0) AS due_pending, COALESCE(d.lag_sum_ms, 0) AS lag_sum_ms,
        COALESCE(d.max_lag_ms, 0) AS max_lag_ms, COALESCE(h.held_pending, 0) AS held_pending,
        COALESCE(h.held_lag_sum_ms, 0) AS held_lag_sum_ms,
        COALESCE(h.held_max_lag_ms, 0) AS held_max_lag_ms, h.held_until_utc,
        COALESCE(a.n, 0) AS active, q.max_workers,
        COALESCE(l.lag_count, 0) AS lag_count, COALESCE(l.lag_sum_ms, 0) AS start_lag_sum_ms,
        COALESCE(l.lag_max_ms, 0) AS lag_max_ms
      FROM names n
      LEFT JOIN due d ON d.queue = n.queue
      LEFT JOIN held h ON h.queue = n.queue
      LEFT JOIN active a ON a.queue = n.queue
      LEFT JOIN lag l ON l.queue = n.queue
      LEFT JOIN ${queues} q ON q.name = n.queue
      ORDER BY n.queue`,

    /**
     * getQueueOutcomes: how each queue's runs ended since `@minutes` whole minutes before the
     * current minute, from the buckets of outcomes 0–3, a range of the primary key (bucket_utc
     * first) summed per queue in one pass, joined to every `queues` row (zeros for a queue without
     * buckets). At most (`@minutes` + 1) × queues × outcomes rows are read (failures split by
     * reason add a few). The window's start is computed once (`MATERIALIZED`): SQLite's "now" is
     * fixed within one step of a statement only (https://www.sqlite.org/lang_datefunc.html), and
     * each returned row is a step. The unary `+` on the grouped column (the planner checklist's
     * first means, https://www.sqlite.org/queryplanner-ng.html#howtofix) keeps the planner from
     * reading `metric_buckets_queue_ix` for the grouping's order: without statistics it chose that
     * index and read every bucket of the table (retention keeps days of them) to save a sort of
     * the window's rows. An expression offers no index order, so the window's range of the
     * primary key is read instead, and its rows grouped in a temporary B-tree.
     */
    getQueueOutcomes: `WITH w(from_utc) AS MATERIALIZED (
        SELECT ${BUCKET_NOW} - @minutes * ${METRIC_BUCKET_MS})
      SELECT q.name AS queue, w.from_utc,
        COALESCE(o.succeeded, 0) AS succeeded, COALESCE(o.failed, 0) AS failed,
        COALESCE(o.cancelled, 0) AS cancelled, COALESCE(o.retried, 0) AS retried
      FROM ${queues} q
      CROSS JOIN w
      LEFT JOIN (
        SELECT b.queue,
          SUM(CASE WHEN b.outcome = 0 THEN b.completed_count ELSE 0 END) AS succeeded,
          SUM(CASE WHEN b.outcome = 1 THEN b.completed_count ELSE 0 END) AS failed,
          SUM(CASE WHEN b.outcome = 2 THEN b.completed_count ELSE 0 END) AS cancelled,
          SUM(CASE WHEN b.outcome = 3 THEN b.completed_count ELSE 0 END) AS retried
        FROM ${buckets} b
        WHERE b.bucket_utc >= (SELECT from_utc FROM w) AND b.outcome IN (0, 1, 2, 3)
        GROUP BY +b.queue) o ON o.queue = q.name
      ORDER BY q.name`,

    /**
     * getThroughput: completions by outcome over the current minute and the previous one, and over
     * the current minute and the five before it (NULL `@queue` = all queues).
     */
    getThroughput: `SELECT outcome,
        COALESCE(SUM(CASE WHEN bucket_utc >= ${BUCKET_NOW} - ${METRIC_BUCKET_MS} THEN completed_count END), 0) AS n1m,
        COALESCE(SUM(completed_count), 0) AS n5m
      FROM ${buckets}
      WHERE bucket_utc >= ${BUCKET_NOW} - ${5 * METRIC_BUCKET_MS} AND outcome IN (0, 1, 2)
        AND (@queue IS NULL OR queue = @queue)
      GROUP BY outcome`,

    /** getThroughput: how long each window covers so far (from its first bucket to now), in ms. */
    getThroughputSpans: `SELECT ${SQLITE_NOW_MS} - (${BUCKET_NOW} - ${METRIC_BUCKET_MS}) AS span_1m_ms,
        ${SQLITE_NOW_MS} - (${BUCKET_NOW} - ${5 * METRIC_BUCKET_MS}) AS span_5m_ms`,

    /**
     * getThroughputSeries, all queues: the buckets of [@from, @to) summed per step (`slot`) and
     * outcome, a range of the primary key (bucket_utc first).
     */
    getThroughputSeries: seriesStatement(buckets, false),

    /** getThroughputSeries, one queue: a range of `metric_buckets_queue_ix (queue, bucket_utc)`. */
    getThroughputSeriesQueue: seriesStatement(buckets, true),

    /**
     * getQueueGroups: the busiest groups of queue `@queue`, at most `@limit`: Pending and active
     * (Fetched, Processing) rows per group, most active first, then most pending, then by key
     * (byte order). Each half reads one partial index that holds only grouped rows
     * (`jobs_hot_group_pending_ix`, `jobs_hot_group_active_ix`, schema version 15).
     */
    getQueueGroups: `SELECT x.group_key, SUM(x.pending) AS pending, SUM(x.running) AS running
      FROM (
        SELECT j.group_key, COUNT(*) AS pending, 0 AS running FROM ${hot} j
        WHERE j.status = 0 AND j.queue = @queue AND j.group_key IS NOT NULL GROUP BY j.group_key
        UNION ALL
        SELECT j.group_key, 0, COUNT(*) FROM ${hot} j
        WHERE j.status IN (1, 2) AND j.queue = @queue AND j.group_key IS NOT NULL
        GROUP BY j.group_key
      ) x
      GROUP BY x.group_key
      ORDER BY running DESC, pending DESC, x.group_key
      LIMIT @limit`,
  };
}
