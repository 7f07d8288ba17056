/**
 * The reads operators ask: one job across the pillars, counts, stats, health, throughput, error
 * families and bulk previews. `NOLOCK` appears only in the telemetry reads here; no state
 * transition relies on them.
 */
import { ActiveFilter, DlqFilter, HistoryFilter } from '../../../interfaces/job-view.interface';
import { MssqlStatement, ParamList } from '../mssql-params';
import {
  ARCHIVE_TABLE_COLUMNS,
  ATTEMPT_COLUMNS,
  DLQ_COLUMNS,
  HOT_TABLE_COLUMNS,
  MssqlColumn,
} from '../mssql.schema';
import { PILLAR_TABLE, historyWhere, whereClause } from './filters';
import {
  DECLARE_BUCKET,
  DECLARE_NOW,
  isDate,
  isoText,
  selectColumns,
  subtractMs,
  tables,
  type MssqlSchema,
} from './fragments';

/** previewDlqFilter — the rows a bulk DLQ filter matches (read committed). */
export function previewDlqFilterCount(schema: MssqlSchema, filter: DlqFilter): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const where = historyWhere(p, 'd', 'dlq', filter);
  return p.statement(`SELECT COUNT_BIG(*) AS Total FROM ${t.dlq} AS d${whereClause(where)};`);
}

/**
 * Every column any pillar has, for the one-row `getJob` union: the Archive's `Result` (schema
 * version 15) among them, NULL in the hot and DLQ branches.
 */
const VIEW_COLUMNS: readonly MssqlColumn[] = (() => {
  const seen = new Map<string, MssqlColumn>();
  for (const col of [...HOT_TABLE_COLUMNS, ...ARCHIVE_TABLE_COLUMNS, ...DLQ_COLUMNS]) {
    if (col.name !== 'DueAtUtc' && !seen.has(col.name)) seen.set(col.name, col);
  }
  return [...seen.values()];
})();

function viewSelect(alias: string, columns: readonly MssqlColumn[]): string {
  const has = new Set(columns.map((col) => col.name));
  return VIEW_COLUMNS.map((col) => {
    if (!has.has(col.name)) return `NULL AS ${col.name}`;
    return isDate(col)
      ? `${isoText(`${alias}.${col.name}`)} AS ${col.name}`
      : `${alias}.${col.name}`;
  }).join(', ');
}

/** getJob — one job wherever it is (hot first, then DLQ, then archive). Read committed. */
export function getJob(schema: MssqlSchema, id: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const key = p.varchar(id, 36);
  return p.statement(
    [
      'SELECT TOP (1) u.* FROM (',
      `  SELECT 1 AS PillarRank, 'hot' AS Pillar, ${viewSelect('h', HOT_TABLE_COLUMNS)} FROM ${t.hot} AS h WHERE h.Id = ${key}`,
      '  UNION ALL',
      `  SELECT 2, 'dlq', ${viewSelect('d', DLQ_COLUMNS)} FROM ${t.dlq} AS d WHERE d.Id = ${key}`,
      '  UNION ALL',
      `  SELECT 3, 'archive', ${viewSelect('a', ARCHIVE_TABLE_COLUMNS)} FROM ${t.archive} AS a WHERE a.Id = ${key}`,
      ') AS u ORDER BY u.PillarRank;',
    ].join('\n'),
  );
}

/**
 * getJob with attempts — the job's `JobAttempts` rows, oldest first: one range of the clustered
 * key `(JobId, Seq)`, read in its order. Read committed.
 */
export function getJobAttempts(schema: MssqlSchema, id: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const key = p.varchar(id, 36);
  return p.statement(
    `SELECT ${selectColumns('a', ATTEMPT_COLUMNS)} FROM ${t.attempts} AS a WHERE a.JobId = ${key} ORDER BY a.Seq;`,
  );
}

