/**
 * Every T-SQL statement of the SQL Server dialect, one builder per operation. Each builder takes
 * the validated schema name (the only identifier ever inlined) and the operation's inputs, and
 * returns the batch text with its positional parameters (`@0`, `@1`, … as TypeORM binds them).
 *
 * Each builder is named after the `JobStorage` method it serves, with a suffix for a step
 * (`fetchNextBatch`, `fetchNextBatchClaimed`, `applyRetentionArchive`), the names PostgreSQL's
 * `sql/` uses; `listJobs` serves the three lists. The statements run in `mssql-job-store.ts` (writes)
 * and `mssql-job-queries.ts` (reads).
 *
 * Conventions (SPEC §2–§3):
 * - Every batch starts with `SET TRANSACTION ISOLATION LEVEL READ COMMITTED; SET LOCK_TIMEOUT -1;`
 *   (`SESSION_PROLOGUE`, added by `ParamList.statement`): a pooled connection may carry another
 *   level or lock timeout over from the application. A batch that runs in a caller's transaction
 *   (`{ callerTransaction: true }`) has neither the prologue nor a transaction of its own.
 * - Status codes are literals in the text, so the filtered indexes on `Status` match; every value
 *   from outside is a parameter. Lists travel as ONE JSON parameter read with `OPENJSON`, because a
 *   request can carry at most 2,100 parameters.
 * - Batches that change several rows run `SET XACT_ABORT ON; BEGIN TRAN; … COMMIT;` so any error
 *   rolls everything back. TypeORM executes every query through `sp_executesql`, so `SET` options
 *   end with the batch and never leak into a pooled connection another caller gets.
 * - `SET NOCOUNT ON`: changed-row counts come from `@@ROWCOUNT` selected into the result or from
 *   `OUTPUT … INTO` table variables, never from the driver's `rowsAffected`.
 * - `OUTPUT` always goes `INTO` a table variable and is selected afterwards: `OUTPUT` without
 *   `INTO` fails (error 334) on a table that has any enabled trigger, e.g. a DBA's audit trigger.
 *   It names its columns on both sides, as every `INSERT` names its target columns, so a column
 *   added to a table (an audit column, a later migration) breaks nothing (see `outputInto`).
 * - Parameters are declared with fixed widths (`ParamList.nvarchar`), never their value's length,
 *   so each statement shape is one plan-cache entry.
 * - Rows that a statement picks by a predicate (claim, rescues, resurrect by filter) are read
 *   without update locks first and then locked by key (`UPDLOCK, READPAST, ROWLOCK, FORCESEEK` on
 *   the clustered key): a row rejected by a later predicate is never held, and every statement
 *   that changes hot rows locks the clustered key before the nonclustered ones. Where a statement
 *   locks several rows of one table (budgeted queues, counters, buckets, idempotency keys), a keyed
 *   table variable drives a nested loop, so the locks are taken in key order.
 * - Dates are returned as ISO-8601 text with `Z` (`CONVERT(varchar(33), x, 126) + 'Z'`), so their
 *   meaning does not depend on the driver's `useUTC` setting (TypeORM defaults it to false).
 * - `NOLOCK` appears only in telemetry reads (summary, queue stats, health, throughput, top
 *   errors). Every state transition reads committed data and locks what it changes.
 *
 * Requires SQL Server 2016+ / Azure SQL with compatibility level ≥ 130 (OPENJSON, DATEDIFF_BIG).
 */
import { FailureReason } from '../../interfaces/job-status.enum';
import { ActiveFilter, DlqFilter, HistoryFilter } from '../../interfaces/job-view.interface';
import { QueuePatch } from '../../interfaces/job.interface';
import type {
  CheckedRecurringDefinition,
  CheckedWorkerHeartbeat,
} from '../../validation/validate-args';
import type { CheckedAudit, CheckedAuditQuery } from '../../validation/validate-audit';
import type { ListRequest } from '../../validation/validate-list';
import { MAX_ATTEMPT_ERROR } from '../../validation/limits';
import { attemptOutcomeSql } from '../shared/attempts';
import { escapeLike } from '../shared/escape-like';
import { ERROR_PREFIX_CHARS } from '../shared/page';
import { MssqlBatchOptions, MssqlStatement, ParamList } from './mssql-params';
import {
  ARCHIVE_COLUMNS,
  AUDIT_COLUMNS,
  AUDIT_TARGET_KEY_LENGTH,
  DLQ_COLUMNS,
  ATTEMPT_COLUMNS,
  HOT_COLUMNS,
  MssqlColumn,
  MssqlTable,
  QUEUE_COLUMNS,
  RECURRING_COLUMNS,
  WORKER_COLUMNS,
  mssqlSchemaDdl,
  qualify,
} from './mssql.schema';

export { MssqlStatement } from './mssql-params';

// ------------------------------------------------------------------------------------ fragments

const PROLOGUE = 'SET NOCOUNT ON;\nSET XACT_ABORT ON;';
const DECLARE_NOW = 'DECLARE @now datetime2(3) = SYSUTCDATETIME();';
/**
 * The one-minute metric bucket of `@now` (`METRIC_BUCKET_MS`), truncated, not rounded: the seconds
 * and milliseconds are subtracted before the cast to `datetime2(0)`, because converting to a lower
 * fractional precision rounds
 * (https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql#converting-date-and-time-data).
 * (`DATETRUNC` would say it directly, but needs SQL Server 2022.)
 */
const DECLARE_BUCKET =
  'DECLARE @bucket datetime2(0) = CAST(DATEADD(SECOND, -DATEPART(SECOND, @now), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now)) AS datetime2(0));';

/**
 * `base + ms` for a bigint millisecond count. `DATEADD` takes an int, and 10 years of
 * milliseconds do not fit one, so whole seconds and the remainder are added separately.
 */
function addMs(base: string, ms: string): string {
  return `DATEADD(MILLISECOND, CAST(${ms} % 1000 AS int), DATEADD(SECOND, CAST(${ms} / 1000 AS int), ${base}))`;
}

/** `base − ms`, see {@link addMs}. */
function subtractMs(base: string, ms: string): string {
  return `DATEADD(MILLISECOND, -CAST(${ms} % 1000 AS int), DATEADD(SECOND, -CAST(${ms} / 1000 AS int), ${base}))`;
}

function isDate(col: MssqlColumn): boolean {
  return col.type.startsWith('datetime2');
}

/** A date expression rendered as ISO-8601 UTC text (`…Z`); NULL stays NULL. */
function isoText(expr: string): string {
  return `CONVERT(varchar(33), ${expr}, 126) + 'Z'`;
}

/** `alias.Col` for each column, dates as ISO text, under their own names. */
function selectColumns(alias: string, columns: readonly MssqlColumn[]): string {
  return columns
    .filter((col) => col.name !== 'DueAtUtc')
    .map((col) =>
      isDate(col) ? `${isoText(`${alias}.${col.name}`)} AS ${col.name}` : `${alias}.${col.name}`,
    )
    .join(', ');
}

