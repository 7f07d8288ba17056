/**
 * Purges and retention: bounded batches, each its own short transaction, that skip rows other
 * actions hold (`READPAST` under `READCOMMITTEDLOCK`). Counters are lifetime and never touched here.
 * A batch that deletes Archive or DLQ rows takes their attempt rows with them and settles their
 * edges (`dependencyRemove`: sql/dependencies.ts) in its transaction.
 */
import { DlqFilter } from '../../../interfaces/job-view.interface';
import { MssqlStatement, ParamList } from '../mssql-params';
import { GROUP_KEY_COLUMN, columnType } from '../mssql.schema';
import { dependencyRemove } from './dependencies';
import { historyWhere, whereClause } from './filters';
import {
  DECLARE_NOW,
  ID_JSON,
  PROLOGUE,
  READPAST_UNDER_RCSI,
  attemptsDelete,
  isGrouped,
  subtractMs,
  tables,
  type MssqlSchema,
} from './fragments';

/**
 * The deleted rows of a purge or retention batch of the Archive or the DLQ: each id with what its
 * edges need ({@link dependencyRemove}), keyed by the id (the edges are then taken in its order).
 */
const DECLARE_GONE =
  'DECLARE @Gone TABLE (Id varchar(36) NOT NULL PRIMARY KEY, HasDependents bit NULL, WaitingOn int NULL);';

/** `OUTPUT` of a purge or retention DELETE into {@link DECLARE_GONE}. */
const OUTPUT_GONE =
  'OUTPUT deleted.Id, deleted.HasDependents, deleted.WaitingOn INTO @Gone (Id, HasDependents, WaitingOn)';

/**
 * purgeDlq — deletes DLQ rows by id (counters untouched), their `JobAttempts` rows and their edges
 * ({@link dependencyRemove}: a waiting job blocked on one is marked for the check pass), in one
 * transaction (XACT_ABORT); the count of DLQ rows deleted is the result.
 */
export function purgeDlq(schema: MssqlSchema, ids: readonly string[]): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const doc = p.json(ids);
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_GONE,
      'BEGIN TRAN;',
      `DELETE d ${OUTPUT_GONE}`,
      `FROM ${t.dlq} AS d WHERE d.Id IN (SELECT j.Id FROM OPENJSON(${doc}) ${ID_JSON} AS j);`,
      attemptsDelete(t),
      dependencyRemove(t),
      'COMMIT;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Gone;',
    ].join('\n'),
  );
}

/**
 * purgeDlqByFilter (one batch) — deletes at most `batch` matching DLQ rows, oldest first, their
 * `JobAttempts` rows and their edges ({@link dependencyRemove}), its own short transaction
 * (XACT_ABORT); rows other sessions hold are skipped (`READPAST, ROWLOCK`; a DLQ row an enqueue
 * is marking as a dependency is one, left for the next batch). See {@link READPAST_UNDER_RCSI}
 * for `READCOMMITTEDLOCK`.
 */
export function purgeDlqByFilter(
  schema: MssqlSchema,
  filter: DlqFilter,
  batch: number,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const max = p.int(batch);
  const where = historyWhere(p, 'd', 'dlq', filter);
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_GONE,
      'BEGIN TRAN;',
      'WITH Doomed AS (',
      `  SELECT TOP (${max}) d.Id, d.HasDependents, d.WaitingOn FROM ${t.dlq} AS d WITH (${READPAST_UNDER_RCSI})${whereClause(where)}`,
      '  ORDER BY d.FailedAtUtc, d.Id',
      ')',
      `DELETE FROM Doomed ${OUTPUT_GONE};`,
      attemptsDelete(t),
      dependencyRemove(t),
      'COMMIT;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Gone;',
    ].join('\n'),
  );
}

/** Which retention delete: the table and its age column. */
type RetentionTarget = 'archive' | 'dlq' | 'buckets' | 'workers' | 'audit';

/**
 * The rows of a partitioned Archive or DLQ that row-by-row retention deletes: those before the
 * first boundary (the leftmost partition: the rows a converted table had) and those at or after the
 * last (the rightmost, which holds rows only after maintenance stalled), never a row of a period's
 * partition, which `dropPartition` removes whole. Null (or absent): the whole table.
 */
export interface MssqlRowWiseRange {
  below: Date;
  from: Date;
}

/**
 * applyRetention (one batch of one table) — deletes at most `batch` rows older than now − `ageMs`,
 * oldest first, skipping rows others hold (`READPAST, ROWLOCK`; see {@link READPAST_UNDER_RCSI});
 * counters untouched. An archive or DLQ batch deletes its jobs' `JobAttempts` rows too and settles
 * their edges ({@link dependencyRemove}), in one transaction (XACT_ABORT) with it; with `range`
 * (a partitioned table) only among the rows of {@link MssqlRowWiseRange}.
 */
