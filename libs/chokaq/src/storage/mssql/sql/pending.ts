/**
 * Edits of a job that is still Pending (`updatePending`): one guarded UPDATE of the hot row.
 */
import type { ValidatedPendingUpdate } from '../../../validation/validate-job';
import { MssqlStatement, ParamList } from '../mssql-params';
import { DECLARE_NOW, PROLOGUE, tables, type MssqlSchema } from './fragments';

/**
 * updatePending — applies the edits to job `id` if it is Pending (`Status = 0`) and, with
 * `expect`, of that queue and type; returns its id. Only the edited columns are set; a new
 * schedule sets `DueAtUtc` (the claim's ordering column) with `ScheduledAtUtc`: run now clears the
 * schedule and makes the job due by its enqueue time, as a job enqueued without a delay is.
 * `OUTPUT … INTO` a table variable, as everywhere in this dialect (docs/storage.md: a bare
 * `OUTPUT` fails on a table with an enabled trigger).
 *
 * Locks: a plain UPDATE on the primary key (U → X on the row, read committed). A claim that holds
 * the row first makes it wait; it then reads the row as the claim committed it, and `Status = 0`
 * no longer holds, so a Fetched or started row is never edited ("UPDATE (Transact-SQL)", Locking
 * behavior: https://learn.microsoft.com/sql/t-sql/queries/update-transact-sql#locking-behavior).
 */
export function updatePending(
  schema: MssqlSchema,
  id: string,
  e: ValidatedPendingUpdate,
  actor: string | null,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const key = p.varchar(id, 36);
  const sets: string[] = [];
  if (e.payload !== null) sets.push(`h.Payload = ${p.nvarchar(e.payload, 'max')}`);
  if (e.payloadVersion !== null) sets.push(`h.PayloadVersion = ${p.int(e.payloadVersion)}`);
  if (e.tags !== undefined) sets.push(`h.Tags = ${p.nvarchar(e.tags, 'max')}`);
  if (e.priority !== null) sets.push(`h.Priority = ${p.int(e.priority)}`);
  if (e.runAt === null) sets.push('h.ScheduledAtUtc = NULL', 'h.DueAtUtc = h.EnqueuedAtUtc');
  else if (e.runAt !== undefined) {
    const at = p.instant(e.runAt);
    sets.push(`h.ScheduledAtUtc = ${at}`, `h.DueAtUtc = ${at}`);
  }
  sets.push(
    'h.LastUpdatedUtc = @now',
    `h.LastModifiedBy = ISNULL(${p.nvarchar(actor, 100)}, h.LastModifiedBy)`,
  );
  const where = [`h.Id = ${key}`, 'h.Status = 0'];
  if (e.expect !== null) {
    where.push(
      `h.Queue = ${p.varchar(e.expect.queue, 255)}`,
      `h.Type = ${p.nvarchar(e.expect.type, 255)}`,
    );
  }
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      'DECLARE @Changed TABLE (Id varchar(36) NOT NULL);',
      `UPDATE h SET ${sets.join(', ')}`,
      'OUTPUT inserted.Id INTO @Changed (Id)',
      `FROM ${t.hot} AS h`,
      `WHERE ${where.join(' AND ')};`,
      'SELECT c.Id FROM @Changed AS c;',
    ].join('\n'),
  );
}