/** `DECLARE @name TABLE (…)` with the columns of a table, all nullable. */
function declareTableVar(name: string, columns: readonly MssqlColumn[]): string {
  return `DECLARE ${name} TABLE (${columns.map((col) => `${col.name} ${col.type} NULL`).join(', ')});`;
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
function outputInto(
  prefix: 'inserted' | 'deleted',
  target: string,
  columns: readonly MssqlColumn[],
): string {
  const names = columns.map((col) => col.name);
  return `OUTPUT ${names.map((name) => `${prefix}.${name}`).join(', ')} INTO ${target} (${names.join(', ')})`;
}

/** `INSERT INTO target (cols) SELECT exprs FROM source`, overriding some column expressions. */
function insertSelect(
  target: string,
  columns: readonly MssqlColumn[],
  alias: string,
  overrides: Record<string, string>,
): string {
  const names = columns.map((col) => col.name);
  const exprs = columns.map((col) => overrides[col.name] ?? `${alias}.${col.name}`);
  return `INSERT INTO ${target} (${names.join(', ')})\nSELECT ${exprs.join(', ')}`;
}

function tables(schema: string): Record<MssqlTable, string> {
  const q = (t: MssqlTable) => qualify(schema, t);
  return {
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
  };
}

/** OPENJSON shape of a lease list `[{ id, workerId, leaseId }]`. */
const LEASE_JSON =
  "WITH (Id varchar(36) '$.id', WorkerId nvarchar(255) '$.workerId', LeaseId varchar(36) '$.leaseId')";
/** OPENJSON shape of an id list `["…", "…"]`. */
const ID_JSON = "WITH (Id varchar(36) '$')";

/** A lifetime counter of `StatsSummary`. */
type StatsCounter =
  'SucceededTotal' | 'FailedTotal' | 'CancelledTotal' | 'RetriedTotal' | 'ResurrectedTotal';

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
function bumpStats(s: string, source: string, add: Partial<Record<StatsCounter, string>>): string {
  const counters = Object.keys(add) as StatsCounter[];
  return [
    `DECLARE @StatsDelta TABLE (Queue varchar(255) NOT NULL PRIMARY KEY, ${counters.map((c) => `${c} bigint NOT NULL`).join(', ')});`,
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
function bumpBuckets(b: string, source: string, lag = false): string {
  const match =
    'x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason';
  const lagColumns = lag
    ? ', LagCount bigint NOT NULL, LagSumMs bigint NOT NULL, LagMaxMs bigint NOT NULL'
    : '';
  return [
    `DECLARE @BucketDelta TABLE (Queue varchar(255) NOT NULL, Outcome tinyint NOT NULL, FailureReason smallint NOT NULL, N bigint NOT NULL, DurationCount bigint NOT NULL, TotalDurationMs bigint NOT NULL, MaxDurationMs bigint NOT NULL${lagColumns}, PRIMARY KEY (Queue, Outcome, FailureReason));`,
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
function startLagMs(alias: string): string {
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
function attemptsInsert(t: Record<MssqlTable, string>, source: string): string {
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
function attemptsDelete(t: Record<MssqlTable, string>): string {
  return `DELETE x FROM ${t.attempts} AS x INNER JOIN @Gone AS g ON g.Id = x.JobId;`;
}

/**
 * Creates the `Queues` and `StatsSummary` rows of `source`'s queues that do not exist yet, in
 * name order: both inserts are driven from `@NewQueues`, keyed by name (the batch declares it).
 */
function ensureQueueRows(t: Record<MssqlTable, string>, source: string): string {
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

// ------------------------------------------------------------------------------------ lifecycle

/** The database's compatibility level (OPENJSON needs 130+); checked by `prepare()`. */
export function prepare(): MssqlStatement {
  return new ParamList().statement(
    'SELECT CAST(compatibility_level AS int) AS CompatibilityLevel, name AS DatabaseName FROM sys.databases WHERE name = DB_NAME();',
  );
}

/** The full DDL (see `mssqlSchemaDdl`), as a statement without parameters. */
export function ensureSchema(schema: string): MssqlStatement {
  return new ParamList().statement(mssqlSchemaDdl(schema));
}

/**
 * The versions the schema's ledger records, for `schemaStatus`: none while the ledger does not
 * exist yet. A plain READ COMMITTED read without a lock hint, outside the bootstrap's applock, so
 * it never waits for a migration in progress beyond that transaction's row locks. The SELECT from
 * the ledger compiles while the table is missing (deferred name resolution:
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/create-procedure-transact-sql#deferred-name-resolution)
 * and the `OBJECT_ID` test keeps it from running then
 * (https://learn.microsoft.com/en-us/sql/t-sql/functions/object-id-transact-sql). The versions go
 * through a table variable so the batch always returns its one result set.
 */
export function schemaStatus(schema: string): MssqlStatement {
  const ledger = qualify(schema, 'migrations');
  return new ParamList().statement(
    [
      `SET NOCOUNT ON;`,
      `DECLARE @Versions TABLE (Version int NOT NULL);`,
      `IF OBJECT_ID(N'${ledger}', N'U') IS NOT NULL`,
      `  INSERT INTO @Versions (Version) SELECT Version FROM ${ledger};`,
      `SELECT Version FROM @Versions ORDER BY Version;`,
    ].join('\n'),
  );
}

/** The database clock, as ISO text. */
export function now(): MssqlStatement {
  return new ParamList().statement(
    `SELECT ${isoText('CAST(SYSUTCDATETIME() AS datetime2(3))')} AS NowUtc;`,
  );
}

// ------------------------------------------------------------------------------------ enqueue

/** One validated job as the enqueue builders take it. */
export interface MssqlNewJob {
  id: string;
  queue: string;
  type: string;
  payload: string;
  tags: string | null;
  idempotencyKey: string | null;
  priority: number;
  delayMs: number | null;
  runAt: Date | null;
  createdBy: string | null;
  /** The producer's trace context as JSON text (printable ASCII), or null. */
  traceContext: string | null;
  /** The payload's version (1 for an unversioned job). */
  payloadVersion: number;
}

/**
 * enqueue (one job). Idempotent on `Id` across all three pillars, so a retry after an ambiguous
 * commit never duplicates, not even after the job has already finished.
 *
 * Idempotency key without deadlocks: the `INSERT … SELECT … WHERE NOT EXISTS (SELECT … FROM
 * JobsHot WITH (UPDLOCK, HOLDLOCK) WHERE IdempotencyKey = @key)` takes a key-range *update* lock
 * on that key in the unique filtered index. Update locks are incompatible with each other, so a
 * second caller with the same key waits for the first to commit and then sees its row, instead
 * of both holding shared range locks and both trying to insert (the deadlock of the .NET ChokaQ,
 * which read under SERIALIZABLE without UPDLOCK). The loser then reads the holder's id. The
 * unique filtered index `UX_JobsHot_IdempotencyKey` is the backstop (e.g. under SNAPSHOT
 * isolation chosen by a caller's transaction): error 2601/2627 makes the storage run this
 * statement again, which then returns the holder.
 * `IdempotencyKey IS NOT NULL` is repeated in the predicates so the filtered index matches.
 */
export function enqueue(
  schema: string,
  job: MssqlNewJob,
  options?: MssqlBatchOptions,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.varchar(job.id, 36);
  const queue = p.varchar(job.queue, 255);
  const type = p.nvarchar(job.type, 255);
  const payload = p.nvarchar(job.payload, 'max');
  const tags = p.nvarchar(job.tags, 'max');
  const key = job.idempotencyKey === null ? 'NULL' : p.nvarchar(job.idempotencyKey, 255);
  const priority = p.int(job.priority);
  const delay = p.bigint(job.delayMs);
  const runAt = p.instant(job.runAt);
  const createdBy = p.nvarchar(job.createdBy, 100);
  const traceContext = p.varchar(job.traceContext, 2048);
  const payloadVersion = p.int(job.payloadVersion);
  const exists = (table: string) => `EXISTS (SELECT 1 FROM ${table} WHERE Id = ${id})`;
  // Two shapes: only a keyed enqueue takes the key-range lock, so key-less enqueues never
  // serialise on the idempotency index. The Id checks take no lock on purpose: UUIDv7 ids all
  // land at the end of the clustered index, and a range lock there would serialise every
  // concurrent enqueue; a same-id race is a retry of one producer, and the primary key (2627)
  // backstops it.
  const keyed = job.idempotencyKey !== null;
  return p.statement(
    [
      'SET NOCOUNT ON;',
      DECLARE_NOW,
      `DECLARE @scheduled datetime2(3) = CASE WHEN ${delay} IS NOT NULL THEN ${addMs('@now', delay)} ELSE ${runAt} END;`,
      'DECLARE @created int = 0;',
      'DECLARE @holder varchar(36) = NULL;',
      'DECLARE @NewQueues TABLE (Queue varchar(255) NOT NULL PRIMARY KEY);',
      ensureQueueRows(t, `(SELECT ${queue} AS Queue)`),
      `INSERT INTO ${t.hot} (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, LastUpdatedUtc, CreatedBy, TraceContext, PayloadVersion)`,
      `SELECT ${id}, ${queue}, ${type}, ${payload}, ${tags}, ${key}, ${priority}, 0, 0, @scheduled, ISNULL(@scheduled, @now), @now, @now, @now, ${createdBy}, ${traceContext}, ${payloadVersion}`,
      `WHERE NOT ${exists(t.hot)}`,
      `  AND NOT ${exists(t.archive)}`,
      keyed
        ? `  AND NOT ${exists(t.dlq)}\n  AND NOT EXISTS (SELECT 1 FROM ${t.hot} AS k WITH (UPDLOCK, HOLDLOCK) WHERE k.IdempotencyKey = ${key} AND k.IdempotencyKey IS NOT NULL);`
        : `  AND NOT ${exists(t.dlq)};`,
      'SET @created = @@ROWCOUNT;',
      ...(keyed
        ? [
            'IF @created = 0',
            `  SELECT @holder = k.Id FROM ${t.hot} AS k WITH (READCOMMITTEDLOCK) WHERE k.IdempotencyKey = ${key} AND k.IdempotencyKey IS NOT NULL;`,
          ]
        : []),
      `SELECT @created AS Created, @holder AS HolderId,`,
      `  CASE WHEN ${exists(t.hot)} OR ${exists(t.archive)} OR ${exists(t.dlq)} THEN 1 ELSE 0 END AS IdExists;`,
    ].join('\n'),
    options,
  );
}

/**
 * enqueueMany (one chunk): all rows travel as ONE JSON parameter through `OPENJSON` (a request
 * carries at most 2,100 parameters). One transaction per chunk. Same rules as {@link enqueue}:
 * an active key's holder wins (range-locked with `UPDLOCK, HOLDLOCK`), the first copy of a key or
 * an id repeated inside the chunk wins, ids already in any pillar are not inserted again and
 * report themselves (before any key holder: see below). Returns one row per input item, in input
 * order.
 *
 * Lock order: the `Queues` and `StatsSummary` rows of missing queues in name order (`@NewQueues`
 * is keyed by name), then the idempotency keys' ranges in key order (`@Keys`, keyed by the key,
 * drives one seek per key), whatever order the items came in.
 *
 * In a caller's transaction (`callerTransaction`) the batch has no `SET XACT_ABORT ON` and no
 * `BEGIN TRAN … COMMIT` of its own: the caller's transaction gives the atomicity, and XACT_ABORT
 * would let any error here roll back (doom) the caller's whole transaction, after which `mssql`
 * rejects the caller's own `rollbackTransaction()` with `EABORT`. An error then ends only the
 * failing statement (the INSERT into JobsHot is one statement: all rows or none) and reaches the
 * caller, whose transaction decides. A deadlock (1205) is the exception: SQL Server rolls back the
 * victim's whole transaction whatever XACT_ABORT says, so the caller retries its whole unit of work.
 */
export function enqueueMany(
  schema: string,
  jobs: readonly MssqlNewJob[],
  options?: MssqlBatchOptions,
): MssqlStatement {
  const own = !options?.callerTransaction;
  const t = tables(schema);
  const p = new ParamList();
  const doc = p.json(
    jobs.map((j) => ({
      id: j.id,
      queue: j.queue,
      type: j.type,
      payload: j.payload,
      tags: j.tags,
      key: j.idempotencyKey,
      priority: j.priority,
      delayMs: j.delayMs,
      runAt: j.runAt ? j.runAt.toISOString().slice(0, 23) : null,
      createdBy: j.createdBy,
      traceContext: j.traceContext,
      payloadVersion: j.payloadVersion,
    })),
  );
  // Only a chunk with keys takes key-range locks (see enqueue); ids are checked without locks.
  const keyed = jobs.some((j) => j.idempotencyKey !== null);
  return p.statement(
    [
      own ? PROLOGUE : 'SET NOCOUNT ON;',
      DECLARE_NOW,
      'DECLARE @In TABLE (Ord int NOT NULL PRIMARY KEY, Id varchar(36) NOT NULL, Queue varchar(255) NOT NULL, Type nvarchar(255) NOT NULL, Payload nvarchar(max) NOT NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255) NULL, Priority int NOT NULL, ScheduledAtUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, TraceContext varchar(2048) NULL, PayloadVersion int NOT NULL, Holder varchar(36) NULL);',
      'DECLARE @Created TABLE (Id varchar(36) NOT NULL PRIMARY KEY);',
      'DECLARE @NewQueues TABLE (Queue varchar(255) NOT NULL PRIMARY KEY);',
      'INSERT INTO @In (Ord, Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, ScheduledAtUtc, CreatedBy, TraceContext, PayloadVersion)',
      `SELECT CAST(a.[key] AS int), j.Id, j.Queue, j.Type, j.Payload, j.Tags, j.IdempotencyKey, j.Priority,`,
      `  CASE WHEN j.DelayMs IS NOT NULL THEN ${addMs('@now', 'j.DelayMs')} ELSE CONVERT(datetime2(3), j.RunAt, 126) END, j.CreatedBy, j.TraceContext, ISNULL(j.PayloadVersion, 1)`,
      `FROM OPENJSON(${doc}) AS a`,
      `CROSS APPLY OPENJSON(a.value) WITH (Id varchar(36) '$.id', Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', Payload nvarchar(max) '$.payload', Tags nvarchar(max) '$.tags', IdempotencyKey nvarchar(255) '$.key', Priority int '$.priority', DelayMs bigint '$.delayMs', RunAt varchar(23) '$.runAt', CreatedBy nvarchar(100) '$.createdBy', TraceContext varchar(2048) '$.traceContext', PayloadVersion int '$.payloadVersion') AS j;`,
      '-- An id repeated inside the chunk: later copies return the first copy.',
      'UPDATE i SET i.Holder = i.Id FROM @In AS i WHERE EXISTS (SELECT 1 FROM @In AS e WHERE e.Id = i.Id AND e.Ord < i.Ord);',
      '-- An id already stored (any pillar), e.g. a retry after an ambiguous commit: it reports its own',
      '-- id, never the holder of its key (its job may have finished and freed the key for another).',
      'UPDATE i SET i.Holder = i.Id FROM @In AS i',
      `WHERE i.Holder IS NULL AND (EXISTS (SELECT 1 FROM ${t.hot} AS h WHERE h.Id = i.Id)`,
      `  OR EXISTS (SELECT 1 FROM ${t.archive} AS a WHERE a.Id = i.Id) OR EXISTS (SELECT 1 FROM ${t.dlq} AS d WHERE d.Id = i.Id));`,
      ...(own ? ['BEGIN TRAN;'] : []),
      ensureQueueRows(t, '@In'),
      ...(keyed
        ? [
            '-- Keys an active job already holds: key-range update locks until COMMIT (see enqueue),',
            '-- taken in key order (one seek per key of @Keys, keyed by the key), so two chunks that',
            '-- share keys wait for each other instead of deadlocking.',
            'DECLARE @Keys TABLE (IdempotencyKey nvarchar(255) NOT NULL PRIMARY KEY, Holder varchar(36) NULL);',
            'INSERT INTO @Keys (IdempotencyKey)',
            'SELECT DISTINCT i.IdempotencyKey FROM @In AS i WHERE i.Holder IS NULL AND i.IdempotencyKey IS NOT NULL;',
            'UPDATE k SET k.Holder = h.Id',
            `FROM @Keys AS k INNER LOOP JOIN ${t.hot} AS h WITH (UPDLOCK, HOLDLOCK) ON h.IdempotencyKey = k.IdempotencyKey`,
            'WHERE h.IdempotencyKey IS NOT NULL;',
            'UPDATE i SET i.Holder = k.Holder',
            'FROM @In AS i INNER JOIN @Keys AS k ON k.IdempotencyKey = i.IdempotencyKey',
            'WHERE i.Holder IS NULL AND k.Holder IS NOT NULL;',
            '-- A key repeated inside the chunk: the first copy wins.',
            'UPDATE i SET i.Holder = f.Id',
            'FROM @In AS i CROSS APPLY (SELECT TOP (1) e.Id FROM @In AS e WHERE e.IdempotencyKey = i.IdempotencyKey ORDER BY e.Ord) AS f',
            'WHERE i.Holder IS NULL AND i.IdempotencyKey IS NOT NULL AND f.Id <> i.Id;',
          ]
        : []),
      `INSERT INTO ${t.hot} (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, LastUpdatedUtc, CreatedBy, TraceContext, PayloadVersion)`,
      'OUTPUT inserted.Id INTO @Created (Id)',
      'SELECT i.Id, i.Queue, i.Type, i.Payload, i.Tags, i.IdempotencyKey, i.Priority, 0, 0, i.ScheduledAtUtc, ISNULL(i.ScheduledAtUtc, @now), @now, @now, @now, i.CreatedBy, i.TraceContext, i.PayloadVersion',
      'FROM @In AS i',
      'WHERE i.Holder IS NULL',
      `  AND NOT EXISTS (SELECT 1 FROM ${t.hot} AS h WHERE h.Id = i.Id)`,
      `  AND NOT EXISTS (SELECT 1 FROM ${t.archive} AS a WHERE a.Id = i.Id)`,
      `  AND NOT EXISTS (SELECT 1 FROM ${t.dlq} AS d WHERE d.Id = i.Id);`,
      ...(own ? ['COMMIT;'] : []),
      'SELECT i.Ord, COALESCE(i.Holder, i.Id) AS Id, CASE WHEN c.Id IS NOT NULL AND i.Holder IS NULL THEN 1 ELSE 0 END AS Created',
      'FROM @In AS i LEFT JOIN @Created AS c ON c.Id = i.Id',
      'ORDER BY i.Ord;',
    ].join('\n'),
    options,
  );
}

// ------------------------------------------------------------------------------------ claim

/** Inputs of the claim. */
export interface MssqlClaimRequest {
  workerId: string;
  leaseId: string;
  limit: number;
  /** Queues with a queue-wide handler. */
  queues: readonly string[];
  /** Exact (queue, type) pairs, each with the payload versions its handler runs (1 to 1 if absent). */
  types: ReadonlyArray<{ queue: string; type: string; minVersion?: number; maxVersion?: number }>;
  /** How many of the claimed rows, first in claim order, go straight to Processing (0 to limit). */
  start: number;
}

/**
 * fetchNextBatch — the claim (seed "Fetch Next Batch"), one transaction: lock the budgeted
 * queues, count, pick candidates without update locks, lock the chosen rows by key, then ONE
 * `UPDATE … OUTPUT inserted.<columns> INTO @Claimed`.
 *
 * Locks and isolation (table hints: https://learn.microsoft.com/en-us/sql/t-sql/queries/hints-transact-sql-table):
 * - Runnable queues (the worker's queue-wide handlers and exact (queue, type) pairs, one JSON
 *   parameter each) are joined to `Queues` without locks, dropping paused and inactive ones.
 * - Budgeted queues (`MaxWorkers` set) are serialised: in the claim's transaction their `Queues`
 *   rows, and only theirs, are read `WITH (UPDLOCK, ROWLOCK, FORCESEEK)` by key: a nested loop
 *   (`INNER LOOP JOIN`) from `@Budgeted` into a seek on `PK_Queues` per name. A join left to the
 *   optimiser could scan `Queues` (merge or hash join) and U-lock every row until COMMIT, which
 *   would serialise every claimer, budgeted or not. `MaxWorkers` is re-read under the lock.
 *   A queue that became budgeted after the unlocked read has no lock: its `MaxWorkers` is read
 *   again (`READCOMMITTEDLOCK`) and it gets no slots this round, so it is never claimed without
 *   its cap (the PostgreSQL claim likewise reads `max_workers` after its locks); the next poll
 *   claims from it under its lock.
 * - Active rows per budgeted queue are counted `WITH (READCOMMITTEDLOCK)`: a locking read of
 *   committed rows even where READ_COMMITTED_SNAPSHOT is on (the Azure SQL default), so the count
 *   cannot come from a stale snapshot taken before another claim committed.
 * - Candidates are read WITHOUT update locks, `WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`: each
 *   row's shared lock ends with its read, rows others hold exclusively are skipped. An `UPDLOCK`
 *   read holds its U lock until COMMIT on every row it reads, including rows a later predicate
 *   rejects (delayed rows ahead in index order; rows of types no worker here runs, e.g. during a
 *   rolling deploy): with such a backlog each claim would hold O(backlog) locks, and near 5,000
 *   locks SQL Server tries to escalate to a table lock, which `READPAST` cannot skip
 *   (https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide#lock-escalation).
 *   Exact (queue, type) pairs seek `IX_JobsHot_ClaimType (Queue, Type, …)`, so rows of other
 *   types are not read at all; queue-wide handlers seek `IX_JobsHot_Claim (Queue, …)`. Each takes
 *   twice its slots, so a claimer that loses some rows to a concurrent one still fills its batch.
 * - The chosen rows are then locked `WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)`, by key: a
 *   nested loop from `@Candidates` (keyed in claim order) into a seek on the clustered `Id`,
 *   `TOP (slots)` per queue. Rows another claimer holds are skipped rather than waited for, and
 *   `Status = 0` and the due time are re-checked under the lock; the only rows it can U-lock and
 *   reject are rows that changed since the candidate read, at most the candidates (O(batch)).
 * - The final UPDATE re-checks `Status = 0`.
 *
 * Lock order: `Queues` rows in name order (the loop join reads `@Budgeted`'s key in order), then
 * `JobsHot` rows on the clustered key first, like every other statement that changes hot rows by
 * id (a pick through the nonclustered index first, then the clustered row, is the order that
 * deadlocks with a cancel or a move of the same row).
 *
 * `start`: the UPDATE sets the batch's first `@start` rows (`ROW_NUMBER()` in claim order) to
 * Processing exactly as {@link markAsProcessing} does, the rest to Fetched; 0 starts none. The
 * started rows are then counted in the queue's start bucket (outcome 4) with their start lag, in
 * the same transaction ({@link bumpBuckets}: `MetricBuckets` rows in key order, after the
 * `JobsHot` rows, as every move takes them); a claim that starts nothing writes no bucket.
 *
 * Departure from the seed's shape, same semantics: the seed ranks every due pending row with
 * `ROW_NUMBER() OVER (PARTITION BY Queue …)`, which reads the whole backlog on every poll. Here
 * each runnable queue (or pair) takes its own top rows with `CROSS APPLY (SELECT TOP (…) … ORDER
 * BY Priority DESC, DueAtUtc, Id)`, a seek into a filtered index; the cost is O(batch) per queue,
 * not O(backlog). The per-queue budget (`slots = min(limit, MaxWorkers − active)`, never
 * negative) caps each queue, and an outer `TOP (@limit)` keeps the best rows across queues,
 * priority first, then due time; picked rows that lose that cut stay U-locked until COMMIT (at
 * most the slots of each queue).
 */
/** Whether the rate window of `q` has rolled over at `@now` (none yet, or a window old). */
const RATE_ROLLED =
  '(q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart))';

/**
 * How many of `q`'s jobs may start at `@now`: `RateLimitMax` less the current window's starts, less
 * the previous window's while its last start is within one window of `@now`, never below 0
 * (`GREATEST` needs SQL Server 2022, hence the CASE).
 */
const RATE_HELD = [
  `CASE WHEN ${RATE_ROLLED}`,
  '  THEN CASE WHEN q.RateWindowLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RateWindowCount, 0) ELSE 0 END',
  '  ELSE ISNULL(q.RateWindowCount, 0)',
  '       + CASE WHEN q.RatePrevLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RatePrevCount, 0) ELSE 0 END',
  'END',
].join('\n');
const RATE_ALLOWANCE = `CASE WHEN q.RateLimitMax - (${RATE_HELD}) > 0 THEN q.RateLimitMax - (${RATE_HELD}) ELSE 0 END`;

export function fetchNextBatch(schema: string, req: MssqlClaimRequest): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const workerId = p.nvarchar(req.workerId, 255);
  const leaseId = p.varchar(req.leaseId, 36);
  const limit = p.int(req.limit);
  const queues = p.json(req.queues);
  const types = p.json(
    req.types.map((x) => ({
      queue: x.queue,
      type: x.type,
      minVersion: x.minVersion ?? 1,
      maxVersion: x.maxVersion ?? 1,
    })),
  );
  const start = p.int(req.start);
  const started = `k.Rn <= ${start}`;
  // The candidate read of one queue (queue-wide handler) or one (queue, type) pair.
  const candidates = (match: string, residual = '') => [
    '  CROSS APPLY (',
    '    SELECT TOP (2 * m.Slots) h.Priority, h.DueAtUtc, h.Id',
    `    FROM ${t.hot} AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`,
    `    WHERE ${match} AND h.Status = 0 AND h.DueAtUtc <= @now${residual}`,
    '    ORDER BY h.Priority DESC, h.DueAtUtc, h.Id',
    '  ) AS c',
  ];
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      'DECLARE @Runnable TABLE (Queue varchar(255) NOT NULL PRIMARY KEY, AllTypes bit NOT NULL, Budget int NULL, RateMax int NULL, RateAllow int NULL, Slots int NULL);',
      'DECLARE @Types TABLE (Queue varchar(255) NOT NULL, Type nvarchar(255) NOT NULL, MinVersion int NOT NULL, MaxVersion int NOT NULL, PRIMARY KEY (Queue, Type));',
      'DECLARE @Budgeted TABLE (Queue varchar(255) NOT NULL PRIMARY KEY);',
      'DECLARE @Candidates TABLE (Queue varchar(255) NOT NULL, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL, Id varchar(36) NOT NULL, PRIMARY KEY (Queue, Priority DESC, DueAtUtc, Id));',
      'DECLARE @Picked TABLE (Id varchar(36) NOT NULL PRIMARY KEY, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL);',
      declareTableVar('@Claimed', HOT_COLUMNS),
      'INSERT INTO @Types (Queue, Type, MinVersion, MaxVersion)',
      `SELECT x.Queue, x.Type, MIN(x.MinVersion), MAX(x.MaxVersion) FROM OPENJSON(${types}) WITH (Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', MinVersion int '$.minVersion', MaxVersion int '$.maxVersion') AS x`,
      'WHERE x.Queue IS NOT NULL AND x.Type IS NOT NULL AND x.MinVersion IS NOT NULL AND x.MaxVersion IS NOT NULL',
      'GROUP BY x.Queue, x.Type;',
      'INSERT INTO @Runnable (Queue, AllTypes, Budget, RateMax)',
      'SELECT q.Name, CAST(MAX(r.AllTypes) AS bit), q.MaxWorkers, q.RateLimitMax',
      `FROM (SELECT a.Queue, 1 AS AllTypes FROM OPENJSON(${queues}) WITH (Queue varchar(255) '$') AS a`,
      '      UNION ALL SELECT y.Queue, 0 FROM @Types AS y) AS r',
      `INNER JOIN ${t.queues} AS q ON q.Name = r.Queue`,
      'WHERE q.IsPaused = 0 AND q.IsActive = 1',
      'GROUP BY q.Name, q.MaxWorkers, q.RateLimitMax;',
      'INSERT INTO @Budgeted (Queue) SELECT r.Queue FROM @Runnable AS r WHERE r.Budget IS NOT NULL OR r.RateMax IS NOT NULL;',
      'BEGIN TRAN;',
      '-- Serialise claims on budgeted and rate-limited queues: U locks on their Queues rows only, by',
      '-- key, in name order, held to the end of the transaction; both limits are re-read under the lock.',
      'UPDATE r SET r.Budget = q.MaxWorkers, r.RateMax = q.RateLimitMax',
      'FROM @Budgeted AS b',
      `INNER LOOP JOIN ${t.queues} AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = b.Queue`,
      'INNER JOIN @Runnable AS r ON r.Queue = b.Queue;',
      '-- The clock read after the locks: the start time of the rows started here, and the instant',
      '-- the rate allowance is computed at (later than the previous claimer of the queue, which',
      '-- committed before our lock was granted).',
      'SET @now = SYSUTCDATETIME();',
      '-- A queue budgeted or rate limited since the unlocked read holds no lock here: no slots this round.',
      'UPDATE r SET r.Budget = 0, r.RateMax = NULL',
      `FROM @Runnable AS r INNER JOIN ${t.queues} AS q WITH (READCOMMITTEDLOCK) ON q.Name = r.Queue`,
      'WHERE (q.MaxWorkers IS NOT NULL OR q.RateLimitMax IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM @Budgeted AS b WHERE b.Queue = r.Queue);',
      '-- Rate allowance of each locked rate-limited queue at @now (the rule of storage/shared/rate-window.ts).',
      `UPDATE r SET r.RateAllow = ${RATE_ALLOWANCE}`,
      'FROM @Runnable AS r',
      `INNER LOOP JOIN ${t.queues} AS q WITH (READCOMMITTEDLOCK, FORCESEEK) ON q.Name = r.Queue`,
      'WHERE r.RateMax IS NOT NULL AND q.RateLimitMax IS NOT NULL;',
      'WITH Active AS (',
      '  SELECT h.Queue, COUNT_BIG(*) AS Busy',
      `  FROM ${t.hot} AS h WITH (READCOMMITTEDLOCK)`,
      '  WHERE h.Status IN (1, 2) AND h.Queue IN (SELECT b.Queue FROM @Budgeted AS b)',
      '  GROUP BY h.Queue',
      ')',
      'UPDATE r SET r.Slots =',
      `  CASE WHEN r.Budget IS NULL THEN ${limit}`,
      '       WHEN r.Budget - ISNULL(a.Busy, 0) <= 0 THEN 0',
      `       WHEN r.Budget - ISNULL(a.Busy, 0) < ${limit} THEN r.Budget - ISNULL(a.Busy, 0)`,
      `       ELSE ${limit} END`,
      'FROM @Runnable AS r LEFT JOIN Active AS a ON a.Queue = r.Queue;',
      '-- A rate-limited queue: at most its allowance, and only when every claimed row starts (never',
      '-- buffered Fetched, so a start is the claim that counted it); a queue limited since the',
      '-- unlocked read was given Budget 0 above.',
      'UPDATE r SET r.Slots =',
      '  CASE WHEN r.RateMax IS NULL THEN r.Slots',
      `       WHEN ${start} < ${limit} OR r.RateAllow IS NULL THEN 0`,
      '       WHEN r.RateAllow < r.Slots THEN r.RateAllow',
      '       ELSE r.Slots END',
      'FROM @Runnable AS r;',
      '-- Candidates without update locks: a seek per queue-wide queue, and per exact (queue, type).',
      'INSERT INTO @Candidates (Queue, Priority, DueAtUtc, Id)',
      'SELECT m.Queue, c.Priority, c.DueAtUtc, c.Id',
      'FROM @Runnable AS m',
      ...candidates('h.Queue = m.Queue'),
      'WHERE m.AllTypes = 1 AND m.Slots > 0',
      'UNION ALL',
      'SELECT m.Queue, c.Priority, c.DueAtUtc, c.Id',
      'FROM @Runnable AS m',
      '  INNER JOIN @Types AS y ON y.Queue = m.Queue',
      // The payload version is a residual predicate of the (Queue, Type) seek: a row of a version
      // this process cannot run is read (a shared lock that ends with the read) and stepped over.
      ...candidates(
        'h.Queue = y.Queue AND h.Type = y.Type',
        ' AND h.PayloadVersion BETWEEN y.MinVersion AND y.MaxVersion',
      ),
      'WHERE m.AllTypes = 0 AND m.Slots > 0;',
      '-- Each queue locks its best candidates by key (clustered Id), skipping rows others hold.',
      'INSERT INTO @Picked (Id, Priority, DueAtUtc)',
      'SELECT k.Id, k.Priority, k.DueAtUtc',
      'FROM @Runnable AS m',
      'CROSS APPLY (',
      '  SELECT TOP (m.Slots) c.Id, c.Priority, c.DueAtUtc',
      '  FROM @Candidates AS c',
      `  INNER LOOP JOIN ${t.hot} AS h WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON h.Id = c.Id`,
      '  WHERE c.Queue = m.Queue AND h.Status = 0 AND h.DueAtUtc <= @now',
      '  ORDER BY c.Priority DESC, c.DueAtUtc, c.Id',
      ') AS k',
      'WHERE m.Slots > 0;',
      'WITH Batch AS (',
      // Rn ranks only the picked rows (at most `limit` per runnable queue), never the backlog.
      `  SELECT TOP (${limit}) b.Id, ROW_NUMBER() OVER (ORDER BY b.Priority DESC, b.DueAtUtc, b.Id) AS Rn`,
      '  FROM @Picked AS b ORDER BY b.Priority DESC, b.DueAtUtc, b.Id',
      ')',
      `UPDATE h SET h.Status = CASE WHEN ${started} THEN 2 ELSE 1 END,`,
      `  h.AttemptCount = CASE WHEN ${started} THEN h.AttemptCount + 1 ELSE h.AttemptCount END,`,
      `  h.StartedAtUtc = CASE WHEN ${started} THEN @now ELSE h.StartedAtUtc END,`,
      `  h.HeartbeatUtc = CASE WHEN ${started} THEN @now ELSE h.HeartbeatUtc END,`,
      `  h.WorkerId = ${workerId}, h.LeaseId = ${leaseId}, h.LastUpdatedUtc = @now`,
      outputInto('inserted', '@Claimed', HOT_COLUMNS),
      `FROM ${t.hot} AS h`,
      'INNER JOIN Batch AS k ON k.Id = h.Id',
      'WHERE h.Status = 0;',
      "-- Spend the started rows on their queues' rate windows (rows this transaction U-locked above).",
      'WITH Spent AS (',
      '  SELECT c.Queue, COUNT(*) AS N FROM @Claimed AS c',
      '  WHERE c.Status = 2 AND c.Queue IN (SELECT r.Queue FROM @Runnable AS r WHERE r.RateMax IS NOT NULL)',
      '  GROUP BY c.Queue',
      ')',
      `UPDATE q SET q.RatePrevCount = CASE WHEN ${RATE_ROLLED} THEN q.RateWindowCount ELSE q.RatePrevCount END,`,
      `  q.RatePrevLast = CASE WHEN ${RATE_ROLLED} THEN q.RateWindowLast ELSE q.RatePrevLast END,`,
      `  q.RateWindowCount = CASE WHEN ${RATE_ROLLED} THEN x.N ELSE q.RateWindowCount + x.N END,`,
      `  q.RateWindowStart = CASE WHEN ${RATE_ROLLED} THEN @now ELSE q.RateWindowStart END,`,
      '  q.RateWindowLast = @now',
      'FROM Spent AS x',
      `INNER LOOP JOIN ${t.queues} AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = x.Queue`,
      'WHERE q.RateLimitMax IS NOT NULL;',
      // A table variable declared inside the IF exists for the whole batch ("the scope of a local
      // variable is the batch in which it is declared":
      // https://learn.microsoft.com/en-us/sql/t-sql/language-elements/declare-local-variable-transact-sql);
      // the IF only skips the statements when nothing was started.
      '-- The rows started here count in the start bucket, with their lag, in this transaction.',
      `IF ${start} > 0 AND EXISTS (SELECT 1 FROM @Claimed AS c WHERE c.Status = 2)`,
      'BEGIN',
      bumpBuckets(
        t.buckets,
        `(SELECT c.Queue, CAST(4 AS tinyint) AS Outcome, CAST(-1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs, ${startLagMs('c')} AS LagMs FROM @Claimed AS c WHERE c.Status = 2)`,
        true,
      ),
      'END;',
      'COMMIT;',
      `SELECT ${selectColumns('c', HOT_COLUMNS)}`,
      'FROM @Claimed AS c',
      'ORDER BY c.Priority DESC, c.DueAtUtc, c.Id;',
    ].join('\n'),
  );
}

/**
 * fetchNextBatch, retry only — the rows a claim with this lease already took, in the claim's
 * columns and order. A retry after an ambiguous commit (reply lost after COMMIT) returns them
 * instead of claiming again, which would strand them until `recoverAbandoned` (Fetched) or the
 * zombie sweep (started by the claim, attempt already counted). Only that claim can have set this
 * lease, and its caller never received the rows, so nothing else has moved them on.
 *
 * Locks and isolation: a plain read committed SELECT, no hints. The earlier attempt committed
 * before its reply was lost, so its rows are visible to a statement that starts afterwards; under
 * READ_COMMITTED_SNAPSHOT it reads the last committed versions without blocking, otherwise it takes
 * short S locks. Nothing needs locking for later: the rows are fenced by the lease. No index has
 * `WorkerId` or `LeaseId`; at best the active rows are scanned through the filtered
 * `IX_JobsHot_Active`, which is why it runs on retries only.
 */
export function fetchNextBatchClaimed(
  schema: string,
  workerId: string,
  leaseId: string,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const worker = p.nvarchar(workerId, 255);
  const lease = p.varchar(leaseId, 36);
  return p.statement(
    [
      `SELECT ${selectColumns('h', HOT_COLUMNS)}`,
      `FROM ${t.hot} AS h`,
      `WHERE h.Status IN (1, 2) AND h.WorkerId = ${worker} AND h.LeaseId = ${lease}`,
      'ORDER BY h.Priority DESC, h.DueAtUtc, h.Id;',
    ].join('\n'),
  );
}

// ------------------------------------------------------------------------------------ worker-owned

/** A lease as the builders take it. */
export interface MssqlLease {
  id: string;
  workerId: string;
  leaseId: string;
}

function leaseDoc(p: ParamList, leases: readonly MssqlLease[]): string {
  return p.json(leases.map((l) => ({ id: l.id, workerId: l.workerId, leaseId: l.leaseId })));
}

/**
 * markAsProcessing — Fetched → Processing for owned rows. Fence: Id + WorkerId + LeaseId and
 * `Status = 1`, the last stale-prefetch guard; plain UPDATE (U → X locks on the rows it changes,
 * read committed), no skipping: a row we own is never held by anyone else for long. The started
 * rows count in the start bucket with their lag, in the same transaction (`SET XACT_ABORT ON;
 * BEGIN TRAN; … COMMIT`), `JobsHot` rows first, then `MetricBuckets` in key order.
 */
export function markAsProcessing(schema: string, leases: readonly MssqlLease[]): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const doc = leaseDoc(p, leases);
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      'DECLARE @Started TABLE (Id varchar(36) NOT NULL, Queue varchar(255) NOT NULL, DueAtUtc datetime2(3) NOT NULL);',
      'BEGIN TRAN;',
      'UPDATE h SET h.Status = 2, h.AttemptCount = h.AttemptCount + 1, h.StartedAtUtc = @now, h.HeartbeatUtc = @now, h.LastUpdatedUtc = @now',
      'OUTPUT inserted.Id, inserted.Queue, inserted.DueAtUtc INTO @Started (Id, Queue, DueAtUtc)',
      `FROM ${t.hot} AS h`,
      `INNER JOIN OPENJSON(${doc}) ${LEASE_JSON} AS l ON l.Id = h.Id AND l.WorkerId = h.WorkerId AND l.LeaseId = h.LeaseId`,
      'WHERE h.Status = 1;',
      'IF EXISTS (SELECT 1 FROM @Started)',
      'BEGIN',
      bumpBuckets(
        t.buckets,
        `(SELECT s.Queue, CAST(4 AS tinyint) AS Outcome, CAST(-1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs, ${startLagMs('s')} AS LagMs FROM @Started AS s)`,
        true,
      ),
      'END;',
      'COMMIT;',
      // Rows already Processing under the very same lease are a retry after an ambiguous commit:
      // only this caller can have started them, so they are reported as started too.
      'SELECT s.Id FROM @Started AS s',
      'UNION ALL',
      `SELECT h.Id FROM ${t.hot} AS h`,
      `INNER JOIN OPENJSON(${doc}) ${LEASE_JSON} AS l ON l.Id = h.Id AND l.WorkerId = h.WorkerId AND l.LeaseId = h.LeaseId`,
      'WHERE h.Status = 2 AND h.Id NOT IN (SELECT Id FROM @Started);',
    ].join('\n'),
  );
}

/**
 * keepAlive — one statement per process: `HeartbeatUtc` of its Processing rows and
 * `LastUpdatedUtc` of its Fetched rows, fenced by WorkerId + Id + LeaseId. Returns the touched
 * rows with their cancellation flag.
 */
export function keepAlive(
  schema: string,
  workerId: string,
  leases: readonly MssqlLease[],
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const worker = p.nvarchar(workerId, 255);
  const doc = leaseDoc(p, leases);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      DECLARE_NOW,
      'DECLARE @Touched TABLE (Id varchar(36) NOT NULL, CancelRequestedUtc datetime2(3) NULL);',
      'UPDATE h SET',
      '  h.HeartbeatUtc = CASE WHEN h.Status = 2 THEN @now ELSE h.HeartbeatUtc END,',
      '  h.LastUpdatedUtc = CASE WHEN h.Status = 1 THEN @now ELSE h.LastUpdatedUtc END',
      'OUTPUT inserted.Id, inserted.CancelRequestedUtc INTO @Touched (Id, CancelRequestedUtc)',
      `FROM ${t.hot} AS h`,
      `INNER JOIN OPENJSON(${doc}) ${LEASE_JSON} AS l ON l.Id = h.Id AND l.LeaseId = h.LeaseId`,
      `WHERE h.WorkerId = ${worker} AND h.Status IN (1, 2);`,
      'SELECT x.Id, CASE WHEN x.CancelRequestedUtc IS NULL THEN 0 ELSE 1 END AS CancelRequested FROM @Touched AS x;',
    ].join('\n'),
  );
}

