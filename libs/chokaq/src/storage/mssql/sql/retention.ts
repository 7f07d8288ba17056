/**
 * Purges and retention: bounded batches, each its own short transaction, that skip rows other
 * actions hold (`READPAST` under `READCOMMITTEDLOCK`). Counters are lifetime and never touched here.
 */
import { DlqFilter } from '../../../interfaces/job-view.interface';
import { MssqlStatement, ParamList } from '../mssql-params';
import { historyWhere, whereClause } from './filters';
import {
  DECLARE_NOW,
  ID_JSON,
  PROLOGUE,
  READPAST_UNDER_RCSI,
  attemptsDelete,
  subtractMs,
  tables,
  type MssqlSchema,
} from './fragments';

/**
 * purgeDlq — deletes DLQ rows by id (counters untouched) and their `JobAttempts` rows, in one
 * transaction (XACT_ABORT); the count of DLQ rows deleted is the result.
 */
export function purgeDlq(schema: MssqlSchema, ids: readonly string[]): MssqlStatement {
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
  schema: MssqlSchema,
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
  schema: MssqlSchema,
  ageMs: number,
  batch: number,
): MssqlStatement {
  return applyRetentionBatch(schema, 'archive', ageMs, batch);
}

/** applyRetention, DLQ step: one batch of DLQ rows failed before now − `ageMs`. */
export function applyRetentionDlq(
  schema: MssqlSchema,
  ageMs: number,
  batch: number,
): MssqlStatement {
  return applyRetentionBatch(schema, 'dlq', ageMs, batch);
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
