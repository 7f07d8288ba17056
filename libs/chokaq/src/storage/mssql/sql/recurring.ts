/** Recurring job definitions and the compare-and-set that claims a slot once across processes. */
import type { CheckedRecurringDefinition } from '../../../validation/validate-args';
import { MssqlStatement, ParamList } from '../mssql-params';
import { RECURRING_COLUMNS } from '../mssql.schema';
import { PROLOGUE, selectColumns, tables, type MssqlSchema } from './fragments';

/**
 * upsertRecurringJob — `UPDATE … WITH (UPDLOCK, HOLDLOCK)` then `INSERT` when it changed no row:
 * the key-range update lock makes concurrent upserts of one name wait for each other instead of
 * one failing with a duplicate key. `NextSlotUtc` is reset only when the cron or zone changed;
 * `LastSlotUtc`, `LastJobId` and `IsPaused` are kept.
 */
export function upsertRecurringJob(
  schema: MssqlSchema,
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
export function getRecurringJobs(schema: MssqlSchema): MssqlStatement {
  const t = tables(schema);
  return new ParamList().statement(
    `SELECT ${selectColumns('r', RECURRING_COLUMNS)} FROM ${t.recurring} AS r ORDER BY r.Name;`,
  );
}

/** setRecurringJobPaused — one row by its key (plain UPDATE, X lock on it); `Affected` 0 or 1. */
export function setRecurringJobPaused(
  schema: MssqlSchema,
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
export function removeRecurringJob(schema: MssqlSchema, name: string): MssqlStatement {
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
export function triggerRecurringJob(
  schema: MssqlSchema,
  name: string,
  jobId: string,
): MssqlStatement {
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
  schema: MssqlSchema,
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