/**
 * release — Fetched → Pending for owned rows (`Status = 1`, fence matches), clearing the lease.
 * With a delay (open circuit): `ScheduledAtUtc = now + delay`, `RetriedTotal + n` and the retried
 * bucket (outcome 3, reason 3) in the same transaction (XACT_ABORT, read committed, U → X locks
 * on the changed rows, then stats rows and bucket rows in key order).
 */
export function release(
  schema: string,
  leases: readonly MssqlLease[],
  delayMs: number | null,
): MssqlStatement {
  return handBack(schema, leases, delayMs, false);
}

/**
 * unstart — Processing → Pending for owned rows whose handler never ran (started ahead, handed
 * back: `Status = 2`, fence matches): the attempt the claim counted is refunded, `StartedAtUtc`
 * and `HeartbeatUtc` cleared; the delay as {@link release}, in the same kind of transaction.
 */
export function unstart(
  schema: string,
  leases: readonly MssqlLease[],
  delayMs: number | null,
): MssqlStatement {
  return handBack(schema, leases, delayMs, true);
}

/** The batch of {@link release} (Fetched rows) and {@link unstart} (started rows that never ran). */
function handBack(
  schema: string,
  leases: readonly MssqlLease[],
  delayMs: number | null,
  started: boolean,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const doc = leaseDoc(p, leases);
  const delay = p.bigint(delayMs);
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      `DECLARE @due datetime2(3) = CASE WHEN ${delay} IS NULL THEN NULL ELSE ${addMs('@now', delay)} END;`,
      'DECLARE @Released TABLE (Id varchar(36) NOT NULL, Queue varchar(255) NOT NULL);',
      'BEGIN TRAN;',
      'UPDATE h SET h.Status = 0, h.WorkerId = NULL, h.LeaseId = NULL, h.LastUpdatedUtc = @now,',
      ...(started
        ? ['  h.AttemptCount = h.AttemptCount - 1, h.StartedAtUtc = NULL, h.HeartbeatUtc = NULL,']
        : []),
      '  h.ScheduledAtUtc = ISNULL(@due, h.ScheduledAtUtc), h.DueAtUtc = ISNULL(@due, h.DueAtUtc)',
      'OUTPUT inserted.Id, inserted.Queue INTO @Released (Id, Queue)',
      `FROM ${t.hot} AS h`,
      `INNER JOIN OPENJSON(${doc}) ${LEASE_JSON} AS l ON l.Id = h.Id AND l.WorkerId = h.WorkerId AND l.LeaseId = h.LeaseId`,
      started ? 'WHERE h.Status = 2;' : 'WHERE h.Status = 1;',
      `IF @due IS NOT NULL`,
      'BEGIN',
      bumpStats(t.stats, '@Released', { RetriedTotal: '1' }),
      bumpBuckets(
        t.buckets,
        '(SELECT r.Queue, CAST(3 AS tinyint) AS Outcome, CAST(3 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs FROM @Released AS r)',
      ),
      'END;',
      'COMMIT;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Released;',
    ].join('\n'),
  );
}

