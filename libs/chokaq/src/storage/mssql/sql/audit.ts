/** The audit log of operator actions, and the confirmation secret of bulk actions. */
import type { CheckedAudit, CheckedAuditQuery } from '../../../validation/validate-audit';
import { MssqlStatement, ParamList } from '../mssql-params';
import { AUDIT_COLUMNS, AUDIT_TARGET_KEY_LENGTH } from '../mssql.schema';
import { whereClause } from './filters';
import { PROLOGUE, selectColumns, tables, type MssqlSchema } from './fragments';

/**
 * recordAudit — the audit row of an action, run inside the transaction of the change it records
 * (ChokaQ's READ COMMITTED transaction; `MssqlConnection.transaction`). The first batch of an
 * action inserts the row; a later batch of the same action (same id) adds its rows and, when it
 * brings details, replaces them (a retention run's counts so far). Only the action's own
 * transactions touch its row, one after the other, so the UPDATE-then-INSERT needs no range lock.
 * The first batch of an action confirmed by a token (`audit.once`) inserts its row instead.
 */
export function recordAudit(
  schema: MssqlSchema,
  audit: CheckedAudit,
  rows: number,
  details: string | null,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.varchar(audit.id, 36);
  const added = p.bigint(rows);
  const json = p.nvarchar(details, 'max');
  if (audit.once) {
    // The first batch of an action confirmed by a token: a plain INSERT, so the primary key
    // refuses a token that already confirmed an action (error 2627, "Violation of PRIMARY KEY
    // constraint", https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/database-engine-events-and-errors-2000-to-2999),
    // and an action running with the same token holds the key's lock until it commits, so a
    // concurrent one waits for it (https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide).
    return p.statement(
      [
        PROLOGUE,
        `INSERT INTO ${t.audit} (Id, AtUtc, Actor, Action, Target, RowsAffected, Details)`,
        `VALUES (${id}, SYSUTCDATETIME(), ${p.nvarchar(audit.actor, 100)}, ${p.varchar(audit.action, 50)}, ${p.nvarchar(audit.target, 4000)}, ${added}, ${json});`,
      ].join('\n'),
    );
  }
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
 * cursor; the whole `Target` is compared too, for targets longer than the key, and its length in
 * bytes: `=` pads the shorter string with blanks before comparing
 * (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/string-comparison-assignment-transact-sql),
 * so `id + ' '` would match `id`; `DATALENGTH` counts trailing blanks
 * (https://learn.microsoft.com/en-us/sql/t-sql/functions/datalength-transact-sql).
 */
export function getAuditLog(schema: MssqlSchema, query: CheckedAuditQuery): MssqlStatement {
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
      `a.TargetKey = CAST(LEFT(${target}, ${key}) AS nvarchar(${key})) AND a.Target = ${target}` +
        ` AND DATALENGTH(a.Target) = DATALENGTH(${target})`,
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
export function confirmationSecret(schema: MssqlSchema, candidate: string): MssqlStatement {
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
