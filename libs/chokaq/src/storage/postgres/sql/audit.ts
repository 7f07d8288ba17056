/** The audit log of operator actions, and the confirmation secret of bulk actions. */
import type { CheckedAudit, CheckedAuditQuery } from '../../../validation/validate-audit';
import { AUDIT_TARGET_KEY_LENGTH } from '../postgres.schema';

/**
 * The audit row of an action ($1 id, $2 actor, $3 action, $4 target, $5 rows affected, $6 details),
 * in the transaction of the change it records. The first batch of an action inserts it; a later
 * batch of the same action (same id) adds its rows and, when it brings details ($6 not null),
 * replaces them (a retention run's counts so far). `now()` is the transaction's start: the time of
 * the action's first write. Lock/isolation: READ COMMITTED; only the action's own transactions
 * touch its row, one after the other.
 */
export const recordAudit = (s: string): string => `
INSERT INTO ${s}.audit_log AS a (id, at_utc, actor, action, target, rows_affected, details)
VALUES ($1, now(), $2, $3, $4, $5, $6)
ON CONFLICT (id) DO UPDATE
SET rows_affected = a.rows_affected + EXCLUDED.rows_affected,
    details = coalesce(EXCLUDED.details, a.details)`;

/**
 * The first batch's audit row of an action confirmed by a token ({@link recordAudit}'s values):
 * a plain INSERT, so the primary key refuses a second action with the same token (SQLSTATE 23505),
 * and one running concurrently waits on the first's uncommitted row, then is refused or, if the
 * first rolled back, goes on. Later batches add their rows with {@link recordAudit}.
 */
export const recordAuditOnce = (s: string): string => `
INSERT INTO ${s}.audit_log (id, at_utc, actor, action, target, rows_affected, details)
VALUES ($1, now(), $2, $3, $4, $5, $6)`;

/** Binds {@link recordAudit}: $1 id, $2 actor, $3 action, $4 target, $5 rows affected, $6 details. */
export function recordAuditParams(
  audit: CheckedAudit,
  rows: number,
  details: string | null,
): unknown[] {
  return [audit.id, audit.actor, audit.action, audit.target, rows, details];
}

/**
 * A page of the audit log, newest first from the cursor ($1 at, $2 id; both null for the first
 * page), filtered by actor ($3), action ($4), from ($5, inclusive) and to ($6, exclusive), at most
 * $7 rows: read backwards along `ix_audit_log_at (at_utc, id)`. A plain read (no lock).
 *
 * With `byTarget`, only the entries whose target is $8: read backwards along
 * `ix_audit_log_target (left(target, 255), at_utc, id)` (schema version 9) from the cursor, so a
 * page costs its own rows, not a walk of the log. The condition on the key's expression is what
 * lets the planner use the index (it matches an expression index only by the same expression);
 * the whole target is compared too, for targets longer than the key. Its own text, not an
 * `$8 IS NULL OR …` term: only a plan made for the bound values can fold such a term away, and an
 * OR left in a generic plan cannot seek the index.
 */
export const getAuditLog = (s: string, byTarget = false): string => `
SELECT a.* FROM ${s}.audit_log a
WHERE ($1::timestamptz IS NULL OR (a.at_utc, a.id COLLATE "C") < ($1::timestamptz, $2::text COLLATE "C"))
  AND ($3::text IS NULL OR a.actor = $3)
  AND ($4::text IS NULL OR a.action = $4)
  AND ($5::timestamptz IS NULL OR a.at_utc >= $5)
  AND ($6::timestamptz IS NULL OR a.at_utc < $6)${
    byTarget
      ? `
  AND left(a.target, ${AUDIT_TARGET_KEY_LENGTH}) = left($8::text, ${AUDIT_TARGET_KEY_LENGTH}) AND a.target = $8::text`
      : ''
  }
ORDER BY a.at_utc DESC, a.id COLLATE "C" DESC
LIMIT $7`;

/**
 * Binds {@link getAuditLog}: $1/$2 the cursor (at, id; null for the first page), $3 actor,
 * $4 action, $5 from, $6 to, $7 rows to read (one more than the page, to tell if another follows),
 * $8 the target (only with `byTarget`).
 */
export function getAuditLogParams(query: CheckedAuditQuery): unknown[] {
  const params: unknown[] = [
    query.after?.at ?? null,
    query.after?.id ?? null,
    query.actor,
    query.action,
    query.from,
    query.to,
    query.limit + 1,
  ];
  if (query.target !== null) params.push(query.target);
  return params;
}

/**
 * The confirmation secret: stores $1 unless a secret exists, and returns the stored one. `ON
 * CONFLICT DO UPDATE` (a no-op update of the row found) returns the row whichever call inserted
 * it: when two first calls race, the second waits for the first to commit and then updates and
 * returns that committed row ("an atomic INSERT or UPDATE outcome",
 * https://www.postgresql.org/docs/15/sql-insert.html#SQL-ON-CONFLICT). `DO NOTHING` followed by a
 * SELECT of the table in the same statement would not do: the SELECT reads the statement's
 * snapshot, taken before the first call committed, and finds no row.
 */
export const confirmationSecret = (s: string): string => `
INSERT INTO ${s}.settings (name, value) VALUES ('confirmation-secret', $1)
ON CONFLICT (name) DO UPDATE SET value = ${s}.settings.value
RETURNING value`;

/** Binds {@link confirmationSecret}: $1 the candidate secret stored when none exists. */
export function confirmationSecretParams(candidate: string): unknown[] {
  return [candidate];
}