/**
 * getSummary — telemetry: lifetime counters and current counts, `NOLOCK` (approximate by design).
 *
 * `Archived` and `Dlq` are row-count ESTIMATES from `sys.partitions` (the table's heap or
 * clustered index, `index_id` 0 or 1), not counts: the archive and the DLQ grow without bound
 * until retention, and counting them on every dashboard refresh scanned the whole table, where a
 * `NOLOCK` scan can also fail with error 601 when rows move under it. `rows` is "the approximate
 * number of rows in this partition"
 * (https://learn.microsoft.com/en-us/sql/relational-databases/system-catalog-views/sys-partitions-transact-sql);
 * it is kept as rows are inserted and deleted, so on a quiet table it is the count. The hot table's
 * per-status counts stay real counts (through the filtered indexes; the Waiting rows through
 * `IX_JobsHot_Waiting`, schema version 19).
 */
export function getSummary(schema: MssqlSchema): MssqlStatement {
  const t = tables(schema);
  const sum = (col: string) =>
    `(SELECT ISNULL(SUM(s.${col}), 0) FROM ${t.stats} AS s WITH (NOLOCK)) AS ${col}`;
  const count = (table: string, where: string, as: string) =>
    `(SELECT COUNT_BIG(*) FROM ${table} AS c WITH (NOLOCK)${where}) AS ${as}`;
  // `table` is a qualified name built from the validated schema (never a value from outside).
  const estimate = (table: string, as: string) =>
    `(SELECT ISNULL(SUM(CAST(p.rows AS bigint)), 0) FROM sys.partitions AS p WHERE p.object_id = OBJECT_ID(N'${table}') AND p.index_id IN (0, 1)) AS ${as}`;
  return new ParamList().statement(
    [
      'SELECT',
      `  ${['SucceededTotal', 'FailedTotal', 'CancelledTotal', 'RetriedTotal', 'DeferredTotal', 'ResurrectedTotal'].map(sum).join(',\n  ')},`,
      `  ${count(t.hot, ' WHERE c.Status = 0', 'Pending')},`,
      `  ${count(t.hot, ' WHERE c.Status = 1', 'Fetched')},`,
      `  ${count(t.hot, ' WHERE c.Status = 2', 'Processing')},`,
      `  ${count(t.hot, ' WHERE c.Status = 7', 'Waiting')},`,
      `  ${estimate(t.archive, 'Archived')},`,
      `  ${estimate(t.dlq, 'Dlq')};`,
    ].join('\n'),
  );
}

/**
 * getQueueStats — telemetry: per-queue counters, hot counts by status and controls, `NOLOCK`. No
 * per-queue archive or DLQ count: `sys.partitions` has no per-queue figure, and counting the
 * history tables per queue on every refresh is the scan the dashboard must not cause. The Pending
 * rows are counted per queue in `IX_JobsHot_Claim` (filtered on `Status = 0`, led by `Queue`: the
 * predicate `x.Status = 0` matches the filter, so the index covers the count, as
 * [filtered indexes](https://learn.microsoft.com/en-us/sql/relational-databases/indexes/create-filtered-indexes)
 * serve a query whose predicate is within the filter), and the Fetched and Processing rows, as
 * many as the workers run, through `IX_JobsHot_Active`, and the Waiting rows through
 * `IX_JobsHot_Waiting` (filtered on `Status = 7`, led by `Queue`; schema version 19); one
 * `GROUP BY` over every hot row with a `CASE` per status read the clustered index, payloads and
 * all.
 */
