/** The Workers table: a process's presence row, its stop, and the list operators read. */
import type { CheckedWorkerHeartbeat } from '../../../validation/validate-args';
import { MssqlStatement, ParamList } from '../mssql-params';
import { WORKER_COLUMNS } from '../mssql.schema';
import {
  DECLARE_NOW,
  PROLOGUE,
  selectColumns,
  subtractMs,
  tables,
  type MssqlSchema,
} from './fragments';

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
export function upsertWorker(schema: MssqlSchema, w: CheckedWorkerHeartbeat): MssqlStatement {
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
export function markWorkerStopped(schema: MssqlSchema, workerId: string): MssqlStatement {
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
export function listWorkers(
  schema: MssqlSchema,
  lostAfterMs: number,
  limit: number,
): MssqlStatement {
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
