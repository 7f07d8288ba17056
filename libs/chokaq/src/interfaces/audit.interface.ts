/**
 * What the audit log records: every mutation of `ChokaQAdmin`, written by the storage in the same
 * transaction as the change it describes.
 *
 * @publicApi
 */
export const AUDIT_ACTIONS = [
  'queue.pause',
  'queue.resume',
  'queue.activate',
  'queue.deactivate',
  'queue.update',
  'job.cancel',
  'job.update',
  'dlq.resurrect',
  'dlq.resurrect-many',
  'dlq.resurrect-by-filter',
  'dlq.purge',
  'dlq.purge-by-filter',
  'retention.run',
  'recurring.upsert',
  'recurring.pause',
  'recurring.resume',
  'recurring.remove',
  'recurring.trigger',
] as const;

/** One of {@link AUDIT_ACTIONS}. @publicApi */
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * Asks a storage mutation to record itself in the audit log (the last argument of each audited
 * `JobStorage` method). Without it nothing is recorded: the runtime's own moves are not operator
 * actions.
 *
 * @publicApi
 */
export interface AuditRequest {
  action: AuditAction;
  /** Who acted: at most 100 characters without NUL (the rule of `createdBy`); default `'system'`. */
  actor?: string;
  /**
   * The confirmation token of a bulk action by filter: the action's audit row is then keyed by the
   * token and inserted by its first batch, so a second action with the same token, even while the
   * first still runs, is refused (`ChokaQConfirmationError`, reason `used`) having changed nothing.
   */
  confirmation?: string;
}

/** One row of the audit log. @publicApi */
export interface AuditEntry {
  /** A UUID (version 7) given when the action began. */
  id: string;
  /** When the action's first write committed (database clock). */
  atUtc: Date;
  actor: string;
  action: AuditAction;
  /**
   * What it acted on: a queue name, a job id, a recurring job's name, `"<n> ids"` for a list of
   * ids (the ids are in `details.ids`, at most 100), or the DLQ filter as JSON for a bulk action by
   * filter. Null for a retention run.
   */
  target: string | null;
  /**
   * Rows the action changed (jobs moved or deleted, rows removed by retention, 1 for a queue or
   * recurring job that changed, 0 when nothing matched). A bulk action that runs in several
   * batches adds each batch's rows in the batch's own transaction, so the figure is always what
   * committed.
   */
  rowsAffected: number;
  /**
   * The edit made, as stored JSON: a queue's patch; a resurrect's edits with the new payload as its
   * SHA-256 and size in bytes (`payloadSha256`, `payloadBytes`), never the payload itself; a bulk
   * action's `max`; a retention run's windows and its rows per table. Null when there is none.
   */
  details: Record<string, unknown> | null;
}

/** Arguments of `getAuditLog`: newest first, keyset pages. @publicApi */
export interface AuditLogQuery {
  actor?: string;
  action?: AuditAction;
  /**
   * Entries whose `target` is exactly this string (1–4,000 characters without NUL; on SQL Server
   * the comparison follows the database collation, as every text comparison there does). A job's
   * id is the target of `job.cancel`, `dlq.resurrect`, `dlq.resurrect-many` and `dlq.purge` when
   * the action named that one job: an action on several ids has the target `"<n> ids"` (the ids in
   * `details.ids`), and is not found by one of them. A recurring job's trigger has the recurring
   * job's name as target (the enqueued job's id is `details.jobId`). Served by an index on the
   * target, so it costs the same whatever the log's size.
   */
  target?: string;
  /** Entries at or after this instant. */
  from?: Date;
  /** Entries before this instant. */
  to?: Date;
  /** Rows per page, 1–1,000 (default 50). */
  limit?: number;
  /** The previous page's `nextCursor`. */
  cursor?: string;
}

/** A page of the audit log. @publicApi */
export interface AuditLogPage {
  items: AuditEntry[];
  /** Pass back as `cursor` for the next (older) page; null on the last page. */
  nextCursor: string | null;
}

/** The bulk DLQ actions by filter that need a confirmation token. @publicApi */
export type BulkDlqAction = 'resurrect' | 'purge';

/**
 * What `ChokaQAdmin.previewDlq` returns: what the action would touch, and the token that
 * confirms it (valid for 5 minutes, for this action and this filter only).
 *
 * @publicApi
 */
export interface DlqActionPreview {
  action: BulkDlqAction;
  /** DLQ rows the filter matches now. */
  matched: number;
  /** Rows the action would affect: `min(matched, max)`. */
  willAffect: number;
  /** Up to 20 ids among them, oldest failure first. */
  sampleIds: string[];
  /** Pass to the action as `confirm.token`. */
  token: string;
  /** When the token expires (database clock). */
  expiresAt: Date;
}

/** The confirmation a bulk DLQ action by filter requires. @publicApi */
export interface BulkConfirmation {
  /** The token of a `previewDlq` of the same action and filter. */
  token: string;
  /**
   * How far the rows the action would affect now may differ from the previewed `willAffect`, as
   * a fraction of it: 0 (the default) to 0.1. Beyond it the action refuses and changes nothing.
   */
  tolerance?: number;
}