export function getQueueStats(schema: MssqlSchema): MssqlStatement {
  const t = tables(schema);
  return new ParamList().statement(
    [
      'SELECT q.Name AS Queue, q.IsPaused, q.IsActive, q.MaxWorkers,',
      '  ISNULL(p.Pending, 0) AS Pending, ISNULL(a.Fetched, 0) AS Fetched, ISNULL(a.Processing, 0) AS Processing,',
      '  ISNULL(w.Waiting, 0) AS Waiting,',
      '  ISNULL(s.SucceededTotal, 0) AS SucceededTotal, ISNULL(s.FailedTotal, 0) AS FailedTotal,',
      '  ISNULL(s.CancelledTotal, 0) AS CancelledTotal, ISNULL(s.RetriedTotal, 0) AS RetriedTotal,',
      '  ISNULL(s.DeferredTotal, 0) AS DeferredTotal,',
      `  ISNULL(s.ResurrectedTotal, 0) AS ResurrectedTotal, ${isoText('s.LastActivityUtc')} AS LastActivityUtc`,
      `FROM ${t.queues} AS q WITH (NOLOCK)`,
      'LEFT JOIN (',
      `  SELECT x.Queue, COUNT_BIG(*) AS Pending FROM ${t.hot} AS x WITH (NOLOCK) WHERE x.Status = 0 GROUP BY x.Queue`,
      ') AS p ON p.Queue = q.Name',
      'LEFT JOIN (',
      '  SELECT y.Queue,',
      '    SUM(CASE WHEN y.Status = 1 THEN 1 ELSE 0 END) AS Fetched,',
      '    SUM(CASE WHEN y.Status = 2 THEN 1 ELSE 0 END) AS Processing',
      `  FROM ${t.hot} AS y WITH (NOLOCK) WHERE y.Status IN (1, 2) GROUP BY y.Queue`,
      ') AS a ON a.Queue = q.Name',
      'LEFT JOIN (',
      `  SELECT z.Queue, COUNT_BIG(*) AS Waiting FROM ${t.hot} AS z WITH (NOLOCK) WHERE z.Status = 7 GROUP BY z.Queue`,
      ') AS w ON w.Queue = q.Name',
      `LEFT JOIN ${t.stats} AS s WITH (NOLOCK) ON s.Queue = q.Name`,
      'ORDER BY q.Name;',
    ].join('\n'),
  );
}

/**
 * getQueueHealth — telemetry, `NOLOCK`: per queue, the due pending rows, their average wait and
 * the age of the oldest, from `DueAtUtc` (a key of `IX_JobsHot_Claim`, filtered on `Status = 0`,
 * which covers the read: no lookup into the clustered index); the active count
 * (`IX_JobsHot_Active`); the rows an open circuit holds (not due yet, `HeldSinceUtc` set), their
 * waits counted from when they were first due, through `IX_JobsHot_Held` (filtered on exactly
 * those rows); and the start lag of the runs started in the current minute and the five
 * before it (the start rows of `MetricBuckets`, outcome 4, through `IX_MetricBuckets_Queue`).
 */
