/**
 * The moves between pillars, each one `XACT_ABORT` transaction that deletes first and inserts what
 * it captured with `OUTPUT … INTO`: hot → Archive, hot → DLQ (`moveToDlq`, `cancel`), DLQ → hot
 * (`resurrect`), with their counters, buckets and attempt rows, the edges of their jobs'
 * dependents (`dependencySettle`: sql/dependencies.ts) and the counts of their jobs' batches
 * (`batchSettle`, `batchReopen`: sql/batches.ts).
 */
import { dlqStatusFor } from '../../../common/dlq-status';
import { FailureReason, JobStatus } from '../../../interfaces/job-status.enum';
import { DlqFilter } from '../../../interfaces/job-view.interface';
import { attemptOutcomeSql } from '../../shared/attempts';
import { hasResults } from '../../shared/stored-results';
import { MssqlBatchOptions, MssqlStatement, ParamList } from '../mssql-params';
import { DLQ_COLUMNS, HOT_COLUMNS } from '../mssql.schema';
import { batchReopen, batchSettle } from './batches';
import { dependencySettle } from './dependencies';
import { historyWhere, whereClause } from './filters';
import {
  DECLARE_BUCKET,
  DECLARE_NOW,
  ID_JSON,
  MssqlLease,
  PROLOGUE,
  archiveInsert,
  attemptsInsert,
  bumpBuckets,
  bumpStats,
  declareTableVar,
  dlqInsert,
  ensureQueueRows,
  insertSelect,
  outputInto,
  storedGroup,
  tables,
  type MssqlSchema,
} from './fragments';

/** A completed job as the archive move takes it. */
export interface MssqlCompleted extends MssqlLease {
  durationMs: number;
  /** The run's result as JSON text, when its handler records results; absent for any other run. */
  result?: string;
}

/**
 * archiveSucceeded — atomic move Hot → Archive of owned rows (seed "Transaction Integrity"):
 * `SET XACT_ABORT ON; BEGIN TRAN;` delete the exact owned rows first (fence: Id + WorkerId +
 * LeaseId, `Status IN (1, 2)`; read committed, U → X locks, waits rather than skips: a row we own
 * is ours), `OUTPUT deleted.<columns> INTO @Moved`, insert what was deleted, the edges of their
 * dependents (a dependent whose last dependency this was is released, {@link dependencySettle}),
 * the counts of their batches (a batch settled by them enqueues its callbacks,
 * {@link batchSettle}), `SucceededTotal + n`, metric bucket, `COMMIT`. Any error rolls all of it
 * back. Returns the moved runs (`Id`, `LeaseId`).
 * `@In` is keyed by (Id, LeaseId): a stale run and its successor may share a batch, and the join
 * on the lease lets only the current one match.
 *
 * In a transactional handler's transaction (`callerTransaction`: the run's own READ COMMITTED
 * transaction, begun by `startTransaction('READ COMMITTED')`, see
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/set-transaction-isolation-level-transact-sql )
 * the batch has no prologue, no `SET XACT_ABORT ON` and no `BEGIN TRAN … COMMIT`, only
 * `SET LOCK_TIMEOUT -1` (the pool's session may carry another; the SET ends with the batch): the
 * handler's transaction gives the atomicity, and its COMMIT (or ROLLBACK, when the fence moved nothing)
 * follows. The fenced DELETE's exclusive lock on the job's row is held until then, so a rescue,
 * cancel or heartbeat of that row waits for the commit and then finds it gone.
 *
 * Stored results (schema version 15): when some run of the batch records its result, each item of
 * the document carries `result` (its JSON text as a JSON string; `null` for a run that records
 * none), which `OPENJSON` reads as `Result nvarchar(max)`: a WITH-clause column without `AS JSON`
 * takes the scalar value at its path, the unescaped string, and NULL for a JSON null
 * (https://learn.microsoft.com/en-us/sql/t-sql/functions/openjson-transact-sql, "with_clause").
 * `@In` keeps it (one value per (Id, LeaseId), picked by `MAX` like the duration: `MAX` takes
 * character columns, https://learn.microsoft.com/en-us/sql/t-sql/functions/max-transact-sql), and
 * the archive insert writes it into `JobsArchive.Result` with the row. A batch in which no run
 * records one (the common case) is built exactly as before: no `result` key in the document, no
 * `Result` column anywhere, so its text, its one parameter and its cached plan are unchanged.
 */