function applyRetentionBatch(
  schema: MssqlSchema,
  target: RetentionTarget,
  ageMs: number,
  batch: number,
  range: MssqlRowWiseRange | null = null,
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
    // A partitioned table: a second range of the time column's index, outside the periods'
    // partitions (an OR of two ranges of one column, which the index seeks as two ranges).
    const outside =
      range === null
        ? ''
        : ` AND (x.${column} < ${p.instant(range.below)} OR x.${column} >= ${p.instant(range.from)})`;
    // A job's last row takes its attempt rows and its edges with it, in the batch's transaction.
    return p.statement(
      [
        PROLOGUE,
        DECLARE_NOW,
        `DECLARE @cutoff datetime2(3) = ${subtractMs('@now', age)};`,
        DECLARE_GONE,
        'BEGIN TRAN;',
        'WITH Expired AS (',
        `  SELECT TOP (${max}) x.Id, x.${column}, x.HasDependents, x.WaitingOn FROM ${t[target]} AS x WITH (${READPAST_UNDER_RCSI})`,
        `  WHERE x.${column} < @cutoff${outside}`,
        `  ORDER BY x.${column}`,
        ')',
        `DELETE FROM Expired ${OUTPUT_GONE};`,
        attemptsDelete(t),
        dependencyRemove(t),
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

/**
 * applyRetention, archive step: one batch of archive rows finished before now − `ageMs` (of a
 * partitioned Archive, only in `range`).
 */
export function applyRetentionArchive(
  schema: MssqlSchema,
  ageMs: number,
  batch: number,
  range: MssqlRowWiseRange | null = null,
): MssqlStatement {
  return applyRetentionBatch(schema, 'archive', ageMs, batch, range);
}

/**
 * applyRetention, DLQ step: one batch of DLQ rows failed before now − `ageMs` (of a partitioned
 * DLQ, only in `range`).
 */
export function applyRetentionDlq(
  schema: MssqlSchema,
  ageMs: number,
  batch: number,
  range: MssqlRowWiseRange | null = null,
): MssqlStatement {
  return applyRetentionBatch(schema, 'dlq', ageMs, batch, range);
}

/** applyRetention, metrics step: one batch of metric buckets older than now − `ageMs`. */
export function applyRetentionBuckets(
  schema: MssqlSchema,
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
  schema: MssqlSchema,
  ageMs: number,
  batch: number,
): MssqlStatement {
  return applyRetentionBatch(schema, 'workers', ageMs, batch);
}

/** applyRetention, audit step: one batch of audit log entries recorded before now − `ageMs`. */
export function applyRetentionAudit(
  schema: MssqlSchema,
  ageMs: number,
  batch: number,
): MssqlStatement {
  return applyRetentionBatch(schema, 'audit', ageMs, batch);
}

/**
 * applyRetention, groups step — deletes at most `batch` group rate windows (`JobGroups`, schema
 * version 17) that no longer count, whatever the policy (the age is unused): the group's last
 * start is at least one window (`Queues.GroupRatePerMs`) old, so its allowance is the whole of the
 * limit again, or its queue has no group rate limit any more. A later start of the group makes its
 * row again. Selects the count deleted (`Affected`).
 *
 * Locks: one DELETE, its own short transaction (or the audited run's). It reads its rows with U
 * locks and evaluates the predicate under them, and skips the rows a grouped claim holds
 * (`READPAST, ROWLOCK` under `READCOMMITTEDLOCK`, {@link READPAST_UNDER_RCSI}), so a window a claim
 * is spending is never removed under it; a row that claim wrote and committed is read as it left
 * it. The queue's row is read without a hint; a grouped claim writes its `Queues` rows only after
 * its last `JobGroups` write (see `fetchNextBatch`), so this DELETE, which holds `JobGroups` rows
 * while it waits for a `Queues` row, never waits for a claim that waits for it.
 */
export function applyRetentionGroups(
  schema: MssqlSchema,
  _ageMs: number,
  batch: number,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const max = p.int(batch);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      DECLARE_NOW,
      `DECLARE @Gone TABLE (GroupKey ${columnType(GROUP_KEY_COLUMN, t.key)} NOT NULL);`,
      'WITH Expired AS (',
      `  SELECT TOP (${max}) g.GroupKey FROM ${t.groups} AS g WITH (${READPAST_UNDER_RCSI})`,
      `  WHERE NOT EXISTS (SELECT 1 FROM ${t.queues} AS q WHERE q.Name = g.Queue AND q.GroupRateMax IS NOT NULL`,
      `    AND g.RateWindowLast > DATEADD(MILLISECOND, -q.GroupRatePerMs, @now))`,
      ')',
      'DELETE FROM Expired OUTPUT deleted.GroupKey INTO @Gone (GroupKey);',
      'SELECT COUNT_BIG(*) AS Affected FROM @Gone;',
    ].join('\n'),
  );
}

/**
 * applyRetention, batches step — deletes at most `batch` batches (`Batches`, schema version 18)
 * settled before now − `ageMs` (the longer of the Archive's and the DLQ's retention: their jobs'
 * rows are gone or going), oldest first (a range of `IX_Batches_Settled`, `SettledAtUtc IS NOT
 * NULL` repeated so the filtered index matches), with their `BatchCallbacks` rows, in one
 * transaction (XACT_ABORT). Selects the count of batches deleted (`Affected`), from the ids
 * captured by `OUTPUT deleted.Id INTO @Gone`. A batch not settled is kept whatever its age.
 *
 * Locks: the DELETE reads its rows with a blocking scan that takes an update (U) lock on each row
 * as it reads it, under row versioning too, and evaluates the predicate under that lock
 * (https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide,
 * update locks; behavior when modifying data). A move settling a batch and a resurrect reopening
 * one hold its row (U, then X, to their COMMIT; see `sql/batches.ts`), so `READPAST, ROWLOCK`
 * (under `READCOMMITTEDLOCK`, see {@link READPAST_UNDER_RCSI}) skips it and leaves it for the next
 * run. A batch that a resurrect reopened after the scan read it but before it locked it is read
 * again under the lock as that resurrect committed it (`SettledAtUtc` NULL) and fails the
 * predicate, so a batch with a job back in the hot table is never removed. Lock order: `Batches`
 * rows, then their `BatchCallbacks` rows (a clustered range per batch), which only `insertBatch`
 * writes; a move reads a callback row without holding a lock on it while it waits for a `Batches`
 * row, so no cycle. A job of a removed batch that a resurrect brings back later (or a fired
 * callback still hot) still carries its `BatchId`, whose settle and reopen steps then find no row
 * and write nothing.
 */
export function applyRetentionBatches(
  schema: MssqlSchema,
  ageMs: number,
  batch: number,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const max = p.int(batch);
  const age = p.bigint(ageMs);
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      `DECLARE @cutoff datetime2(3) = ${subtractMs('@now', age)};`,
      'DECLARE @Gone TABLE (Id varchar(36) NOT NULL PRIMARY KEY);',
      'BEGIN TRAN;',
      'WITH Expired AS (',
      `  SELECT TOP (${max}) b.Id, b.SettledAtUtc FROM ${t.batches} AS b WITH (${READPAST_UNDER_RCSI})`,
      '  WHERE b.SettledAtUtc < @cutoff AND b.SettledAtUtc IS NOT NULL',
      '  ORDER BY b.SettledAtUtc',
      ')',
      'DELETE FROM Expired OUTPUT deleted.Id INTO @Gone (Id);',
      `DELETE c FROM ${t.callbacks} AS c INNER JOIN @Gone AS g ON g.Id = c.BatchId;`,
      'COMMIT;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Gone;',
    ].join('\n'),
  );
}