export function getQueueHealth(schema: MssqlSchema): MssqlStatement {
  const t = tables(schema);
  const lag = 'DATEDIFF_BIG(MILLISECOND, x.DueAtUtc, @now)';
  const held = 'DATEDIFF_BIG(MILLISECOND, z.HeldSinceUtc, @now)';
  return new ParamList().statement(
    [
      DECLARE_NOW,
      DECLARE_BUCKET,
      'SELECT q.Name AS Queue, q.MaxWorkers,',
      '  ISNULL(d.DuePending, 0) AS DuePending, ISNULL(d.DueLagSumMs, 0) AS DueLagSumMs, ISNULL(d.MaxLagMs, 0) AS MaxLagMs,',
      '  ISNULL(h.HeldPending, 0) AS HeldPending, ISNULL(h.HeldLagSumMs, 0) AS HeldLagSumMs,',
      `  ISNULL(h.HeldMaxLagMs, 0) AS HeldMaxLagMs, ${isoText('h.HeldUntilUtc')} AS HeldUntilUtc,`,
      '  ISNULL(a.Active, 0) AS Active,',
      '  ISNULL(l.LagCount, 0) AS LagCount, ISNULL(l.LagSumMs, 0) AS LagSumMs, ISNULL(l.LagMaxMs, 0) AS LagMaxMs',
      `FROM ${t.queues} AS q WITH (NOLOCK)`,
      'LEFT JOIN (',
      `  SELECT x.Queue, COUNT_BIG(*) AS DuePending, SUM(CAST(${lag} AS float)) AS DueLagSumMs, MAX(${lag}) AS MaxLagMs`,
      `  FROM ${t.hot} AS x WITH (NOLOCK)`,
      '  WHERE x.Status = 0 AND x.DueAtUtc <= @now',
      '  GROUP BY x.Queue',
      ') AS d ON d.Queue = q.Name',
      'LEFT JOIN (',
      `  SELECT z.Queue, COUNT_BIG(*) AS HeldPending, SUM(CAST(${held} AS float)) AS HeldLagSumMs, MAX(${held}) AS HeldMaxLagMs, MIN(z.DueAtUtc) AS HeldUntilUtc`,
      `  FROM ${t.hot} AS z WITH (NOLOCK)`,
      '  WHERE z.Status = 0 AND z.HeldSinceUtc IS NOT NULL AND z.DueAtUtc > @now',
      '  GROUP BY z.Queue',
      ') AS h ON h.Queue = q.Name',
      'LEFT JOIN (',
      `  SELECT y.Queue, COUNT_BIG(*) AS Active FROM ${t.hot} AS y WITH (NOLOCK) WHERE y.Status IN (1, 2) GROUP BY y.Queue`,
      ') AS a ON a.Queue = q.Name',
      'LEFT JOIN (',
      '  SELECT b.Queue, SUM(b.LagCount) AS LagCount, SUM(b.LagSumMs) AS LagSumMs, MAX(b.LagMaxMs) AS LagMaxMs',
      `  FROM ${t.buckets} AS b WITH (NOLOCK)`,
      '  WHERE b.Outcome = 4 AND b.BucketUtc >= DATEADD(MINUTE, -5, @bucket)',
      '  GROUP BY b.Queue',
      ') AS l ON l.Queue = q.Name',
      'ORDER BY q.Name;',
    ].join('\n'),
  );
}

/**
 * getQueueOutcomes — telemetry, `NOLOCK`: how each queue's runs ended since `minutes` whole minutes
 * before the current minute (`@from`), from the buckets of outcomes 0–3 (succeeded, failed,
 * cancelled, retried), a range of the clustered key (`BucketUtc` first) summed per queue in one
 * pass, joined to every `Queues` row (zeros for a queue without buckets). At most
 * (minutes + 1) × queues × outcomes rows are read (failures split by reason add a few).
 */
export function getQueueOutcomes(schema: MssqlSchema, minutes: number): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const back = p.int(minutes);
  const sum = (outcome: number) =>
    `SUM(CASE WHEN b.Outcome = ${outcome} THEN b.CompletedCount ELSE 0 END)`;
  return p.statement(
    [
      DECLARE_NOW,
      DECLARE_BUCKET,
      `DECLARE @from datetime2(0) = DATEADD(MINUTE, -${back}, @bucket);`,
      'SELECT q.Name AS Queue, @from AS FromUtc,',
      '  ISNULL(o.Succeeded, 0) AS Succeeded, ISNULL(o.Failed, 0) AS Failed,',
      '  ISNULL(o.Cancelled, 0) AS Cancelled, ISNULL(o.Retried, 0) AS Retried',
      `FROM ${t.queues} AS q WITH (NOLOCK)`,
      'LEFT JOIN (',
      `  SELECT b.Queue, ${sum(0)} AS Succeeded, ${sum(1)} AS Failed,`,
      `    ${sum(2)} AS Cancelled, ${sum(3)} AS Retried`,
      `  FROM ${t.buckets} AS b WITH (NOLOCK)`,
      '  WHERE b.BucketUtc >= @from AND b.Outcome IN (0, 1, 2, 3)',
      '  GROUP BY b.Queue',
      ') AS o ON o.Queue = q.Name',
      'ORDER BY q.Name;',
    ].join('\n'),
  );
}

/**
 * getThroughput — telemetry, `NOLOCK`: completions over the current minute and the one before it,
 * and over the current minute and the five before it, from metric buckets (one minute wide);
 * `Span1mMs`/`Span5mMs` are what each window covers so far, so the rates divide by it.
 */
