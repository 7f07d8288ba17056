/**
 * Building blocks the T-SQL batches share: the session prologue and `@now`, date arithmetic and ISO
 * text, column lists and `OUTPUT … INTO` table variables, the lease documents read with `OPENJSON`,
 * and the counter, bucket and attempt-row writes a move makes in its own transaction. The rules every
 * batch follows (isolation prologue, literals and parameters, `XACT_ABORT`, `NOCOUNT`, `OUTPUT INTO`,
 * fixed-width parameters, lock order, `NOLOCK` only in telemetry): docs/storage.md, "SQL Server:
 * batch conventions".
 */
import { MAX_ATTEMPT_ERROR } from '../../../validation/limits';
import { ParamList } from '../mssql-params';
import {
  ARCHIVE_COLUMNS,
  ARCHIVE_TABLE_COLUMNS,
  ATTEMPT_COLUMNS,
  DLQ_COLUMNS,
  columnType,
  keyCollate,
  MssqlColumn,
  MssqlTable,
  qualify,
} from '../mssql.schema';

/**
 * The schema a batch is built for. A name alone is an install whose key columns
 * (`MssqlColumn.key`) have the database's collation, as every install of an earlier release
 * had them; `binaryKeys` says they are in `BINARY_KEY_COLLATION` (a new install, or one converted
 * by `chokaq migrate --binary-keys`), and then the batch declares its table variables' key columns
 * and casts the key columns it reads from `OPENJSON` in that collation too (see {@link tables}).
 */
export type MssqlSchema = string | { readonly name: string; readonly binaryKeys: boolean };

export const PROLOGUE = 'SET NOCOUNT ON;\nSET XACT_ABORT ON;';

export const DECLARE_NOW = 'DECLARE @now datetime2(3) = SYSUTCDATETIME();';

/**
 * The one-minute metric bucket of `@now` (`METRIC_BUCKET_MS`), truncated, not rounded: the seconds
 * and milliseconds are subtracted before the cast to `datetime2(0)`, because converting to a lower
 * fractional precision rounds
 * (https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql#converting-date-and-time-data).
 * (`DATETRUNC` would say it directly, but needs SQL Server 2022.)
 */
export const DECLARE_BUCKET = `DECLARE @bucket datetime2(0) = ${bucketOf('@now')};`;

/** {@link DECLARE_BUCKET} again, after `@now` was read again (a claim, after its lock waits). */
export const SET_BUCKET = `SET @bucket = ${bucketOf('@now')};`;

function bucketOf(now: string): string {
  return `CAST(DATEADD(SECOND, -DATEPART(SECOND, ${now}), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, ${now}), ${now})) AS datetime2(0))`;
}

/**
 * `base + ms` for a bigint millisecond count. `DATEADD` takes an int, and 10 years of
 * milliseconds do not fit one, so whole seconds and the remainder are added separately.
 */
export function addMs(base: string, ms: string): string {
  return `DATEADD(MILLISECOND, CAST(${ms} % 1000 AS int), DATEADD(SECOND, CAST(${ms} / 1000 AS int), ${base}))`;
}

/** `base − ms`, see {@link addMs}. */
export function subtractMs(base: string, ms: string): string {
  return `DATEADD(MILLISECOND, -CAST(${ms} % 1000 AS int), DATEADD(SECOND, -CAST(${ms} / 1000 AS int), ${base}))`;
}

export function isDate(col: MssqlColumn): boolean {
  return col.type.startsWith('datetime2');
}

/** A date expression rendered as ISO-8601 UTC text (`…Z`); NULL stays NULL. */
export function isoText(expr: string): string {
  return `CONVERT(varchar(33), ${expr}, 126) + 'Z'`;
}

/** `alias.Col` for each column, dates as ISO text, under their own names. */
export function selectColumns(alias: string, columns: readonly MssqlColumn[]): string {
  return columns
    .filter((col) => col.name !== 'DueAtUtc')
    .map((col) =>
      isDate(col) ? `${isoText(`${alias}.${col.name}`)} AS ${col.name}` : `${alias}.${col.name}`,
    )
    .join(', ');
}

/**
 * `DECLARE @name TABLE (…)` with the columns of a table, all nullable; key columns in the
 * install's collation (`t.key`, see {@link tables}).
 */
export function declareTableVar(
  name: string,
  columns: readonly MssqlColumn[],
  t: MssqlTables,
): string {
  return `DECLARE ${name} TABLE (${columns.map((col) => `${col.name} ${columnType(col, t.key)} NULL`).join(', ')});`;
}