/**
 * reportProgress — `Progress` and `ProgressNote` of an owned Processing row (fence: Id +
 * WorkerId + LeaseId, `Status = 2`); a NULL note clears it (a note describes the progress it came
 * with). Plain UPDATE, read committed. `@@ROWCOUNT` is the result.
 */
export function reportProgress(
  schema: string,
  lease: MssqlLease,
  percent: number,
  note: string | null,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.varchar(lease.id, 36);
  const worker = p.nvarchar(lease.workerId, 255);
  const leaseId = p.varchar(lease.leaseId, 36);
  const value = p.int(percent);
  const text = p.nvarchar(note, 500);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      `UPDATE h SET h.Progress = ${value}, h.ProgressNote = ${text}`,
      `FROM ${t.hot} AS h`,
      `WHERE h.Id = ${id} AND h.WorkerId = ${worker} AND h.LeaseId = ${leaseId} AND h.Status = 2;`,
      'SELECT @@ROWCOUNT AS Affected;',
    ].join('\n'),
  );
}

/**
 * rescheduleForRetry — Processing → Pending after a retryable failure (`Status = 2`, fence
 * matches): lease and heartbeat cleared, `ScheduledAtUtc = now + delay`, `LastError`,
 * `RetriedTotal + 1`, the retried bucket (outcome 3) and the run's `JobAttempts` row (outcome
 * `retried`, from the row's values before the UPDATE: `OUTPUT deleted.…`), one transaction
 * (XACT_ABORT, read committed, U → X row locks).
 */
export function rescheduleForRetry(
  schema: string,
  lease: MssqlLease,
  delayMs: number,
  error: string,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.varchar(lease.id, 36);
  const worker = p.nvarchar(lease.workerId, 255);
  const leaseId = p.varchar(lease.leaseId, 36);
  const delay = p.bigint(delayMs);
  const err = p.nvarchar(error, 'max');
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      `DECLARE @due datetime2(3) = ${addMs('@now', delay)};`,
      'DECLARE @Retried TABLE (Id varchar(36) NOT NULL, Queue varchar(255) NOT NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, LeaseId varchar(36) NULL, StartedAtUtc datetime2(3) NULL);',
      'BEGIN TRAN;',
      'UPDATE h SET h.Status = 0, h.WorkerId = NULL, h.LeaseId = NULL, h.HeartbeatUtc = NULL,',
      `  h.ScheduledAtUtc = @due, h.DueAtUtc = @due, h.LastError = ${err}, h.LastUpdatedUtc = @now`,
      'OUTPUT inserted.Id, inserted.Queue, deleted.AttemptCount, deleted.WorkerId, deleted.LeaseId, deleted.StartedAtUtc INTO @Retried (Id, Queue, AttemptCount, WorkerId, LeaseId, StartedAtUtc)',
      `FROM ${t.hot} AS h`,
      `WHERE h.Id = ${id} AND h.WorkerId = ${worker} AND h.LeaseId = ${leaseId} AND h.Status = 2;`,
      attemptsInsert(
        t,
        `SELECT r.Id, r.AttemptCount, r.WorkerId, r.LeaseId, r.StartedAtUtc, 'retried' AS Outcome, ${err} AS Error FROM @Retried AS r`,
      ),
      bumpStats(t.stats, '@Retried', { RetriedTotal: '1' }),
      bumpBuckets(
        t.buckets,
        '(SELECT r.Queue, CAST(3 AS tinyint) AS Outcome, CAST(-1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs FROM @Retried AS r)',
      ),
      'COMMIT;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Retried;',
    ].join('\n'),
  );
}

// ------------------------------------------------------------------------------------ moves

/** Archive rows from the hot-shaped `@Moved`, joined to `@In` for their durations. */
function archiveInsert(t: Record<MssqlTable, string>): string {
  return (
    insertSelect(t.archive, ARCHIVE_COLUMNS, 'm', {
      LastUpdatedUtc: '@now',
      FinishedAtUtc: '@now',
      DurationMs: 'i.DurationMs',
    }) + '\nFROM @Moved AS m INNER JOIN @In AS i ON i.Id = m.Id;'
  );
}

/** DLQ rows from the hot-shaped `@Moved`. */
function dlqInsert(
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

/** A completed job as the archive move takes it. */
export interface MssqlCompleted extends MssqlLease {
  durationMs: number;
}

/**
 * archiveSucceeded — atomic move Hot → Archive of owned rows (seed "Transaction Integrity"):
 * `SET XACT_ABORT ON; BEGIN TRAN;` delete the exact owned rows first (fence: Id + WorkerId +
 * LeaseId, `Status IN (1, 2)`; read committed, U → X locks, waits rather than skips: a row we own
 * is ours), `OUTPUT deleted.<columns> INTO @Moved`, insert what was deleted, `SucceededTotal +
 * n`, metric bucket, `COMMIT`. Any error rolls all of it back. Returns the moved runs (`Id`,
 * `LeaseId`).
 * `@In` is keyed by (Id, LeaseId): a stale run and its successor may share a batch, and the join
 * on the lease lets only the current one match.
 *
 * In a transactional handler's transaction (`callerTransaction`: the run's own READ COMMITTED
 * transaction, begun by `startTransaction('READ COMMITTED')`, see
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/set-transaction-isolation-level-transact-sql )
 * the batch has no prologue, no `SET XACT_ABORT ON` and no `BEGIN TRAN … COMMIT`: the handler's
 * transaction gives the atomicity, and its COMMIT (or ROLLBACK, when the fence moved nothing)
 * follows. The fenced DELETE's exclusive lock on the job's row is held until then, so a rescue,
 * cancel or heartbeat of that row waits for the commit and then finds it gone.
 */
export function archiveSucceeded(
  schema: string,
  items: readonly MssqlCompleted[],
  options?: MssqlBatchOptions,
): MssqlStatement {
  const own = !options?.callerTransaction;
  const t = tables(schema);
  const p = new ParamList();
  const doc = p.json(
    items.map((i) => ({
      id: i.id,
      workerId: i.workerId,
      leaseId: i.leaseId,
      durationMs: i.durationMs,
    })),
  );
  return p.statement(
    [
      own ? PROLOGUE : 'SET NOCOUNT ON;',
      DECLARE_NOW,
      DECLARE_BUCKET,
      declareTableVar('@Moved', HOT_COLUMNS),
      'DECLARE @In TABLE (Id varchar(36) NOT NULL, WorkerId nvarchar(255) NOT NULL, LeaseId varchar(36) NOT NULL, DurationMs bigint NULL, PRIMARY KEY (Id, LeaseId));',
      'INSERT INTO @In (Id, WorkerId, LeaseId, DurationMs)',
      `SELECT x.Id, MAX(x.WorkerId), x.LeaseId, MAX(x.DurationMs) FROM OPENJSON(${doc}) WITH (Id varchar(36) '$.id', WorkerId nvarchar(255) '$.workerId', LeaseId varchar(36) '$.leaseId', DurationMs bigint '$.durationMs') AS x`,
      'WHERE x.Id IS NOT NULL AND x.WorkerId IS NOT NULL AND x.LeaseId IS NOT NULL GROUP BY x.Id, x.LeaseId;',
      ...(own ? ['BEGIN TRAN;'] : []),
      'DELETE h',
      outputInto('deleted', '@Moved', HOT_COLUMNS),
      `FROM ${t.hot} AS h`,
      'INNER JOIN @In AS i ON i.Id = h.Id AND i.WorkerId = h.WorkerId AND i.LeaseId = h.LeaseId',
      'WHERE h.Status IN (1, 2);',
      archiveInsert(t),
      bumpStats(t.stats, '@Moved', { SucceededTotal: '1' }),
      bumpBuckets(
        t.buckets,
        '(SELECT mv.Queue, CAST(0 AS tinyint) AS Outcome, CAST(-1 AS smallint) AS FailureReason, i.DurationMs FROM @Moved AS mv INNER JOIN @In AS i ON i.Id = mv.Id AND i.LeaseId = mv.LeaseId)',
      ),
      ...(own ? ['COMMIT;'] : []),
      'SELECT mv.Id, mv.LeaseId FROM @Moved AS mv;',
    ].join('\n'),
    options,
  );
}

/** Where a DLQ move comes from: an owned lease, or any hot row by id (admin and rescue paths). */
export type MssqlDlqTarget = MssqlLease | { id: string };

/**
 * moveToDlq — atomic move Hot → DLQ, same transaction pattern as {@link archiveSucceeded}:
 * `SET XACT_ABORT ON; BEGIN TRAN; DELETE … OUTPUT deleted.<columns> INTO @Moved`, insert, counters
 * (`FailedTotal`, or `CancelledTotal` for reason Cancelled), bucket (outcome 1 failed, 2
 * cancelled), `COMMIT`. With a lease the delete is fenced (Id + WorkerId + LeaseId,
 * `Status IN (1, 2)`); without one any hot row with the id moves. The DLQ status is derived from
 * the reason in SQL with literals (4 Failed, 5 Cancelled, 6 Zombie). A row that was Processing
 * (its run had started) gets its run's `JobAttempts` row in the same transaction (outcome by the
 * reason: timeout, cancelled, zombie, else failed); a Pending or Fetched one ran nothing.
 */
export function moveToDlq(
  schema: string,
  target: MssqlDlqTarget,
  reason: FailureReason,
  error: string,
  actor: string | null,
  durationMs: number | null,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.varchar(target.id, 36);
  const fence =
    'leaseId' in target
      ? ` AND h.WorkerId = ${p.nvarchar(target.workerId, 255)} AND h.LeaseId = ${p.varchar(target.leaseId, 36)} AND h.Status IN (1, 2)`
      : '';
  const why = p.int(reason);
  const err = p.nvarchar(error, 'max');
  const who = p.nvarchar(actor, 100);
  const duration = p.bigint(durationMs);
  const status = `CASE ${why} WHEN 1 THEN 5 WHEN 2 THEN 6 ELSE 4 END`;
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      declareTableVar('@Moved', HOT_COLUMNS),
      'BEGIN TRAN;',
      'DELETE h',
      outputInto('deleted', '@Moved', HOT_COLUMNS),
      `FROM ${t.hot} AS h`,
      `WHERE h.Id = ${id}${fence};`,
      dlqInsert(t, status, why, err, who, duration),
      attemptsInsert(
        t,
        `SELECT mv.Id, mv.AttemptCount, mv.WorkerId, mv.LeaseId, mv.StartedAtUtc, ${attemptOutcomeSql(why)} AS Outcome, ${err} AS Error FROM @Moved AS mv WHERE mv.Status = 2`,
      ),
      bumpStats(t.stats, '@Moved', {
        FailedTotal: `CASE WHEN ${why} = 1 THEN 0 ELSE 1 END`,
        CancelledTotal: `CASE WHEN ${why} = 1 THEN 1 ELSE 0 END`,
      }),
      bumpBuckets(
        t.buckets,
        `(SELECT mv.Queue, CAST(CASE WHEN ${why} = 1 THEN 2 ELSE 1 END AS tinyint) AS Outcome, CAST(${why} AS smallint) AS FailureReason, ${duration} AS DurationMs FROM @Moved AS mv)`,
      ),
      'COMMIT;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Moved;',
    ].join('\n'),
  );
}