export function getThroughput(schema: MssqlSchema, queue?: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const queueFilter = queue === undefined ? '' : ` AND b.Queue = ${p.varchar(queue, 255)}`;
  const within = (minutes: number, outcome?: number) =>
    `ISNULL(SUM(CASE WHEN b.BucketUtc >= DATEADD(MINUTE, -${minutes}, @bucket)` +
    (outcome === undefined ? '' : ` AND b.Outcome = ${outcome}`) +
    ' THEN b.CompletedCount ELSE 0 END), 0)';
  return p.statement(
    [
      DECLARE_NOW,
      DECLARE_BUCKET,
      'SELECT',
      `  ${within(1)} AS Completed1m, ${within(1, 0)} AS Succeeded1m, ${within(1, 1)} AS Failed1m,`,
      `  ${within(5)} AS Completed5m, ${within(5, 0)} AS Succeeded5m, ${within(5, 1)} AS Failed5m,`,
      '  DATEDIFF_BIG(MILLISECOND, DATEADD(MINUTE, -1, @bucket), @now) AS Span1mMs,',
      '  DATEDIFF_BIG(MILLISECOND, DATEADD(MINUTE, -5, @bucket), @now) AS Span5mMs',
      `FROM ${t.buckets} AS b WITH (NOLOCK)`,
      `WHERE b.BucketUtc >= DATEADD(MINUTE, -5, @bucket) AND b.Outcome IN (0, 1, 2)${queueFilter};`,
    ].join('\n'),
  );
}

/** A throughput series request as the builder takes it (checked by the edge). */
export interface MssqlSeries {
  queue: string | null;
  from: Date;
  to: Date;
  stepMs: number;
}

/**
 * getThroughputSeries — telemetry, `NOLOCK`: the metric buckets of [from, to) summed per step
 * (`Slot`, the step's index from `from`) and outcome. A range of the clustered key (`BucketUtc`
 * first) or, for one queue, of `IX_MetricBuckets_Queue (Queue, BucketUtc)`: a day of one-minute
 * buckets is 1,440 rows per queue and outcome. Steps without buckets have no row. The slot is
 * computed once in a `CROSS APPLY` and grouped by its column, so the SELECT list and the GROUP BY
 * name the same column rather than repeating an expression with parameters in both.
 */
export function getThroughputSeries(schema: MssqlSchema, series: MssqlSeries): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const from = p.instant(series.from);
  const to = p.instant(series.to);
  const step = p.bigint(series.stepMs);
  const queueFilter = series.queue === null ? '' : ` AND b.Queue = ${p.varchar(series.queue, 255)}`;
  return p.statement(
    [
      'SELECT k.Slot, b.Outcome,',
      '  SUM(b.CompletedCount) AS CompletedCount, SUM(b.DurationCount) AS DurationCount,',
      '  SUM(b.TotalDurationMs) AS TotalDurationMs, SUM(b.LagCount) AS LagCount,',
      '  SUM(b.LagSumMs) AS LagSumMs, MAX(b.LagMaxMs) AS LagMaxMs',
      `FROM ${t.buckets} AS b WITH (NOLOCK)`,
      `CROSS APPLY (SELECT DATEDIFF_BIG(MILLISECOND, ${from}, b.BucketUtc) / ${step} AS Slot) AS k`,
      `WHERE b.BucketUtc >= ${from} AND b.BucketUtc < ${to}${queueFilter}`,
      'GROUP BY k.Slot, b.Outcome;',
    ].join('\n'),
  );
}

/**
 * countExactly — the exact number of rows of one pillar matching a list filter: `COUNT_BIG(*)`,
 * read committed without hints (an exact figure, not telemetry). O(matching rows); on request only.
 */
export function countExactly(
  schema: MssqlSchema,
  pillar: 'hot' | 'archive' | 'dlq',
  filter: ActiveFilter & HistoryFilter & DlqFilter,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const where = historyWhere(p, 'j', pillar, filter);
  return p.statement(
    `SELECT COUNT_BIG(*) AS Total FROM ${t[PILLAR_TABLE[pillar]]} AS j${whereClause(where)};`,
  );
}

