/** The audit log of operator actions, and the confirmation secret of bulk actions. */
import { SQLITE_NOW_MS, SqliteTables } from './fragments';

/** The audit page of `getAuditLog`, with or without the exact-target condition. */
function auditLogStatement(audit: string, byTarget: boolean): string {
  return `SELECT * FROM ${audit}
      WHERE (@at IS NULL OR (at_utc, id) < (@at, @id))
        AND (@actor IS NULL OR actor = @actor)
        AND (@action IS NULL OR action = @action)
        AND (@from IS NULL OR at_utc >= @from)
        AND (@to IS NULL OR at_utc < @to)${byTarget ? '\n        AND target = @target' : ''}
      ORDER BY at_utc DESC, id DESC
      LIMIT @limit`;
}

/** The audit row of an action, and the confirmation secret. */
export function auditStatements(t: SqliteTables) {
  const { audit, settings } = t;
  return {
    /**
     * recordAudit: the audit row of an action, in the BEGIN IMMEDIATE transaction of the change it
     * records. A later batch of the same action (same id) adds its rows and, when it brings
     * details, replaces them (a retention run's counts so far).
     */
    recordAudit: `INSERT INTO ${audit} (id, at_utc, actor, action, target, rows_affected, details)
      VALUES (@id, ${SQLITE_NOW_MS}, @actor, @action, @target, @rows, @details)
      ON CONFLICT (id) DO UPDATE SET
        rows_affected = rows_affected + excluded.rows_affected,
        details = coalesce(excluded.details, details)`,

    /**
     * recordAudit, first batch of an action confirmed by a token: a plain INSERT, so the primary
     * key refuses a token that already confirmed an action (SQLITE_CONSTRAINT_PRIMARYKEY).
     */
    recordAuditOnce: `INSERT INTO ${audit} (id, at_utc, actor, action, target, rows_affected, details)
      VALUES (@id, ${SQLITE_NOW_MS}, @actor, @action, @target, @rows, @details)`,

    /** confirmationSecret, step 1: stores the candidate unless a secret exists. */
    confirmationSecretInsert: `INSERT INTO ${settings} (name, value)
      VALUES ('confirmation-secret', @candidate) ON CONFLICT (name) DO NOTHING`,

    /** confirmationSecret, step 2 (same transaction): the stored secret. */
    confirmationSecret: `SELECT value FROM ${settings} WHERE name = 'confirmation-secret'`,
  };
}

/** Pages of the audit log. */
export function auditReadStatements(t: SqliteTables) {
  const { audit } = t;
  return {
    /**
     * getAuditLog: newest first from the cursor (`@at`, `@id`; null for the first page), filtered
     * by actor, action and time, at most `@limit` rows, backwards along
     * `audit_log_at_ix (at_utc, id)`.
     */
    getAuditLog: auditLogStatement(audit, false),

    /**
     * getAuditLog by target: the entries whose target is `@target`, as {@link getAuditLog},
     * backwards along `audit_log_target_ix (target, at_utc, id)` (schema version 7) from the
     * cursor. Its own text: SQLite plans a statement once, before any value is bound, so an
     * `@target IS NULL OR …` term could not use the index.
     */
    getAuditLogByTarget: auditLogStatement(audit, true),
  };
}