/**
 * `OUTPUT prefix.A, prefix.B, … INTO target (A, B, …)` over the named columns. Never
 * `inserted.*` / `deleted.*`: those expand to every column the table has when the batch compiles,
 * in table order, and `INTO` a table variable declared from this code's column list they fail as
 * soon as the table has one column more (a DBA's audit column, a later migration, a rolling
 * deploy whose old pods meet the new schema). "If column_list is not specified, the table must
 * have the same number of columns as the OUTPUT result set"
 * (https://learn.microsoft.com/en-us/sql/t-sql/queries/output-clause-transact-sql#arguments).
 */
export function outputInto(
  prefix: 'inserted' | 'deleted',
  target: string,
  columns: readonly MssqlColumn[],
): string {
  const names = columns.map((col) => col.name);
  return `OUTPUT ${names.map((name) => `${prefix}.${name}`).join(', ')} INTO ${target} (${names.join(', ')})`;
}

/** `INSERT INTO target (cols) SELECT exprs FROM source`, overriding some column expressions. */
export function insertSelect(
  target: string,
  columns: readonly MssqlColumn[],
  alias: string,
  overrides: Record<string, string>,
): string {
  const names = columns.map((col) => col.name);
  const exprs = columns.map((col) => overrides[col.name] ?? `${alias}.${col.name}`);
  return `INSERT INTO ${target} (${names.join(', ')})\nSELECT ${exprs.join(', ')}`;
}

/** The tables of a schema, quoted, and how its key columns compare. */
export type MssqlTables = Record<MssqlTable, string> & {
  /**
   * `''`, or ` COLLATE <BINARY_KEY_COLLATION>` when the install's keys are binary (see
   * {@link MssqlSchema}): appended to the type of a key
   * column a table variable declares, and to a key read from `OPENJSON` that is compared, grouped
   * or combined with a table's (its columns take the database's default collation, and a
   * comparison of two different column collations fails with error 468). On an install of the
   * database's collation it is empty, and the batch is exactly what it was before binary keys.
   */
  readonly key: string;
};

export function tables(schema: MssqlSchema): MssqlTables {
  const { name, binaryKeys } =
    typeof schema === 'string' ? { name: schema, binaryKeys: false } : schema;
  const q = (t: MssqlTable) => qualify(name, t);
  return {
    key: keyCollate(binaryKeys),
    hot: q('hot'),
    archive: q('archive'),
    dlq: q('dlq'),
    stats: q('stats'),
    buckets: q('buckets'),
    queues: q('queues'),
    recurring: q('recurring'),
    migrations: q('migrations'),
    workers: q('workers'),
    audit: q('audit'),
    settings: q('settings'),
    attempts: q('attempts'),
    keys: q('keys'),
    groups: q('groups'),
    batches: q('batches'),
    callbacks: q('callbacks'),
    dependencies: q('dependencies'),
  };
}

/**
 * Whether the `Queues` row `alias` has group limits (`GroupConcurrency` or `GroupRateMax`): a
 * grouped queue, claimed group by group (`fetchNextBatch`).
 */
export function isGrouped(alias: string): string {
  return `(${alias}.GroupConcurrency IS NOT NULL OR ${alias}.GroupRateMax IS NOT NULL)`;
}

/**
 * The group to store for a job of queue `queue` whose own group is `group` (both expressions): its
 * own, else `''` (the shared group, read back as none) when the queue has group limits, else NULL.
 * In a grouped queue every hot job must have a group for the grouped claim to reach it. A plain
 * read of the queue's row, as the enqueue's other reads of `Queues` are (`ensureQueueRows`): an
 * enqueue never holds a lock on an existing queue's row. `ISNULL` returns the type of its first
 * argument (https://learn.microsoft.com/en-us/sql/t-sql/functions/isnull-transact-sql), so the
 * value stays `nvarchar(255)`.
 */
export function storedGroup(t: MssqlTables, group: string, queue: string): string {
  return `ISNULL(${group}, CASE WHEN EXISTS (SELECT 1 FROM ${t.queues} AS gq WHERE gq.Name = ${queue} AND ${isGrouped('gq')}) THEN N'' END)`;
}

/** OPENJSON shape of a lease list `[{ id, workerId, leaseId }]`. */
export const LEASE_JSON =
  "WITH (Id varchar(36) '$.id', WorkerId nvarchar(255) '$.workerId', LeaseId varchar(36) '$.leaseId')";