/**
 * getTopDlqErrors — telemetry, `NOLOCK`: the window the error families are grouped over, the
 * first line of the error (at most `prefix` characters; the rest is never sent) of the newest
 * `rows` DLQ rows matching `filter` that failed within the last `windowMs` (a backward range of
 * `IX_JobsDLQ_FailedAtUtc`, or of the queue's or the reason's index, stopped by `TOP`). The
 * families are grouped in `shared/error-family.ts`, the same on every dialect.
 */
export function getTopDlqErrors(
  schema: MssqlSchema,
  filter: DlqFilter,
  window: { rows: number; windowMs: number; prefix: number },
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const rows = p.int(window.rows);
  const since = p.bigint(window.windowMs);
  const where = historyWhere(p, 'd', 'dlq', filter);
  const text = "ISNULL(d.ErrorDetails, N'')";
  const prefix = Number(window.prefix);
  const firstLine = `CAST(LEFT(CASE WHEN CHARINDEX(NCHAR(10), ${text}) > 0 THEN LEFT(${text}, CHARINDEX(NCHAR(10), ${text}) - 1) ELSE ${text} END, ${prefix}) AS nvarchar(${prefix}))`;
  return p.statement(
    [
      DECLARE_NOW,
      `DECLARE @since datetime2(3) = ${subtractMs('@now', since)};`,
      `SELECT TOP (${rows}) ${firstLine} AS Line, ${isoText('d.FailedAtUtc')} AS FailedAtUtc`,
      `FROM ${t.dlq} AS d WITH (NOLOCK)${whereClause([...where, 'd.FailedAtUtc >= @since'])}`,
      'ORDER BY d.FailedAtUtc DESC;',
    ].join('\n'),
  );
}

/** previewDlqFilter — the first sample ids, oldest failure first (the order bulk actions use). */
export function previewDlqFilterSample(
  schema: MssqlSchema,
  filter: DlqFilter,
  sample: number,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const top = p.int(sample);
  const where = historyWhere(p, 'd', 'dlq', filter);
  return p.statement(
    `SELECT TOP (${top}) d.Id FROM ${t.dlq} AS d${whereClause(where)} ORDER BY d.FailedAtUtc, d.Id;`,
  );
}

/**
 * getQueueGroups — the busiest groups of `queue`, at most `limit`: per group of its hot rows that
 * have one, the Pending rows and the active (Fetched, Processing) rows, most active first, then
 * most pending, then by group key; columns `group_key`, `pending`, `running` (what the shared
 * `mapQueueGroupRow` reads). Each half reads one filtered index that holds only grouped rows
 * (`IX_JobsHot_GroupPending`, `IX_JobsHot_GroupActive`; their filters are repeated as literals so
 * they match), so its cost follows the queue's grouped backlog. Read committed, no hint: an
 * operator's read, not telemetry.
 */
export function getQueueGroups(schema: MssqlSchema, queue: string, limit: number): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const q = p.varchar(queue, 255);
  const top = p.int(limit);
  return p.statement(
    [
      `SELECT TOP (${top}) x.GroupKey AS group_key, SUM(x.Pending) AS pending, SUM(x.Running) AS running`,
      'FROM (',
      `  SELECT h.GroupKey, COUNT_BIG(*) AS Pending, CAST(0 AS bigint) AS Running FROM ${t.hot} AS h`,
      `  WHERE h.Queue = ${q} AND h.Status = 0 AND h.GroupKey IS NOT NULL GROUP BY h.GroupKey`,
      '  UNION ALL',
      `  SELECT h.GroupKey, CAST(0 AS bigint), COUNT_BIG(*) FROM ${t.hot} AS h`,
      `  WHERE h.Queue = ${q} AND h.Status IN (1, 2) AND h.GroupKey IS NOT NULL GROUP BY h.GroupKey`,
      ') AS x',
      'GROUP BY x.GroupKey',
      'ORDER BY SUM(x.Running) DESC, SUM(x.Pending) DESC, x.GroupKey;',
    ].join('\n'),
  );
}