/**
 * cancel — Pending/Fetched rows (`Status IN (0, 1)`) move Hot → DLQ as Cancelled (status 5,
 * reason 1) with the move pattern (`SET XACT_ABORT ON; BEGIN TRAN; DELETE … OUTPUT deleted.<columns>
 * INTO @Moved`, insert, `CancelledTotal`, bucket outcome 2, `COMMIT`); Processing rows get
 * `CancelRequestedUtc` in the same transaction. Read committed, U → X locks.
 * Result rows: (Id, Kind) with Kind 0 = moved, 1 = cancellation requested.
 */
export function cancel(
  schema: string,
  ids: readonly string[],
  actor: string | null,
  error: string,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const doc = p.json(ids);
  const who = p.nvarchar(actor, 100);
  // The stored text comes from the validating edge, the same on every dialect.
  const errorText = p.nvarchar(error, 'max');
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      declareTableVar('@Moved', HOT_COLUMNS),
      'DECLARE @Requested TABLE (Id varchar(36) NOT NULL);',
      'DECLARE @Ids TABLE (Id varchar(36) NOT NULL PRIMARY KEY);',
      `INSERT INTO @Ids (Id) SELECT DISTINCT j.Id FROM OPENJSON(${doc}) ${ID_JSON} AS j WHERE j.Id IS NOT NULL;`,
      'BEGIN TRAN;',
      'DELETE h',
      outputInto('deleted', '@Moved', HOT_COLUMNS),
      `FROM ${t.hot} AS h`,
      'INNER JOIN @Ids AS i ON i.Id = h.Id',
      'WHERE h.Status IN (0, 1);',
      dlqInsert(t, '5', '1', errorText, who, 'NULL'),
      bumpStats(t.stats, '@Moved', { CancelledTotal: '1' }),
      bumpBuckets(
        t.buckets,
        '(SELECT mv.Queue, CAST(2 AS tinyint) AS Outcome, CAST(1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs FROM @Moved AS mv)',
      ),
      `UPDATE h SET h.CancelRequestedUtc = ISNULL(h.CancelRequestedUtc, @now), h.LastModifiedBy = ISNULL(${who}, h.LastModifiedBy)`,
      'OUTPUT inserted.Id INTO @Requested (Id)',
      `FROM ${t.hot} AS h`,
      'INNER JOIN @Ids AS i ON i.Id = h.Id',
      'WHERE h.Status = 2;',
      'COMMIT;',
      'SELECT mv.Id, 0 AS Kind FROM @Moved AS mv',
      'UNION ALL',
      'SELECT r.Id, 1 AS Kind FROM @Requested AS r;',
    ].join('\n'),
  );
}

/** Resurrect edits as the builder takes them (already validated and encoded). */
export interface MssqlResurrectEdits {
  payload: string | null;
  /** `undefined` keeps the tags; `null` clears them. */
  tags: string | null | undefined;
  priority: number | null;
}

/**
 * resurrect / resurrectMany / resurrectByFilter — atomic move DLQ → Hot as Pending: `SET
 * XACT_ABORT ON; BEGIN TRAN;` DELETE FROM JobsDLQ first (`OUTPUT deleted.<columns> INTO
 * @Moved`), so of two operators resurrecting one job only the one whose delete found the row
 * re-inserts it (the other waits on the row's X lock, then deletes nothing); insert into JobsHot
 * with attempts 0, `EnqueuedAtUtc = now`, no idempotency key, the producer's `TraceContext` kept,
 * optional edits;
 * `ResurrectedTotal + n`; `COMMIT`. If the hot insert fails, the DLQ delete rolls back.
 *
 * The ids come either from a JSON list or, for `resurrectByFilter`, from the oldest matching
 * DLQ rows, read WITHOUT update locks (`READCOMMITTEDLOCK, READPAST, ROWLOCK`: an `UPDLOCK` read
 * would hold a U lock until COMMIT on every row the filter's LIKE rejects); the DELETE then takes
 * those by key with `UPDLOCK, READPAST, ROWLOCK, FORCESEEK`, so rows another operator is moving
 * are skipped, not waited for. DLQ rows never change in place, so the filter needs no re-check.
 *
 * Lock order: `JobsDLQ` rows on the clustered key, in id order (a nested loop from `@Ids`), then
 * `JobsHot`, `Queues` and `StatsSummary` rows of missing queues in name order, then the counters
 * in queue order ({@link bumpStats}).
 */
export function resurrect(
  schema: string,
  source: { ids: readonly string[] } | { filter: DlqFilter; max: number },
  edits: MssqlResurrectEdits | null,
  actor: string | null,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  let idSource: string;
  if ('ids' in source) {
    idSource = `SELECT DISTINCT j.Id FROM OPENJSON(${p.json(source.ids)}) ${ID_JSON} AS j WHERE j.Id IS NOT NULL`;
  } else {
    const max = p.int(source.max);
    const where = historyWhere(p, 'd', 'dlq', source.filter);
    idSource = `SELECT TOP (${max}) d.Id FROM ${t.dlq} AS d WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)${whereClause(where)} ORDER BY d.FailedAtUtc, d.Id`;
  }
  // Picked by a filter: skip what others hold. Listed by id: wait for it (see above).
  const take = 'ids' in source ? '' : ' WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)';
  const overrides: Record<string, string> = {
    IdempotencyKey: 'NULL',
    Status: '0',
    AttemptCount: '0',
    WorkerId: 'NULL',
    LeaseId: 'NULL',
    HeartbeatUtc: 'NULL',
    ScheduledAtUtc: 'NULL',
    DueAtUtc: '@now',
    EnqueuedAtUtc: '@now',
    StartedAtUtc: 'NULL',
    LastUpdatedUtc: '@now',
    LastError: 'ISNULL(m.ErrorDetails, m.LastError)',
    CancelRequestedUtc: 'NULL',
    Progress: 'NULL',
    ProgressNote: 'NULL',
  };
  if (edits?.payload !== null && edits?.payload !== undefined) {
    overrides.Payload = p.nvarchar(edits.payload, 'max');
  }
  if (edits && edits.tags !== undefined) overrides.Tags = p.nvarchar(edits.tags, 'max');
  if (edits?.priority !== null && edits?.priority !== undefined) {
    overrides.Priority = p.int(edits.priority);
  }
  const who = p.nvarchar(actor, 100);
  overrides.LastModifiedBy = `ISNULL(${who}, m.LastModifiedBy)`;
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      declareTableVar('@Moved', DLQ_COLUMNS),
      'DECLARE @Ids TABLE (Id varchar(36) NOT NULL PRIMARY KEY);',
      'BEGIN TRAN;',
      `INSERT INTO @Ids (Id) ${idSource};`,
      'DELETE d',
      outputInto('deleted', '@Moved', DLQ_COLUMNS),
      'FROM @Ids AS i',
      `INNER LOOP JOIN ${t.dlq} AS d${take} ON d.Id = i.Id;`,
      insertSelect(t.hot, HOT_COLUMNS, 'm', overrides) + '\nFROM @Moved AS m;',
      'DECLARE @NewQueues TABLE (Queue varchar(255) NOT NULL PRIMARY KEY);',
      ensureQueueRows(t, '@Moved'),
      bumpStats(t.stats, '@Moved', { ResurrectedTotal: '1' }),
      'COMMIT;',
      'SELECT mv.Id FROM @Moved AS mv;',
    ].join('\n'),
  );
}

// ------------------------------------------------------------------------------------ rescue

/**
 * recoverAbandoned (seed "Recover Abandoned") — Fetched rows untouched for the timeout → Pending.
 * Safe: no user code ran. Read committed, in two steps:
 * - candidates WITHOUT update locks, `WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)` (each shared
 *   lock ends with its read; rows an owner is changing are skipped this round), a seek on
 *   `IX_JobsHot_FetchedRecovery` whose range is the whole predicate, bounded by `TOP (@limit)`;
 * - the UPDATE then takes them by key, `WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)` from
 *   `@Stale` into the clustered `Id`, re-checking the predicate under the lock.
 *
 * Lock order: the clustered key first, then the nonclustered keys the UPDATE changes, the order
 * of the owner's own `markAsProcessing` / `keepAlive` / `release` on the same row. Taking the
 * index key first (an `UPDLOCK` read of the index) and the row second is the reverse, and two
 * such statements on one row deadlock.
 */
export function recoverAbandoned(
  schema: string,
  fetchedTimeoutMs: number,
  limit: number,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const timeout = p.bigint(fetchedTimeoutMs);
  const max = p.int(limit);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      DECLARE_NOW,
      `DECLARE @cutoff datetime2(3) = ${subtractMs('@now', timeout)};`,
      'DECLARE @Stale TABLE (Id varchar(36) NOT NULL PRIMARY KEY);',
      'DECLARE @Recovered TABLE (Id varchar(36) NOT NULL);',
      `INSERT INTO @Stale (Id) SELECT TOP (${max}) f.Id FROM ${t.hot} AS f WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`,
      'WHERE f.Status = 1 AND f.LastUpdatedUtc < @cutoff',
      'ORDER BY f.LastUpdatedUtc;',
      'UPDATE h SET h.Status = 0, h.WorkerId = NULL, h.LeaseId = NULL, h.LastUpdatedUtc = @now',
      'OUTPUT inserted.Id INTO @Recovered (Id)',
      'FROM @Stale AS s',
      `INNER LOOP JOIN ${t.hot} AS h WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON h.Id = s.Id`,
      'WHERE h.Status = 1 AND h.LastUpdatedUtc < @cutoff;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Recovered;',
    ].join('\n'),
  );
}

/** The columns `archiveZombies` returns of each rescued row: all but the payload and `DueAtUtc`. */
const RESCUED_COLUMNS: readonly MssqlColumn[] = HOT_COLUMNS.filter(
  (col) => col.name !== 'Payload' && col.name !== 'DueAtUtc',
);

/** A handler's `retryZombies` choice for {@link archiveZombies}: type null = queue-wide. */
export interface MssqlZombieRetryRule {
  queue: string;
  type: string | null;
  retry: boolean;
}

/**
 * archiveZombies — Processing rows whose heartbeat is older than their queue's
 * `ZombieTimeoutSeconds` (or the default) → DLQ as Zombie (status 6, reason 2), or → Pending
 * with `LastError` (attempt kept) where the queue has `RetryZombies` or the rescuer's handler
 * rules say so. The rules arrive as one JSON parameter read into `@Rules` (one per slot, validated
 * before) and resolve as a claim resolves a handler: the exact `(Queue, Type)` rule, else the
 * queue-wide one (`Type` NULL). Result rows: `Kind` (0 = DLQ, 1 = retried) and the rescued row as
 * it was before the move, every column but the payload (the worker that lost it included): the
 * DELETE's `OUTPUT deleted.<columns> INTO @Moved` and the retry UPDATE's `OUTPUT deleted.<columns>
 * INTO @Retried` capture exactly the rows they changed, under their locks.
 *
 * Locks and isolation (read committed):
 * - Candidates are read WITHOUT update locks, `WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`,
 *   bounded by `TOP (@limit)` and by the index seek itself: `HeartbeatUtc < @cutoff`, the oldest
 *   heartbeat that the shortest timeout of any queue (or the default) can reach, is the range of
 *   the seek on `IX_JobsHot_ProcessingHeartbeat`, so live rows are never read. The per-queue
 *   timeout (a later operator, after the join to `Queues`) rejects the rest without having locked
 *   them: an `UPDLOCK` read there held a U lock until COMMIT on every row it rejected.
 * - Then, in one transaction (`SET XACT_ABORT ON; BEGIN TRAN; … COMMIT`), the candidates are
 *   locked by key, `WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)` from `@Zombies` into the
 *   clustered `Id`, with `Status = 2` and the heartbeat re-checked under the lock (a heartbeat
 *   that arrived in between saves its row); the retry UPDATE and the `DELETE … OUTPUT
 *   deleted.<columns> INTO @Moved` move only locked rows and re-check `Status = 2`.
 *
 * Every rescued run, dead or retried, gets its `JobAttempts` row (outcome `zombie`, the worker
 * that lost it) from the captured rows, in the same transaction.
 *
 * Lock order: `JobsHot` rows on the clustered key first (as every move), then `JobsDLQ` and
 * `JobAttempts`, then `StatsSummary` in queue order (retries and moves summed in one {@link bumpStats}), then
 * `MetricBuckets` in key order (failed and retried rows in one {@link bumpBuckets}).
 */