/** OPENJSON shape of an id list `["…", "…"]`. */
export const ID_JSON = "WITH (Id varchar(36) '$')";

/** A lifetime counter of `StatsSummary`. */
type StatsCounter =
  | 'SucceededTotal'
  | 'FailedTotal'
  | 'CancelledTotal'
  | 'RetriedTotal'
  | 'DeferredTotal'
  | 'ResurrectedTotal';

/**
 * Lifetime counters: for each queue of `source` (rows with a `Queue` column, read as `g`), each
 * counter in `add` grows by the sum of its expression over that queue's rows. The queue's row is
 * created first if missing (under `UPDLOCK, HOLDLOCK`, so two creators serialise instead of one
 * failing), then incremented. Creating before adding is what makes concurrent first increments
 * safe: an "update, then insert if missing" order would lose one of two racing increments.
 *
 * Lock order: the sums go into `@StatsDelta`, keyed by queue, and both statements are driven from
 * it, the UPDATE by a nested loop (`INNER LOOP JOIN`, which also fixes the join order) that
 * reads it in key order. So every batch takes its `StatsSummary` rows in queue order, and two
 * batches over the same queues wait for each other instead of deadlocking (a join left to the
 * optimiser takes them in plan order). One call per batch: it declares `@StatsDelta`.
 */
export function bumpStats(
  t: MssqlTables,
  source: string,
  add: Partial<Record<StatsCounter, string>>,
): string {
  const s = t.stats;
  const counters = Object.keys(add) as StatsCounter[];
  return [
    `DECLARE @StatsDelta TABLE (Queue varchar(255)${t.key} NOT NULL PRIMARY KEY, ${counters.map((c) => `${c} bigint NOT NULL`).join(', ')});`,
    `INSERT INTO @StatsDelta (Queue, ${counters.join(', ')})`,
    `SELECT g.Queue, ${counters.map((c) => `SUM(CAST(${add[c]} AS bigint))`).join(', ')} FROM ${source} AS g GROUP BY g.Queue;`,
    `INSERT INTO ${s} (Queue)`,
    'SELECT d.Queue FROM @StatsDelta AS d',
    `WHERE NOT EXISTS (SELECT 1 FROM ${s} AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = d.Queue);`,
    `UPDATE st SET ${counters.map((c) => `st.${c} = st.${c} + d.${c}`).join(', ')}, st.LastActivityUtc = @now`,
    'FROM @StatsDelta AS d',
    `INNER LOOP JOIN ${s} AS st ON st.Queue = d.Queue;`,
  ].join('\n');
}

/**
 * Metric buckets of `@bucket`: one row per (queue, outcome, reason) of `source`, which must have
 * the columns Queue, Outcome, FailureReason, DurationMs (NULL when the job did not run). Same
 * create-then-add order as {@link bumpStats}, and the same lock order: the sums go into
 * `@BucketDelta`, keyed by (Queue, Outcome, FailureReason), which drives both statements in key
 * order. One call per batch.
 *
 * With `lag`, `source` has a `LagMs` column too (each started row's start lag) and the start lag
 * columns are summed and maxed as well (the start rows of the claim and `markAsProcessing`).
 */