/**
 * applyRetention, not a removal — puts at most `batch` hot jobs without a group in a queue with
 * group limits into the queue's shared group `''` (the age is unused), so that its grouped claim
 * reaches them. `updateQueue` does this for the rows it finds when a limit is set; this catches
 * the job whose enqueue read the queue before the limit was set and stored it after
 * (`storedGroup` reads the queue's row without holding a lock). Selects the count changed
 * (`Affected`), which no `RetentionResult` field counts. Rows others hold are skipped (`READPAST,
 * ROWLOCK` under `READCOMMITTEDLOCK`) and left for the next run; `GroupKey IS NULL` is re-checked
 * under the update lock the UPDATE reads with.
 */
export function applyRetentionGroupless(
  schema: MssqlSchema,
  _ageMs: number,
  batch: number,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const max = p.int(batch);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      'DECLARE @Joined TABLE (Id varchar(36) NOT NULL);',
      'WITH Stray AS (',
      `  SELECT TOP (${max}) h.Id, h.GroupKey FROM ${t.hot} AS h WITH (${READPAST_UNDER_RCSI})`,
      `  WHERE h.GroupKey IS NULL AND EXISTS (SELECT 1 FROM ${t.queues} AS q WHERE q.Name = h.Queue AND ${isGrouped('q')})`,
      ')',
      "UPDATE Stray SET GroupKey = N'' OUTPUT inserted.Id INTO @Joined (Id);",
      'SELECT COUNT_BIG(*) AS Affected FROM @Joined;',
    ].join('\n'),
  );
}