export function archiveZombies(
  schema: string,
  defaultTimeoutMs: number,
  limit: number,
  rules: readonly MssqlZombieRetryRule[],
  error: string,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const timeout = p.bigint(defaultTimeoutMs);
  const max = p.int(limit);
  const doc = p.json(rules.map((r) => ({ queue: r.queue, type: r.type, retry: r.retry ? 1 : 0 })));
  // The stored text comes from the validating edge, the same on every dialect.
  const message = p.nvarchar(error, 'max');
  const timeoutOf = (q: string) =>
    `ISNULL(CAST(${q}.ZombieTimeoutSeconds AS bigint) * 1000, ${timeout})`;
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      declareTableVar('@Moved', HOT_COLUMNS),
      'DECLARE @Rules TABLE (Queue varchar(255) NOT NULL, Type nvarchar(255) NULL, Retry bit NOT NULL);',
      'DECLARE @Zombies TABLE (Id varchar(36) NOT NULL PRIMARY KEY, Retry bit NOT NULL, TimeoutMs bigint NOT NULL, Locked bit NOT NULL);',
      declareTableVar('@Retried', RESCUED_COLUMNS),
      'INSERT INTO @Rules (Queue, Type, Retry)',
      `SELECT x.Queue, x.Type, x.Retry FROM OPENJSON(${doc}) WITH (Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', Retry bit '$.retry') AS x`,
      'WHERE x.Queue IS NOT NULL AND x.Retry IS NOT NULL;',
      '-- The shortest timeout of any queue bounds the index seek: newer heartbeats are not read.',
      `DECLARE @shortest bigint = (SELECT MIN(x.Ms) FROM (SELECT ${timeout} AS Ms UNION ALL SELECT CAST(q.ZombieTimeoutSeconds AS bigint) * 1000 FROM ${t.queues} AS q WHERE q.ZombieTimeoutSeconds IS NOT NULL) AS x);`,
      `DECLARE @cutoff datetime2(3) = ${subtractMs('@now', '@shortest')};`,
      '-- Candidates without update locks.',
      'INSERT INTO @Zombies (Id, Retry, TimeoutMs, Locked)',
      `SELECT TOP (${max}) z.Id, CASE WHEN q.RetryZombies = 1 OR ISNULL(e.Retry, w.Retry) = 1 THEN 1 ELSE 0 END, ${timeoutOf('q')}, 0`,
      `FROM ${t.hot} AS z WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`,
      `LEFT JOIN ${t.queues} AS q ON q.Name = z.Queue`,
      'LEFT JOIN @Rules AS e ON e.Queue = z.Queue AND e.Type = z.Type',
      'LEFT JOIN @Rules AS w ON w.Queue = z.Queue AND w.Type IS NULL',
      'WHERE z.Status = 2 AND z.HeartbeatUtc < @cutoff',
      `  AND DATEDIFF_BIG(MILLISECOND, z.HeartbeatUtc, @now) > ${timeoutOf('q')}`,
      'ORDER BY z.HeartbeatUtc;',
      'BEGIN TRAN;',
      '-- Lock them by key (clustered Id first), re-checking under the lock.',
      'UPDATE z SET z.Locked = 1',
      'FROM @Zombies AS z',
      `INNER LOOP JOIN ${t.hot} AS h WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON h.Id = z.Id`,
      'WHERE h.Status = 2 AND DATEDIFF_BIG(MILLISECOND, h.HeartbeatUtc, @now) > z.TimeoutMs;',
      'UPDATE h SET h.Status = 0, h.WorkerId = NULL, h.LeaseId = NULL, h.HeartbeatUtc = NULL,',
      `  h.ScheduledAtUtc = NULL, h.DueAtUtc = @now, h.LastError = ${message}, h.LastUpdatedUtc = @now`,
      outputInto('deleted', '@Retried', RESCUED_COLUMNS),
      `FROM ${t.hot} AS h INNER JOIN @Zombies AS z ON z.Id = h.Id AND z.Retry = 1 AND z.Locked = 1`,
      'WHERE h.Status = 2;',
      'DELETE h',
      outputInto('deleted', '@Moved', HOT_COLUMNS),
      `FROM ${t.hot} AS h INNER JOIN @Zombies AS z ON z.Id = h.Id AND z.Retry = 0 AND z.Locked = 1`,
      'WHERE h.Status = 2;',
      dlqInsert(t, '6', '2', message, 'NULL', 'NULL'),
      attemptsInsert(
        t,
        `SELECT r.Id, r.AttemptCount, r.WorkerId, r.LeaseId, r.StartedAtUtc, 'zombie' AS Outcome, ${message} AS Error FROM @Retried AS r UNION ALL SELECT mv.Id, mv.AttemptCount, mv.WorkerId, mv.LeaseId, mv.StartedAtUtc, 'zombie', ${message} FROM @Moved AS mv`,
      ),
      bumpStats(
        t.stats,
        '(SELECT r.Queue, 1 AS Retried, 0 AS Failed FROM @Retried AS r UNION ALL SELECT mv.Queue, 0, 1 FROM @Moved AS mv)',
        { RetriedTotal: 'g.Retried', FailedTotal: 'g.Failed' },
      ),
      bumpBuckets(
        t.buckets,
        '(SELECT mv.Queue, CAST(1 AS tinyint) AS Outcome, CAST(2 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs FROM @Moved AS mv UNION ALL SELECT r.Queue, CAST(3 AS tinyint), CAST(2 AS smallint), CAST(NULL AS bigint) FROM @Retried AS r)',
      ),
      'COMMIT;',
      `SELECT 0 AS Kind, ${selectColumns('mv', RESCUED_COLUMNS)} FROM @Moved AS mv`,
      'UNION ALL',
      `SELECT 1 AS Kind, ${selectColumns('r', RESCUED_COLUMNS)} FROM @Retried AS r;`,
    ].join('\n'),
  );
}

// ------------------------------------------------------------------------------------ queues

/** Queue rows. */
export function getQueues(schema: string): MssqlStatement {
  const t = tables(schema);
  return new ParamList().statement(
    `SELECT ${selectColumns('q', QUEUE_COLUMNS)} FROM ${t.queues} AS q ORDER BY q.Name;`,
  );
}

/**
 * updateQueue — upsert safe under concurrency: the row is created if missing under
 * `UPDLOCK, HOLDLOCK` (concurrent creators serialise on the key range instead of one failing
 * with a duplicate key), then each given field is set (a flag parameter per field keeps the text
 * fixed). One transaction, XACT_ABORT.
 */
export function updateQueue(schema: string, name: string, patch: QueuePatch): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const q = p.varchar(name, 255);
  const field = (col: string, defined: boolean, value: string) =>
    `${col} = CASE WHEN ${p.bit(defined)} = 1 THEN ${value} ELSE ${col} END`;
  const sets = [
    field('IsPaused', patch.isPaused !== undefined, p.bit(patch.isPaused ?? null)),
    field('IsActive', patch.isActive !== undefined, p.bit(patch.isActive ?? null)),
    field('MaxWorkers', patch.maxWorkers !== undefined, p.int(patch.maxWorkers ?? null)),
    field(
      'ZombieTimeoutSeconds',
      patch.zombieTimeoutSeconds !== undefined,
      p.int(patch.zombieTimeoutSeconds ?? null),
    ),
    field(
      'ExecutionTimeoutMs',
      patch.executionTimeoutMs !== undefined,
      p.int(patch.executionTimeoutMs ?? null),
    ),
    field('RetryZombies', patch.retryZombies !== undefined, p.bit(patch.retryZombies ?? null)),
    field('RateLimitMax', patch.rateLimit !== undefined, p.int(patch.rateLimit?.max ?? null)),
    field('RateLimitPerMs', patch.rateLimit !== undefined, p.int(patch.rateLimit?.perMs ?? null)),
    // Clearing the limit clears its window state; changing it keeps the starts already counted.
    ...[
      'RateWindowStart',
      'RateWindowLast',
      'RateWindowCount',
      'RatePrevLast',
      'RatePrevCount',
    ].map((col) => field(col, patch.rateLimit === null, 'NULL')),
  ];
  return p.statement(
    [
      PROLOGUE,
      'BEGIN TRAN;',
      `INSERT INTO ${t.queues} (Name) SELECT ${q}`,
      `WHERE NOT EXISTS (SELECT 1 FROM ${t.queues} AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Name = ${q});`,
      `INSERT INTO ${t.stats} (Queue) SELECT ${q}`,
      `WHERE NOT EXISTS (SELECT 1 FROM ${t.stats} AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = ${q});`,
      `UPDATE ${t.queues} SET ${sets.join(',\n  ')},`,
      '  LastUpdatedUtc = SYSUTCDATETIME()',
      `WHERE Name = ${q};`,
      'COMMIT;',
      `SELECT ${selectColumns('q', QUEUE_COLUMNS)} FROM ${t.queues} AS q WHERE q.Name = ${q};`,
    ].join('\n'),
  );
}

// ------------------------------------------------------------------------------------ purge / retention

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
const READPAST_UNDER_RCSI = 'READCOMMITTEDLOCK, READPAST, ROWLOCK';

/**
 * purgeDlq — deletes DLQ rows by id (counters untouched) and their `JobAttempts` rows, in one
 * transaction (XACT_ABORT); the count of DLQ rows deleted is the result.
 */
export function purgeDlq(schema: string, ids: readonly string[]): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const doc = p.json(ids);
  return p.statement(
    [
      PROLOGUE,
      'DECLARE @Gone TABLE (Id varchar(36) NOT NULL);',
      'BEGIN TRAN;',
      'DELETE d OUTPUT deleted.Id INTO @Gone (Id)',
      `FROM ${t.dlq} AS d WHERE d.Id IN (SELECT j.Id FROM OPENJSON(${doc}) ${ID_JSON} AS j);`,
      attemptsDelete(t),
      'COMMIT;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Gone;',
    ].join('\n'),
  );
}

/**
 * purgeDlqByFilter (one batch) — deletes at most `batch` matching DLQ rows, oldest first, and
 * their `JobAttempts` rows, its own short transaction (XACT_ABORT); rows other sessions hold are
 * skipped (`READPAST, ROWLOCK`). See {@link READPAST_UNDER_RCSI} for `READCOMMITTEDLOCK`.
 */
export function purgeDlqByFilter(schema: string, filter: DlqFilter, batch: number): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const max = p.int(batch);
  const where = historyWhere(p, 'd', 'dlq', filter);
  return p.statement(
    [
      PROLOGUE,
      'DECLARE @Gone TABLE (Id varchar(36) NOT NULL);',
      'BEGIN TRAN;',
      'WITH Doomed AS (',
      `  SELECT TOP (${max}) d.Id FROM ${t.dlq} AS d WITH (${READPAST_UNDER_RCSI})${whereClause(where)}`,
      '  ORDER BY d.FailedAtUtc, d.Id',
      ')',
      'DELETE FROM Doomed OUTPUT deleted.Id INTO @Gone (Id);',
      attemptsDelete(t),
      'COMMIT;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Gone;',
    ].join('\n'),
  );
}

/** Which retention delete: the table and its age column. */
type RetentionTarget = 'archive' | 'dlq' | 'buckets' | 'workers' | 'audit';

/**
 * applyRetention (one batch of one table) — deletes at most `batch` rows older than now − `ageMs`,
 * oldest first, skipping rows others hold (`READPAST, ROWLOCK`; see {@link READPAST_UNDER_RCSI});
 * counters untouched. An archive or DLQ batch deletes its jobs' `JobAttempts` rows too, in one
 * transaction (XACT_ABORT) with it.
 */
function applyRetentionBatch(
  schema: string,
  target: RetentionTarget,
  ageMs: number,
  batch: number,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const max = p.int(batch);
  const age = p.bigint(ageMs);
  const column = {
    archive: 'FinishedAtUtc',
    dlq: 'FailedAtUtc',
    buckets: 'BucketUtc',
    workers: 'LastSeenUtc',
    audit: 'AtUtc',
  }[target];
  if (target === 'archive' || target === 'dlq') {
    // A job's last row takes its attempt rows with it, in the batch's one transaction.
    return p.statement(
      [
        PROLOGUE,
        DECLARE_NOW,
        `DECLARE @cutoff datetime2(3) = ${subtractMs('@now', age)};`,
        'DECLARE @Gone TABLE (Id varchar(36) NOT NULL);',
        'BEGIN TRAN;',
        'WITH Expired AS (',
        `  SELECT TOP (${max}) x.Id, x.${column} FROM ${t[target]} AS x WITH (${READPAST_UNDER_RCSI})`,
        `  WHERE x.${column} < @cutoff`,
        `  ORDER BY x.${column}`,
        ')',
        'DELETE FROM Expired OUTPUT deleted.Id INTO @Gone (Id);',
        attemptsDelete(t),
        'COMMIT;',
        'SELECT COUNT_BIG(*) AS Affected FROM @Gone;',
      ].join('\n'),
    );
  }
  return p.statement(
    [
      'SET NOCOUNT ON;',
      DECLARE_NOW,
      `DECLARE @cutoff datetime2(3) = ${subtractMs('@now', age)};`,
      'WITH Expired AS (',
      `  SELECT TOP (${max}) x.${column} FROM ${t[target]} AS x WITH (${READPAST_UNDER_RCSI})`,
      `  WHERE x.${column} < @cutoff`,
      `  ORDER BY x.${column}`,
      ')',
      'DELETE FROM Expired;',
      'SELECT @@ROWCOUNT AS Affected;',
    ].join('\n'),
  );
}

/** applyRetention, archive step: one batch of archive rows finished before now − `ageMs`. */
export function applyRetentionArchive(
  schema: string,
  ageMs: number,
  batch: number,
): MssqlStatement {
  return applyRetentionBatch(schema, 'archive', ageMs, batch);
}

/** applyRetention, DLQ step: one batch of DLQ rows failed before now − `ageMs`. */
export function applyRetentionDlq(schema: string, ageMs: number, batch: number): MssqlStatement {
  return applyRetentionBatch(schema, 'dlq', ageMs, batch);
}

/** applyRetention, metrics step: one batch of metric buckets older than now − `ageMs`. */
export function applyRetentionBuckets(
  schema: string,
  ageMs: number,
  batch: number,
): MssqlStatement {
  return applyRetentionBatch(schema, 'buckets', ageMs, batch);
}

/**
 * applyRetention, workers step: one batch of Workers rows last seen before now − `ageMs` (stopped
 * or lost workers: a live one reports every heartbeat). A worker that reports again after its row
 * was removed writes it anew.
 */
export function applyRetentionWorkers(
  schema: string,
  ageMs: number,
  batch: number,
): MssqlStatement {
  return applyRetentionBatch(schema, 'workers', ageMs, batch);
}

/** applyRetention, audit step: one batch of audit log entries recorded before now − `ageMs`. */
export function applyRetentionAudit(schema: string, ageMs: number, batch: number): MssqlStatement {
  return applyRetentionBatch(schema, 'audit', ageMs, batch);
}

// ------------------------------------------------------------------------------------ audit log

/**
 * recordAudit — the audit row of an action, run inside the transaction of the change it records
 * (ChokaQ's READ COMMITTED transaction; `MssqlConnection.transaction`). The first batch of an
 * action inserts the row; a later batch of the same action (same id) adds its rows and, when it
 * brings details, replaces them (a retention run's counts so far). Only the action's own
 * transactions touch its row, one after the other, so the UPDATE-then-INSERT needs no range lock.
 */