export function bumpBuckets(t: MssqlTables, source: string, lag = false): string {
  const b = t.buckets;
  const match =
    'x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason';
  const lagColumns = lag
    ? ', LagCount bigint NOT NULL, LagSumMs bigint NOT NULL, LagMaxMs bigint NOT NULL'
    : '';
  return [
    `DECLARE @BucketDelta TABLE (Queue varchar(255)${t.key} NOT NULL, Outcome tinyint NOT NULL, FailureReason smallint NOT NULL, N bigint NOT NULL, DurationCount bigint NOT NULL, TotalDurationMs bigint NOT NULL, MaxDurationMs bigint NOT NULL${lagColumns}, PRIMARY KEY (Queue, Outcome, FailureReason));`,
    `INSERT INTO @BucketDelta (Queue, Outcome, FailureReason, N, DurationCount, TotalDurationMs, MaxDurationMs${lag ? ', LagCount, LagSumMs, LagMaxMs' : ''})`,
    `SELECT g.Queue, g.Outcome, g.FailureReason, COUNT_BIG(*), COUNT_BIG(g.DurationMs), ISNULL(SUM(g.DurationMs), 0), ISNULL(MAX(g.DurationMs), 0)${lag ? ', COUNT_BIG(g.LagMs), ISNULL(SUM(g.LagMs), 0), ISNULL(MAX(g.LagMs), 0)' : ''}`,
    `FROM ${source} AS g GROUP BY g.Queue, g.Outcome, g.FailureReason;`,
    `INSERT INTO ${b} (BucketUtc, Queue, Outcome, FailureReason)`,
    'SELECT @bucket, d.Queue, d.Outcome, d.FailureReason FROM @BucketDelta AS d',
    `WHERE NOT EXISTS (SELECT 1 FROM ${b} AS x WITH (UPDLOCK, HOLDLOCK) WHERE ${match});`,
    'UPDATE x SET x.CompletedCount = x.CompletedCount + d.N, x.DurationCount = x.DurationCount + d.DurationCount,',
    '  x.TotalDurationMs = x.TotalDurationMs + d.TotalDurationMs,',
    `  x.MaxDurationMs = CASE WHEN d.MaxDurationMs > x.MaxDurationMs THEN d.MaxDurationMs ELSE x.MaxDurationMs END${lag ? ',' : ''}`,
    ...(lag
      ? [
          '  x.LagCount = x.LagCount + d.LagCount, x.LagSumMs = x.LagSumMs + d.LagSumMs,',
          '  x.LagMaxMs = CASE WHEN d.LagMaxMs > x.LagMaxMs THEN d.LagMaxMs ELSE x.LagMaxMs END',
        ]
      : []),
    'FROM @BucketDelta AS d',
    `INNER LOOP JOIN ${b} AS x ON ${match};`,
  ].join('\n');
}

/**
 * Start lag in ms of a row of `alias` that starts at `@now`: from when it became due (`DueAtUtc`,
 * always `COALESCE(ScheduledAtUtc, EnqueuedAtUtc)`), never negative. `DATEDIFF_BIG`, since a lag
 * in milliseconds over 24.8 days overflows `DATEDIFF`'s int
 * (https://learn.microsoft.com/en-us/sql/t-sql/functions/datediff-big-transact-sql).
 */
export function startLagMs(alias: string): string {
  return `CASE WHEN ${alias}.DueAtUtc < @now THEN DATEDIFF_BIG(MILLISECOND, ${alias}.DueAtUtc, @now) ELSE 0 END`;
}

/**
 * The `JobAttempts` rows of the runs a move ends (the rules: `storage/shared/attempts.ts`), one
 * statement inside that move's transaction, after its UPDATE or DELETE captured the rows:
 * `source` yields (Id, AttemptCount, WorkerId, LeaseId, StartedAtUtc, Outcome, Error) per ended
 * run, the hot row's values before the move (`OUTPUT deleted.…`). `Seq` is one more than the
 * job's last row, a seek of the clustered key `(JobId, Seq)`; no other session can add a row for
 * the job meanwhile, since only the holder of its hot row's X lock (held to COMMIT) ends a run of
 * it. The error keeps its first `MAX_ATTEMPT_ERROR` characters; the duration is `@now` minus the
 * start (`DATEDIFF_BIG`: a run over 24.8 days overflows `DATEDIFF`'s int,
 * https://learn.microsoft.com/en-us/sql/t-sql/functions/datediff-big-transact-sql).
 */
export function attemptsInsert(t: Record<MssqlTable, string>, source: string): string {
  return [
    `INSERT INTO ${t.attempts} (${ATTEMPT_COLUMNS.map((col) => col.name).join(', ')})`,
    `SELECT a.Id, ISNULL((SELECT MAX(x.Seq) FROM ${t.attempts} AS x WHERE x.JobId = a.Id), 0) + 1,`,
    `  a.AttemptCount, a.WorkerId, a.LeaseId, a.StartedAtUtc, @now, a.Outcome, LEFT(a.Error, ${MAX_ATTEMPT_ERROR}),`,
    '  CASE WHEN a.StartedAtUtc IS NULL THEN NULL WHEN a.StartedAtUtc < @now THEN DATEDIFF_BIG(MILLISECOND, a.StartedAtUtc, @now) ELSE 0 END',
    `FROM (${source}) AS a;`,
  ].join('\n');
}

/**
 * Deletes the `JobAttempts` rows of the jobs in `@Gone` (archive or DLQ rows the same transaction
 * deleted, by purge or retention): their history goes with them. A seek of the clustered key
 * per job.
 */