export function archiveSucceeded(
  schema: MssqlSchema,
  items: readonly MssqlCompleted[],
  options?: MssqlBatchOptions,
): MssqlStatement {
  const own = !options?.callerTransaction;
  const t = tables(schema);
  const p = new ParamList();
  const withResults = hasResults(items);
  const doc = p.json(
    items.map((i) =>
      withResults
        ? {
            id: i.id,
            workerId: i.workerId,
            leaseId: i.leaseId,
            durationMs: i.durationMs,
            result: i.result ?? null,
          }
        : { id: i.id, workerId: i.workerId, leaseId: i.leaseId, durationMs: i.durationMs },
    ),
  );
  /** `text` when the batch stores results, else nothing. */
  const results = (text: string) => (withResults ? text : '');
  return p.statement(
    [
      // In the handler's transaction: its session's lock timeout is the application pool's (a
      // leaked `SET LOCK_TIMEOUT 0` would make the fenced DELETE fail with 1222 and roll the
      // handler's work back); waiting for the row is what the move needs, bounded by the
      // driver's requestTimeout. The SET ends with this batch (sp_executesql).
      own ? PROLOGUE : 'SET NOCOUNT ON;\nSET LOCK_TIMEOUT -1;',
      DECLARE_NOW,
      DECLARE_BUCKET,
      declareTableVar('@Moved', HOT_COLUMNS, t),
      `DECLARE @In TABLE (Id varchar(36) NOT NULL, WorkerId nvarchar(255) NOT NULL, LeaseId varchar(36) NOT NULL, DurationMs bigint NULL${results(', Result nvarchar(max) NULL')}, PRIMARY KEY (Id, LeaseId));`,
      `INSERT INTO @In (Id, WorkerId, LeaseId, DurationMs${results(', Result')})`,
      `SELECT x.Id, MAX(x.WorkerId), x.LeaseId, MAX(x.DurationMs)${results(', MAX(x.Result)')} FROM OPENJSON(${doc}) WITH (Id varchar(36) '$.id', WorkerId nvarchar(255) '$.workerId', LeaseId varchar(36) '$.leaseId', DurationMs bigint '$.durationMs'${results(", Result nvarchar(max) '$.result'")}) AS x`,
      'WHERE x.Id IS NOT NULL AND x.WorkerId IS NOT NULL AND x.LeaseId IS NOT NULL GROUP BY x.Id, x.LeaseId;',
      ...(own ? ['BEGIN TRAN;'] : []),
      'DELETE h',
      outputInto('deleted', '@Moved', HOT_COLUMNS),
      `FROM ${t.hot} AS h`,
      'INNER JOIN @In AS i ON i.Id = h.Id AND i.WorkerId = h.WorkerId AND i.LeaseId = h.LeaseId',
      'WHERE h.Status IN (1, 2);',
      archiveInsert(t, withResults),
      dependencySettle(t, 'archive'),
      batchSettle(t, 'archive'),
      bumpStats(t, '@Moved', { SucceededTotal: '1' }),
      bumpBuckets(
        t,
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

/** The failure reasons whose DLQ status is `status` (`dlqStatusFor`), as a literal list. */
function reasonsLandingAs(status: JobStatus): string {
  return Object.values(FailureReason)
    .filter((r): r is FailureReason => typeof r === 'number' && dlqStatusFor(r) === status)
    .join(', ');
}

/** The reasons that land as Cancelled (a cancel, a dependency failed): counted as cancellations. */
const CANCELLED_REASONS = reasonsLandingAs(JobStatus.Cancelled);
/** The reasons that land as Zombie. */
const ZOMBIE_REASONS = reasonsLandingAs(JobStatus.Zombie);

/**
 * moveToDlq — atomic move Hot → DLQ, same transaction pattern as {@link archiveSucceeded}:
 * `SET XACT_ABORT ON; BEGIN TRAN; DELETE … OUTPUT deleted.<columns> INTO @Moved`, insert, the
 * edges of its dependents ({@link dependencySettle}), the batch's counts ({@link batchSettle}),
 * counters (`FailedTotal`, or `CancelledTotal` for a reason that lands as Cancelled: Cancelled,
 * DependencyFailed), bucket (outcome 1 failed, 2 cancelled), `COMMIT`. With a lease the delete is
 * fenced (Id + WorkerId + LeaseId, `Status IN (1, 2)`); without one any hot row with the id moves,
 * Waiting included, or with `waitingOnly` only a Waiting one (`Status = 7`: the dependency check
 * cancels a job only while it still waits). The DLQ status is derived from the reason in SQL with
 * literals (4 Failed, 5 Cancelled, 6 Zombie; `dlqStatusFor`), so the text is one for every reason.
 * A row that was Processing (its run had started) gets its run's `JobAttempts` row in the same
 * transaction (outcome by the reason: timeout, cancelled, zombie, else failed); a Pending,
 * Fetched or Waiting one ran nothing.
 *
 * The dependency check runs it inside its round's transaction (READ COMMITTED, begun by
 * `MssqlConnection.transaction`): its `BEGIN TRAN … COMMIT` nests there, the inner COMMIT only
 * decrements `@@TRANCOUNT`
 * (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/commit-transaction-transact-sql),
 * and its `XACT_ABORT` rolls the whole round back on an error.
 */
export function moveToDlq(
  schema: MssqlSchema,
  target: MssqlDlqTarget,
  reason: FailureReason,
  error: string,
  actor: string | null,
  durationMs: number | null,
  waitingOnly = false,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.varchar(target.id, 36);
  const fence =
    'leaseId' in target
      ? ` AND h.WorkerId = ${p.nvarchar(target.workerId, 255)} AND h.LeaseId = ${p.varchar(target.leaseId, 36)} AND h.Status IN (1, 2)`
      : waitingOnly
        ? ' AND h.Status = 7'
        : '';
  const why = p.int(reason);
  const err = p.nvarchar(error, 'max');
  const who = p.nvarchar(actor, 100);
  const duration = p.bigint(durationMs);
  const cancelled = `${why} IN (${CANCELLED_REASONS})`;
  const status = `CASE WHEN ${cancelled} THEN ${JobStatus.Cancelled} WHEN ${why} IN (${ZOMBIE_REASONS}) THEN ${JobStatus.Zombie} ELSE ${JobStatus.Failed} END`;
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      declareTableVar('@Moved', HOT_COLUMNS, t),
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
      dependencySettle(t, 'dlq'),
      batchSettle(t, 'dlq'),
      bumpStats(t, '@Moved', {
        FailedTotal: `CASE WHEN ${cancelled} THEN 0 ELSE 1 END`,
        CancelledTotal: `CASE WHEN ${cancelled} THEN 1 ELSE 0 END`,
      }),
      bumpBuckets(
        t,
        `(SELECT mv.Queue, CAST(CASE WHEN ${cancelled} THEN 2 ELSE 1 END AS tinyint) AS Outcome, CAST(${why} AS smallint) AS FailureReason, ${duration} AS DurationMs FROM @Moved AS mv)`,
      ),
      'COMMIT;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Moved;',
    ].join('\n'),
  );
}

/**
 * cancel — Pending, Fetched and Waiting rows (`Status IN (0, 1, 7)`) move Hot → DLQ as Cancelled
 * (status 5, reason 1) with the move pattern (`SET XACT_ABORT ON; BEGIN TRAN; DELETE …
 * OUTPUT deleted.<columns> INTO @Moved`, insert, the edges of their dependents
 * ({@link dependencySettle}: a dependent cancelled in the same call is no longer hot and is not
 * touched), the batches' counts ({@link batchSettle}), `CancelledTotal`, bucket outcome 2,
 * `COMMIT`); Processing rows get `CancelRequestedUtc` in the same transaction. Read committed,
 * U → X locks, in the order of every move: the hot rows (the moved ones, then the running ones),
 * then the DLQ, then the edges and the dependents' hot rows, then the batches' rows (and their
 * callbacks' new hot rows), then the counters and buckets; taking the running rows after the
 * counters made a cycle with the archive, retry and zombie moves, which wait on a counter row
 * while holding hot rows (1205).
 * Result rows: (Id, Kind) with Kind 0 = moved, 1 = cancellation requested.
 */
export function cancel(
  schema: MssqlSchema,
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
      declareTableVar('@Moved', HOT_COLUMNS, t),
      'DECLARE @Requested TABLE (Id varchar(36) NOT NULL);',
      'DECLARE @Ids TABLE (Id varchar(36) NOT NULL PRIMARY KEY);',
      `INSERT INTO @Ids (Id) SELECT DISTINCT j.Id FROM OPENJSON(${doc}) ${ID_JSON} AS j WHERE j.Id IS NOT NULL;`,
      'BEGIN TRAN;',
      'DELETE h',
      outputInto('deleted', '@Moved', HOT_COLUMNS),
      `FROM ${t.hot} AS h`,
      'INNER JOIN @Ids AS i ON i.Id = h.Id',
      'WHERE h.Status IN (0, 1, 7);',
      // The running rows too, before any other table: every move takes its hot rows first.
      `UPDATE h SET h.CancelRequestedUtc = ISNULL(h.CancelRequestedUtc, @now), h.LastModifiedBy = ISNULL(${who}, h.LastModifiedBy)`,
      'OUTPUT inserted.Id INTO @Requested (Id)',
      `FROM ${t.hot} AS h`,
      'INNER JOIN @Ids AS i ON i.Id = h.Id',
      'WHERE h.Status = 2;',
      dlqInsert(t, '5', '1', errorText, who, 'NULL'),
      dependencySettle(t, 'dlq'),
      batchSettle(t, 'dlq'),
      bumpStats(t, '@Moved', { CancelledTotal: '1' }),
      bumpBuckets(
        t,
        '(SELECT mv.Queue, CAST(2 AS tinyint) AS Outcome, CAST(1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs FROM @Moved AS mv)',
      ),
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
 * with attempts 0, `EnqueuedAtUtc = now`, no idempotency key, the producer's `TraceContext` and
 * the job's group and batch kept (a job without a group that comes back to a queue with group
 * limits joins its shared group `''`, {@link storedGroup}), its `WaitingOn` and `HasDependents`
 * kept (no edge is touched: a `block` edge of a dependency brought back waits for its next move),
 * optional edits; its batch reopened (one failed job fewer, no longer settled:
 * {@link batchReopen}); `ResurrectedTotal + n`; `COMMIT`. If the hot insert fails, the DLQ delete
 * rolls back.
 *
 * The ids come either from a JSON list or, for `resurrectByFilter`, from the oldest matching
 * DLQ rows, read WITHOUT update locks (`READCOMMITTEDLOCK, READPAST, ROWLOCK`: an `UPDLOCK` read
 * would hold a U lock until COMMIT on every row the filter's LIKE rejects); the DELETE then takes
 * those by key with `UPDLOCK, READPAST, ROWLOCK, FORCESEEK`, so rows another operator is moving
 * are skipped, not waited for. DLQ rows never change in place, so the filter needs no re-check.
 *
 * Lock order: `JobsDLQ` rows on the clustered key, in id order (a nested loop from `@Ids`), then
 * `JobsHot`, then the batches' rows in id order, then `Queues` and `StatsSummary` rows of missing
 * queues in name order, then the counters in queue order ({@link bumpStats}): the batches' rows
 * before the counters, as in every move.
 */
export function resurrect(
  schema: MssqlSchema,
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
    // Nullable in the DLQ (rows dead-lettered before schema version 12); NOT NULL in JobsHot.
    PayloadVersion: 'ISNULL(m.PayloadVersion, 1)',
    // Kept; a job without one that comes back to a queue with group limits joins its shared group.
    GroupKey: storedGroup(t, 'm.GroupKey', 'm.Queue'),
    // Nullable in the DLQ (rows dead-lettered before schema version 19); NOT NULL in JobsHot.
    HasDependents: 'ISNULL(m.HasDependents, 0)',
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
      declareTableVar('@Moved', DLQ_COLUMNS, t),
      'DECLARE @Ids TABLE (Id varchar(36) NOT NULL PRIMARY KEY);',
      'BEGIN TRAN;',
      `INSERT INTO @Ids (Id) ${idSource};`,
      'DELETE d',
      outputInto('deleted', '@Moved', DLQ_COLUMNS),
      'FROM @Ids AS i',
      `INNER LOOP JOIN ${t.dlq} AS d${take} ON d.Id = i.Id;`,
      insertSelect(t.hot, HOT_COLUMNS, 'm', overrides) + '\nFROM @Moved AS m;',
      batchReopen(t),
      `DECLARE @NewQueues TABLE (Queue varchar(255)${t.key} NOT NULL PRIMARY KEY);`,
      ensureQueueRows(t, '@Moved'),
      bumpStats(t, '@Moved', { ResurrectedTotal: '1' }),
      'COMMIT;',
      'SELECT mv.Id FROM @Moved AS mv;',
    ].join('\n'),
  );
}