export function recordAudit(
  schema: string,
  audit: CheckedAudit,
  rows: number,
  details: string | null,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.varchar(audit.id, 36);
  const added = p.bigint(rows);
  const json = p.nvarchar(details, 'max');
  return p.statement(
    [
      PROLOGUE,
      `UPDATE ${t.audit} SET RowsAffected = RowsAffected + ${added}, Details = ISNULL(${json}, Details)`,
      `WHERE Id = ${id};`,
      'IF @@ROWCOUNT = 0',
      `  INSERT INTO ${t.audit} (Id, AtUtc, Actor, Action, Target, RowsAffected, Details)`,
      `  VALUES (${id}, SYSUTCDATETIME(), ${p.nvarchar(audit.actor, 100)}, ${p.varchar(audit.action, 50)}, ${p.nvarchar(audit.target, 4000)}, ${added}, ${json});`,
    ].join('\n'),
  );
}

/**
 * getAuditLog — newest first from the cursor, filtered by actor, action and time: `TOP (n)` with
 * `ORDER BY AtUtc DESC, Id DESC`, a backward seek of `IX_AuditLog_At (AtUtc, Id)`. Read committed.
 * With a target: a seek of `IX_AuditLog_Target (TargetKey, AtUtc, Id)` (schema version 8) on the
 * target's first 255 characters, the expression of the computed column, read backwards from the
 * cursor; the whole `Target` is compared too, for targets longer than the key.
 */
export function getAuditLog(schema: string, query: CheckedAuditQuery): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const top = p.int(query.limit + 1);
  const where: string[] = [];
  if (query.after !== null) {
    const at = p.instant(new Date(query.after.atMs));
    const id = p.varchar(query.after.id, 36);
    where.push(`a.AtUtc <= ${at} AND (a.AtUtc < ${at} OR (a.AtUtc = ${at} AND a.Id < ${id}))`);
  }
  if (query.actor !== null) where.push(`a.Actor = ${p.nvarchar(query.actor, 100)}`);
  if (query.action !== null) where.push(`a.Action = ${p.varchar(query.action, 50)}`);
  if (query.target !== null) {
    const target = p.nvarchar(query.target, 4000);
    const key = AUDIT_TARGET_KEY_LENGTH;
    where.push(
      `a.TargetKey = CAST(LEFT(${target}, ${key}) AS nvarchar(${key})) AND a.Target = ${target}`,
    );
  }
  if (query.from !== null) where.push(`a.AtUtc >= ${p.instant(query.from)}`);
  if (query.to !== null) where.push(`a.AtUtc < ${p.instant(query.to)}`);
  return p.statement(
    [
      `SELECT TOP (${top}) ${selectColumns('a', AUDIT_COLUMNS)}`,
      `FROM ${t.audit} AS a${whereClause(where)}`,
      'ORDER BY a.AtUtc DESC, a.Id DESC;',
    ].join('\n'),
  );
}

/**
 * confirmationSecret — stores the candidate unless a secret exists, then reads the stored one. The
 * existence check takes `UPDLOCK, HOLDLOCK` (a key-range lock even when the row is missing,
 * https://learn.microsoft.com/en-us/sql/t-sql/queries/hints-transact-sql-table), so two first
 * calls at once insert one secret and both read it.
 */
export function confirmationSecret(schema: string, candidate: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const value = p.nvarchar(candidate, 'max');
  return p.statement(
    [
      PROLOGUE,
      'BEGIN TRAN;',
      `IF NOT EXISTS (SELECT 1 FROM ${t.settings} WITH (UPDLOCK, HOLDLOCK) WHERE Name = 'confirmation-secret')`,
      `  INSERT INTO ${t.settings} (Name, Value) VALUES ('confirmation-secret', ${value});`,
      'COMMIT;',
      `SELECT Value FROM ${t.settings} WHERE Name = 'confirmation-secret';`,
    ].join('\n'),
  );
}

// ------------------------------------------------------------------------------------ workers

/**
 * upsertWorker — one worker's report into its row of `Workers` (its heartbeat), every time from
 * `SYSUTCDATETIME()`. With `starting`, `StartedAtUtc` is set and `StoppedAtUtc` cleared (a new run
 * of the process); a later report keeps both.
 *
 * Not `MERGE`: Microsoft advises basic INSERT / UPDATE statements where MERGE is not needed
 * ("Performance Tip" of https://learn.microsoft.com/en-us/sql/t-sql/statements/merge-transact-sql),
 * and a MERGE without a lock hint can still race two first inserts into a duplicate key. Instead,
 * in one transaction (`XACT_ABORT`), `UPDATE … WITH (UPDLOCK, HOLDLOCK)`, then `INSERT` when it
 * changed no row: HOLDLOCK is SERIALIZABLE for that table
 * (https://learn.microsoft.com/en-us/sql/t-sql/queries/hints-transact-sql-table), so the update
 * holds a key-range lock on the worker id even when the row is missing, and a concurrent upsert of
 * the same id waits for the COMMIT instead of inserting it too (the pattern of
 * `upsertRecurringJob`). Only the worker's own key is ever locked, and one process reports for one
 * worker id, so there is nothing to wait for in practice.
 */
export function upsertWorker(schema: string, w: CheckedWorkerHeartbeat): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.nvarchar(w.workerId, 255);
  const host = p.nvarchar(w.host, 255);
  const pid = p.int(w.pid);
  const version = p.nvarchar(w.libraryVersion, 100);
  const concurrency = p.int(w.concurrency);
  const running = p.int(w.running);
  const handled = p.nvarchar(w.handled, 'max');
  const circuits = p.nvarchar(w.circuits, 'max');
  const draining = p.bit(w.draining);
  const starting = p.bit(w.starting);
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      'BEGIN TRAN;',
      'UPDATE w SET',
      `  w.Host = ${host}, w.Pid = ${pid}, w.LibraryVersion = ${version},`,
      `  w.StartedAtUtc = CASE WHEN ${starting} = 1 THEN @now ELSE w.StartedAtUtc END,`,
      `  w.LastSeenUtc = @now, w.Concurrency = ${concurrency}, w.Running = ${running},`,
      `  w.Handled = ${handled}, w.Circuits = ${circuits}, w.IsDraining = ${draining},`,
      `  w.StoppedAtUtc = CASE WHEN ${starting} = 1 THEN NULL ELSE w.StoppedAtUtc END`,
      `FROM ${t.workers} AS w WITH (UPDLOCK, HOLDLOCK)`,
      `WHERE w.WorkerId = ${id};`,
      'IF @@ROWCOUNT = 0',
      `  INSERT INTO ${t.workers} (WorkerId, Host, Pid, LibraryVersion, StartedAtUtc, LastSeenUtc, Concurrency, Running, Handled, Circuits, IsDraining, StoppedAtUtc)`,
      `  VALUES (${id}, ${host}, ${pid}, ${version}, @now, @now, ${concurrency}, ${running}, ${handled}, ${circuits}, ${draining}, NULL);`,
      'COMMIT;',
    ].join('\n'),
  );
}

/**
 * markWorkerStopped — a clean stop: stop and last-seen times now, nothing running; plain UPDATE of
 * the worker's own row, read committed. `@@ROWCOUNT` is the result.
 */
export function markWorkerStopped(schema: string, workerId: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.nvarchar(workerId, 255);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      DECLARE_NOW,
      'UPDATE w SET w.StoppedAtUtc = @now, w.LastSeenUtc = @now, w.Running = 0',
      `FROM ${t.workers} AS w`,
      `WHERE w.WorkerId = ${id} AND w.StoppedAtUtc IS NULL;`,
      'SELECT @@ROWCOUNT AS Affected;',
    ].join('\n'),
  );
}

/**
 * listWorkers — the Workers table, most recently seen first, at most `limit` rows, each with
 * `IsLost`: not stopped and not seen for more than `lostAfterMs` by `SYSUTCDATETIME()`. A read
 * committed read (no NOLOCK: a few rows, and `lost` must not be read from a half-written report).
 */
export function listWorkers(schema: string, lostAfterMs: number, limit: number): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const lostAfter = p.bigint(lostAfterMs);
  const top = p.int(limit);
  return p.statement(
    [
      DECLARE_NOW,
      `DECLARE @cutoff datetime2(3) = ${subtractMs('@now', lostAfter)};`,
      `SELECT TOP (${top}) ${selectColumns('w', WORKER_COLUMNS)},`,
      '  CASE WHEN w.StoppedAtUtc IS NULL AND w.LastSeenUtc < @cutoff THEN 1 ELSE 0 END AS IsLost',
      `FROM ${t.workers} AS w`,
      'ORDER BY w.LastSeenUtc DESC, w.WorkerId;',
    ].join('\n'),
  );
}

// ------------------------------------------------------------------------------------ reads

function whereClause(conditions: readonly string[]): string {
  return conditions.length === 0 ? '' : ` WHERE ${conditions.join(' AND ')}`;
}

/** Error text columns a search looks in: the DLQ error and the last retry error. */
const ERROR_COLUMNS = {
  hot: ['LastError'],
  archive: ['LastError'],
  dlq: ['ErrorDetails', 'LastError'],
} as const;

/** The tag filter: one tag, exactly, inside the stored `,a,b,` string. */
function tagPredicate(p: ParamList, a: string, tag: string): string {
  return `${a}.Tags LIKE ${p.nvarchar(`%,${escapeLike(tag)},%`, 4000)} ESCAPE '\\'`;
}

/**
 * The search filter: a substring of the id, the type, the payload or the error text, `%`, `_`,
 * `[` matched literally; LIKE follows the column collation (case-insensitive under the default
 * `_CI_` ones).
 */
function searchPredicate(
  p: ParamList,
  a: string,
  pillar: 'hot' | 'archive' | 'dlq',
  search: string,
): string {
  const term = p.nvarchar(`%${escapeLike(search)}%`, 4000);
  const columns = ['Id', 'Type', 'Payload', ...ERROR_COLUMNS[pillar]];
  return `(${columns.map((col) => `${a}.${col} LIKE ${term} ESCAPE '\\'`).join(' OR ')})`;
}

/**
 * Filter conditions of bulk DLQ actions, their preview, the error families and `countExactly`
 * (any pillar, with the filter of that pillar's list, without a cursor); every value a parameter.
 */