export function attemptsDelete(t: Record<MssqlTable, string>): string {
  return `DELETE x FROM ${t.attempts} AS x INNER JOIN @Gone AS g ON g.Id = x.JobId;`;
}

/**
 * Creates the `Queues` and `StatsSummary` rows of `source`'s queues that do not exist yet, in
 * name order: both inserts are driven from `@NewQueues`, keyed by name (the batch declares it).
 */
export function ensureQueueRows(t: Record<MssqlTable, string>, source: string): string {
  // The plain read first: only queues that look missing reach the locked insert, so an enqueue
  // never holds U locks on existing Queues rows (a claim on a budgeted queue locks those).
  return [
    `INSERT INTO @NewQueues (Queue) SELECT DISTINCT n.Queue FROM ${source} AS n`,
    `WHERE NOT EXISTS (SELECT 1 FROM ${t.queues} AS q WHERE q.Name = n.Queue)`,
    `   OR NOT EXISTS (SELECT 1 FROM ${t.stats} AS s WHERE s.Queue = n.Queue);`,
    `INSERT INTO ${t.queues} (Name) SELECT n.Queue FROM @NewQueues AS n`,
    `WHERE NOT EXISTS (SELECT 1 FROM ${t.queues} AS q WITH (UPDLOCK, HOLDLOCK) WHERE q.Name = n.Queue);`,
    `INSERT INTO ${t.stats} (Queue) SELECT n.Queue FROM @NewQueues AS n`,
    `WHERE NOT EXISTS (SELECT 1 FROM ${t.stats} AS s WITH (UPDLOCK, HOLDLOCK) WHERE s.Queue = n.Queue);`,
  ].join('\n');
}

/** A lease as the builders take it. */
export interface MssqlLease {
  id: string;
  workerId: string;
  leaseId: string;
}

export function leaseDoc(p: ParamList, leases: readonly MssqlLease[]): string {
  return p.json(leases.map((l) => ({ id: l.id, workerId: l.workerId, leaseId: l.leaseId })));
}

/**
 * Archive rows from the hot-shaped `@Moved`, joined to `@In` for their durations, on the id AND the
 * lease: `@In` is keyed by both, since a stale run and its successor may share a batch, and a join
 * on the id alone would insert the moved run once per entry (the Archive's key refuses the second:
 * 2627, and the whole batch rolls back). `withResults`: `Result` too, from `@In` (NULL for a run
 * that records none); without it the column is not named, and the insert is the one of version 14.
 */
export function archiveInsert(t: Record<MssqlTable, string>, withResults = false): string {
  return (
    insertSelect(t.archive, withResults ? ARCHIVE_TABLE_COLUMNS : ARCHIVE_COLUMNS, 'm', {
      LastUpdatedUtc: '@now',
      FinishedAtUtc: '@now',
      DurationMs: 'i.DurationMs',
      Result: 'i.Result',
    }) + '\nFROM @Moved AS m INNER JOIN @In AS i ON i.Id = m.Id AND i.LeaseId = m.LeaseId;'
  );
}

/** DLQ rows from the hot-shaped `@Moved`. */
export function dlqInsert(
  t: Record<MssqlTable, string>,
  status: string,
  reason: string,
  errorDetails: string,
  actor: string,
  duration: string,
): string {
  return (
    insertSelect(t.dlq, DLQ_COLUMNS, 'm', {
      Status: status,
      LastUpdatedUtc: '@now',
      LastModifiedBy: `ISNULL(${actor}, m.LastModifiedBy)`,
      FailureReason: reason,
      ErrorDetails: errorDetails,
      FailedAtUtc: '@now',
      DurationMs: duration,
    }) + '\nFROM @Moved AS m;'
  );
}

/**
 * The hints of a skipping read that takes no UPDLOCK (purge by filter, retention). Under
 * READ_COMMITTED_SNAPSHOT (the Azure SQL default) a READ COMMITTED read is a versioned read, and
 * "the READPAST table hint cannot be specified when the READ_COMMITTED_SNAPSHOT database option is
 * set to ON and … the transaction isolation level of the session is READ COMMITTED … include the
 * READCOMMITTEDLOCK table hint in the query"
 * (https://learn.microsoft.com/en-us/sql/t-sql/queries/hints-transact-sql-table, READPAST).
 * `READCOMMITTEDLOCK` makes it a locking read whatever the database option, as the claim's active
 * count already is.
 */
export const READPAST_UNDER_RCSI = 'READCOMMITTEDLOCK, READPAST, ROWLOCK';