function historyWhere(
  p: ParamList,
  a: string,
  pillar: 'hot' | 'archive' | 'dlq',
  filter: ActiveFilter & HistoryFilter & DlqFilter,
): string[] {
  const out: string[] = [];
  if (filter.queue !== undefined) out.push(`${a}.Queue = ${p.varchar(filter.queue, 255)}`);
  if (filter.type !== undefined) out.push(`${a}.Type = ${p.nvarchar(filter.type, 255)}`);
  if (pillar === 'hot' && filter.status !== undefined) {
    // A literal, not a parameter: validated to 0, 1 or 2, and the filtered indexes need it.
    out.push(`${a}.Status = ${Number(filter.status)}`);
  }
  if (filter.tag !== undefined) out.push(tagPredicate(p, a, filter.tag));
  if (filter.search !== undefined) out.push(searchPredicate(p, a, pillar, filter.search));
  // The time range is on each list's sort key: enqueued (hot), finished (archive), failed (DLQ).
  const col = { hot: 'EnqueuedAtUtc', archive: 'FinishedAtUtc', dlq: 'FailedAtUtc' }[pillar];
  if (filter.from !== undefined) out.push(`${a}.${col} >= ${p.instant(filter.from)}`);
  if (filter.to !== undefined) out.push(`${a}.${col} < ${p.instant(filter.to)}`);
  if (pillar === 'dlq') {
    if (filter.reason !== undefined) out.push(`${a}.FailureReason = ${p.int(filter.reason)}`);
    if (filter.ids !== undefined) {
      out.push(`${a}.Id IN (SELECT j.Id FROM OPENJSON(${p.json(filter.ids)}) ${ID_JSON} AS j)`);
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------ lists

const PILLAR_TABLE = { hot: 'hot', archive: 'archive', dlq: 'dlq' } as const;

/** Sort key of each list; `Id` breaks ties. */
const LIST_KEY = {
  hot: 'EnqueuedAtUtc',
  archive: 'FinishedAtUtc',
  dlq: 'FailedAtUtc',
} as const;

/** The columns a list item reads of each pillar (dates as ISO text): no payload, no error text. */
const LIST_COLUMNS: Record<'hot' | 'archive' | 'dlq', readonly string[]> = {
  hot: [
    'Id',
    'Queue',
    'Type',
    'Status',
    'AttemptCount',
    'Priority',
    'Tags',
    'CreatedAtUtc',
    'EnqueuedAtUtc',
    'ScheduledAtUtc',
    'StartedAtUtc',
    'WorkerId',
    'Progress',
  ],
  archive: [
    'Id',
    'Queue',
    'Type',
    'AttemptCount',
    'Priority',
    'Tags',
    'CreatedAtUtc',
    'EnqueuedAtUtc',
    'ScheduledAtUtc',
    'StartedAtUtc',
    'FinishedAtUtc',
    'DurationMs',
    'WorkerId',
    'Progress',
  ],
  dlq: [
    'Id',
    'Queue',
    'Type',
    'Status',
    'FailureReason',
    'AttemptCount',
    'Priority',
    'Tags',
    'CreatedAtUtc',
    'EnqueuedAtUtc',
    'ScheduledAtUtc',
    'StartedAtUtc',
    'FailedAtUtc',
    'DurationMs',
    'WorkerId',
    'Progress',
  ],
};

/**
 * The select list of a list page. `PayloadBytes` is `DATALENGTH(Payload)`, the bytes of the
 * stored `nvarchar` (UTF-16) value (https://learn.microsoft.com/en-us/sql/t-sql/functions/datalength-transact-sql):
 * for a value stored off-row, SQL Server reads only the root of its LOB tree, which holds the
 * length, not the value ("DATALENGTH optimizations for LOB data types",
 * https://learn.microsoft.com/en-us/archive/blogs/sqltips/datalength-optimizations-for-lob-data-types).
 * `ErrorPrefix` is `LEFT(…, 200)` of the error.
 */
function listSelect(pillar: 'hot' | 'archive' | 'dlq', a: string): string {
  const byName = new Map(
    [...HOT_COLUMNS, ...ARCHIVE_COLUMNS, ...DLQ_COLUMNS].map((col) => [col.name, col]),
  );
  const error = pillar === 'dlq' ? `ISNULL(${a}.ErrorDetails, ${a}.LastError)` : `${a}.LastError`;
  return [
    ...LIST_COLUMNS[pillar].map((name) =>
      isDate(byName.get(name)!) ? `${isoText(`${a}.${name}`)} AS ${name}` : `${a}.${name}`,
    ),
    `CAST(LEFT(${error}, ${ERROR_PREFIX_CHARS}) AS nvarchar(${ERROR_PREFIX_CHARS})) AS ErrorPrefix`,
    `DATALENGTH(${a}.Payload) AS PayloadBytes`,
  ].join(', ');
}

/** A list request as the builders take it (checked by the validating edge). */
export type MssqlListRequest = ListRequest<ActiveFilter & HistoryFilter & DlqFilter>;

/**
 * The conditions of a list page. `indexed`: queue, type, status, failure reason, ids, the time
 * range on the sort key and the cursor, all on the keys of the list's indexes (the status and type
 * of hot rows excepted: the hot table is small by design); `unindexed`: the tag and the search.
 *
 * SQL Server has no row-value comparison, so the cursor is written out:
 * `k <= @k AND (k < @k OR (k = @k AND Id < @id))` (newest first; `>=`, `>`, `>` oldest first).
 * The leading `k <= @k` is implied by the rest and is there for the optimizer: it is a plain range
 * on the index's key, the seek predicate, and the disjunction that follows only rejects the rows of
 * the cursor's own key up to its id (the residual predicate). `@k` and `@id` are each one
 * parameter, referenced three and once.
 */
function listWhere(
  p: ParamList,
  a: string,
  request: MssqlListRequest,
): { indexed: string[]; unindexed: string[] } {
  const { pillar, filter } = request;
  const key = `${a}.${LIST_KEY[pillar]}`;
  const indexed: string[] = [];
  if (filter.queue !== undefined) indexed.push(`${a}.Queue = ${p.varchar(filter.queue, 255)}`);
  if (filter.type !== undefined) indexed.push(`${a}.Type = ${p.nvarchar(filter.type, 255)}`);
  if (pillar === 'hot' && filter.status !== undefined) {
    indexed.push(`${a}.Status = ${Number(filter.status)}`);
  }
  if (pillar === 'dlq') {
    if (filter.reason !== undefined) indexed.push(`${a}.FailureReason = ${p.int(filter.reason)}`);
    if (filter.ids !== undefined) {
      indexed.push(`${a}.Id IN (SELECT j.Id FROM OPENJSON(${p.json(filter.ids)}) ${ID_JSON} AS j)`);
    }
  }
  if (filter.from !== undefined) indexed.push(`${key} >= ${p.instant(filter.from)}`);
  if (filter.to !== undefined) indexed.push(`${key} < ${p.instant(filter.to)}`);
  if (request.after !== null) {
    const at = p.instant(new Date(request.after.atMs));
    const id = p.varchar(request.after.id, 36);
    const [within, past] = request.order === 'newest' ? ['<=', '<'] : ['>=', '>'];
    indexed.push(
      `${key} ${within} ${at} AND (${key} ${past} ${at} OR (${key} = ${at} AND ${a}.Id ${past} ${id}))`,
    );
  }
  const unindexed: string[] = [];
  if (filter.tag !== undefined) unindexed.push(tagPredicate(p, a, filter.tag));
  if (filter.search !== undefined && filter.search !== '') {
    unindexed.push(searchPredicate(p, a, pillar, filter.search));
  }
  return { indexed, unindexed };
}

/**
 * listActive, listArchive, listDlq — one keyset page (see `shared/page.ts` for the two shapes).
 * Read committed without hints (a list is not telemetry), no update locks. `TOP (n)` with an
 * `ORDER BY` on the index's keys returns the first n rows in that order
 * (https://learn.microsoft.com/en-us/sql/t-sql/queries/top-transact-sql#best-practices): a seek
 * from the cursor that stops after `limit + 1` rows. The bounded scan takes the first
 * `scanBound + 1` rows in that order, ranks them (`ROW_NUMBER`), counts matches as it goes (a
 * running `SUM … ROWS UNBOUNDED PRECEDING`,
 * https://learn.microsoft.com/en-us/sql/t-sql/queries/select-over-clause-transact-sql), and keeps
 * the first `limit + 1` matches and the rows ranked at the bound. `SortKey` (the key as
 * `datetime2`) orders the ranking; the item's own date columns are ISO text.
 */
export function listJobs(schema: string, request: MssqlListRequest): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const { pillar } = request;
  const dir = request.order === 'newest' ? 'DESC' : 'ASC';
  const key = LIST_KEY[pillar];
  const top = p.int(request.limit + 1);
  const where = listWhere(p, 'j', request);
  const from = `FROM ${t[PILLAR_TABLE[pillar]]} AS j${whereClause(where.indexed)}`;
  const order = `ORDER BY j.${key} ${dir}, j.Id ${dir}`;
  if (request.scanBound === null || where.unindexed.length === 0) {
    return p.statement(
      [`SELECT TOP (${top}) ${listSelect(pillar, 'j')}`, from, `${order};`].join('\n'),
    );
  }
  const bound = request.scanBound;
  const inOrder = `ORDER BY w.SortKey ${dir}, w.Id ${dir}`;
  return p.statement(
    [
      'SELECT r.* FROM (',
      `  SELECT w.*, ROW_NUMBER() OVER (${inOrder}) AS Rn,`,
      `    SUM(w.Hit) OVER (${inOrder} ROWS UNBOUNDED PRECEDING) AS HitRank`,
      '  FROM (',
      `    SELECT TOP (${bound + 1}) ${listSelect(pillar, 'j')}, j.${key} AS SortKey,`,
      `      CASE WHEN ${where.unindexed.join(' AND ')} THEN 1 ELSE 0 END AS Hit`,
      `    ${from}`,
      `    ${order}`,
      '  ) AS w',
      ') AS r',
      `WHERE (r.Hit = 1 AND r.HitRank <= ${top} AND r.Rn <= ${bound}) OR r.Rn >= ${bound}`,
      'ORDER BY r.Rn;',
    ].join('\n'),
  );
}

/** previewDlqFilter — the rows a bulk DLQ filter matches (read committed). */
export function previewDlqFilterCount(schema: string, filter: DlqFilter): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const where = historyWhere(p, 'd', 'dlq', filter);
  return p.statement(`SELECT COUNT_BIG(*) AS Total FROM ${t.dlq} AS d${whereClause(where)};`);
}

/** Every column any pillar has, for the one-row `getJob` union. */
const VIEW_COLUMNS: readonly MssqlColumn[] = (() => {
  const seen = new Map<string, MssqlColumn>();
  for (const col of [...HOT_COLUMNS, ...ARCHIVE_COLUMNS, ...DLQ_COLUMNS]) {
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
export function getJob(schema: string, id: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const key = p.varchar(id, 36);
  return p.statement(
    [
      'SELECT TOP (1) u.* FROM (',
      `  SELECT 1 AS PillarRank, 'hot' AS Pillar, ${viewSelect('h', HOT_COLUMNS)} FROM ${t.hot} AS h WHERE h.Id = ${key}`,
      '  UNION ALL',
      `  SELECT 2, 'dlq', ${viewSelect('d', DLQ_COLUMNS)} FROM ${t.dlq} AS d WHERE d.Id = ${key}`,
      '  UNION ALL',
      `  SELECT 3, 'archive', ${viewSelect('a', ARCHIVE_COLUMNS)} FROM ${t.archive} AS a WHERE a.Id = ${key}`,
      ') AS u ORDER BY u.PillarRank;',
    ].join('\n'),
  );
}

/**
 * getJob with attempts — the job's `JobAttempts` rows, oldest first: one range of the clustered
 * key `(JobId, Seq)`, read in its order. Read committed.
 */
export function getJobAttempts(schema: string, id: string): MssqlStatement {
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
 * per-status counts stay real counts (through the filtered indexes).
 */
export function getSummary(schema: string): MssqlStatement {
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
      `  ${['SucceededTotal', 'FailedTotal', 'CancelledTotal', 'RetriedTotal', 'ResurrectedTotal'].map(sum).join(',\n  ')},`,
      `  ${count(t.hot, ' WHERE c.Status = 0', 'Pending')},`,
      `  ${count(t.hot, ' WHERE c.Status = 1', 'Fetched')},`,
      `  ${count(t.hot, ' WHERE c.Status = 2', 'Processing')},`,
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
 * many as the workers run, through `IX_JobsHot_Active`; one `GROUP BY` over every hot row with a
 * `CASE` per status read the clustered index, payloads and all.
 */
export function getQueueStats(schema: string): MssqlStatement {
  const t = tables(schema);
  return new ParamList().statement(
    [
      'SELECT q.Name AS Queue, q.IsPaused, q.IsActive, q.MaxWorkers,',
      '  ISNULL(p.Pending, 0) AS Pending, ISNULL(a.Fetched, 0) AS Fetched, ISNULL(a.Processing, 0) AS Processing,',
      '  ISNULL(s.SucceededTotal, 0) AS SucceededTotal, ISNULL(s.FailedTotal, 0) AS FailedTotal,',
      '  ISNULL(s.CancelledTotal, 0) AS CancelledTotal, ISNULL(s.RetriedTotal, 0) AS RetriedTotal,',
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
      `LEFT JOIN ${t.stats} AS s WITH (NOLOCK) ON s.Queue = q.Name`,
      'ORDER BY q.Name;',
    ].join('\n'),
  );
}

/**
 * getQueueHealth — telemetry, `NOLOCK`: per queue, the due pending rows, their average wait and
 * the age of the oldest, from `DueAtUtc` (a key of `IX_JobsHot_Claim`, filtered on `Status = 0`,
 * which covers the read: no lookup into the clustered index); the active count
 * (`IX_JobsHot_Active`); and the start lag of the runs started in the current minute and the five
 * before it (the start rows of `MetricBuckets`, outcome 4, through `IX_MetricBuckets_Queue`).
 */
export function getQueueHealth(schema: string): MssqlStatement {
  const t = tables(schema);
  const lag = 'DATEDIFF_BIG(MILLISECOND, x.DueAtUtc, @now)';
  return new ParamList().statement(
    [
      DECLARE_NOW,
      DECLARE_BUCKET,
      'SELECT q.Name AS Queue, q.MaxWorkers,',
      '  ISNULL(d.DuePending, 0) AS DuePending, ISNULL(d.AvgLagMs, 0) AS AvgLagMs, ISNULL(d.MaxLagMs, 0) AS MaxLagMs,',
      '  ISNULL(a.Active, 0) AS Active,',
      '  ISNULL(l.LagCount, 0) AS LagCount, ISNULL(l.LagSumMs, 0) AS LagSumMs, ISNULL(l.LagMaxMs, 0) AS LagMaxMs',
      `FROM ${t.queues} AS q WITH (NOLOCK)`,
      'LEFT JOIN (',
      `  SELECT x.Queue, COUNT_BIG(*) AS DuePending, AVG(CAST(${lag} AS float)) AS AvgLagMs, MAX(${lag}) AS MaxLagMs`,
      `  FROM ${t.hot} AS x WITH (NOLOCK)`,
      '  WHERE x.Status = 0 AND x.DueAtUtc <= @now',
      '  GROUP BY x.Queue',
      ') AS d ON d.Queue = q.Name',
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
export function getQueueOutcomes(schema: string, minutes: number): MssqlStatement {
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
export function getThroughput(schema: string, queue?: string): MssqlStatement {
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
export function getThroughputSeries(schema: string, series: MssqlSeries): MssqlStatement {
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
  schema: string,
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
  schema: string,
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
  schema: string,
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

// ------------------------------------------------------------------------------------ recurring

/**
 * upsertRecurringJob — `UPDATE … WITH (UPDLOCK, HOLDLOCK)` then `INSERT` when it changed no row:
 * the key-range update lock makes concurrent upserts of one name wait for each other instead of
 * one failing with a duplicate key. `NextSlotUtc` is reset only when the cron or zone changed;
 * `LastSlotUtc`, `LastJobId` and `IsPaused` are kept.
 */
export function upsertRecurringJob(
  schema: string,
  def: CheckedRecurringDefinition,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const name = p.nvarchar(def.name, 255);
  const cron = p.varchar(def.cron, 255);
  const zone = p.varchar(def.timeZone, 100);
  const queue = p.varchar(def.queue, 255);
  const type = p.nvarchar(def.type, 255);
  const payload = p.nvarchar(def.payload, 'max');
  const misfire = p.varchar(def.misfirePolicy, 10);
  const next = p.instant(def.nextSlotUtc);
  const source = p.varchar(def.source, 10);
  return p.statement(
    [
      PROLOGUE,
      'BEGIN TRAN;',
      `UPDATE ${t.recurring} WITH (UPDLOCK, HOLDLOCK)`,
      `SET NextSlotUtc = CASE WHEN Cron <> ${cron} OR TimeZone <> ${zone} THEN ${next} ELSE NextSlotUtc END,`,
      `  Cron = ${cron}, TimeZone = ${zone}, Queue = ${queue}, Type = ${type}, Payload = ${payload},`,
      `  MisfirePolicy = ${misfire}, Source = ${source}, LastUpdatedUtc = SYSUTCDATETIME()`,
      `WHERE Name = ${name};`,
      'IF @@ROWCOUNT = 0',
      `  INSERT INTO ${t.recurring} (Name, Cron, TimeZone, Queue, Type, Payload, NextSlotUtc, MisfirePolicy, Source)`,
      `  VALUES (${name}, ${cron}, ${zone}, ${queue}, ${type}, ${payload}, ${next}, ${misfire}, ${source});`,
      'COMMIT;',
    ].join('\n'),
  );
}

/** getRecurringJobs. */
export function getRecurringJobs(schema: string): MssqlStatement {
  const t = tables(schema);
  return new ParamList().statement(
    `SELECT ${selectColumns('r', RECURRING_COLUMNS)} FROM ${t.recurring} AS r ORDER BY r.Name;`,
  );
}

/** setRecurringJobPaused — one row by its key (plain UPDATE, X lock on it); `Affected` 0 or 1. */
export function setRecurringJobPaused(
  schema: string,
  name: string,
  paused: boolean,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const key = p.nvarchar(name, 255);
  const flag = p.bit(paused);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      `UPDATE ${t.recurring} SET IsPaused = ${flag}, LastUpdatedUtc = SYSUTCDATETIME() WHERE Name = ${key};`,
      'SELECT @@ROWCOUNT AS Affected;',
    ].join('\n'),
  );
}

/** removeRecurringJob — one row by its key; `Affected` 0 or 1. */
export function removeRecurringJob(schema: string, name: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const key = p.nvarchar(name, 255);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      `DELETE FROM ${t.recurring} WHERE Name = ${key};`,
      'SELECT @@ROWCOUNT AS Affected;',
    ].join('\n'),
  );
}

/**
 * triggerRecurringJob — records the triggered job as the last run, slots untouched; `Affected` 0
 * when no job has the name. Runs first in the trigger's READ COMMITTED transaction: the X lock it
 * takes on the row, held to the end of the transaction, makes a concurrent remove wait for the
 * enqueue to commit
 * (https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide#lock-modes).
 * Also corrects the claim's `LastJobId` when the slot's idempotency key met a job already hot.
 */
export function triggerRecurringJob(schema: string, name: string, jobId: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const key = p.nvarchar(name, 255);
  const job = p.varchar(jobId, 36);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      `UPDATE ${t.recurring} SET LastJobId = ${job}, LastUpdatedUtc = SYSUTCDATETIME() WHERE Name = ${key};`,
      'SELECT @@ROWCOUNT AS Affected;',
    ].join('\n'),
  );
}

/**
 * claimRecurringSlot — compare-and-set of `NextSlotUtc` (plain UPDATE: U → X lock on the row, so
 * of two processes exactly one sees `NextSlotUtc = @slot`); records the slot's job (when one is
 * enqueued) as `LastJobId`; runs in the same transaction as the slot's enqueue. `@@ROWCOUNT` is
 * the result.
 */
export function claimRecurringSlot(
  schema: string,
  name: string,
  slotUtc: Date,
  nextSlotUtc: Date,
  jobId: string | null = null,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const key = p.nvarchar(name, 255);
  const slot = p.instant(slotUtc);
  const next = p.instant(nextSlotUtc);
  const job = p.varchar(jobId, 36);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      `UPDATE ${t.recurring} SET LastSlotUtc = ${slot}, NextSlotUtc = ${next}, LastJobId = COALESCE(${job}, LastJobId), LastUpdatedUtc = SYSUTCDATETIME()`,
      `WHERE Name = ${key} AND NextSlotUtc = ${slot};`,
      'SELECT @@ROWCOUNT AS Affected;',
    ].join('\n'),
  );
}
