import { ChokaQConfirmationError } from '../../errors';
import type { AuditLogPage } from '../../interfaces/audit.interface';
import type { RetentionResult } from '../../interfaces/job.interface';
import { encodeListCursor } from '../../validation/list-cursor';
import type { CheckedAuditQuery } from '../../validation/validate-audit';
import type { Audit } from '../dialect-job-storage';
import { mapAuditRow } from './row-mapper';

/*
 * What the three dialects share of the audit log: the details a retention run stores batch by
 * batch, the audit of a bulk action's later batches, what a failed write of a token's row means,
 * and the page a read of `limit + 1` rows (newest first) makes.
 */

/** A retention run's counts before its first batch: nothing removed from any table yet. */
export function nothingRemoved(): RetentionResult {
  return {
    archive: 0,
    dlq: 0,
    metricBuckets: 0,
    workers: 0,
    audit: 0,
    dedupeKeys: 0,
    groups: 0,
    batches: 0,
  };
}

/**
 * The details of a retention run's audit row after a batch: the windows the edge stored, and the
 * rows removed so far per table (`removed`). Null when the run records no audit row.
 */
export function retentionDetails(audit: Audit, removed: RetentionResult): string | null {
  if (audit === null) return null;
  const windows = audit.details === null ? {} : (JSON.parse(audit.details) as object);
  return JSON.stringify({ ...windows, removed });
}

/**
 * The audit of a bulk action's batches after its first: an action confirmed by a token
 * (`audit.once`) inserts its row in its first batch, so a token that already confirmed one is
 * refused by the row's primary key; every later batch adds its rows to that row, as any audit does.
 */
export function laterBatches(audit: Audit): Audit {
  return audit?.once ? { ...audit, once: false } : audit;
}

/**
 * What an error of an audit row's write means: for the first batch of an action confirmed by a
 * token (`audit.once`), a duplicate key (`isDuplicateKey`, the dialect's test) is the row of an
 * action the token already confirmed, so the action is refused (`ChokaQConfirmationError`, reason
 * `used`) and its transaction rolls back; any other error is itself.
 */
export function auditWriteError(
  error: unknown,
  audit: Audit,
  isDuplicateKey: (error: unknown) => boolean,
): unknown {
  return audit?.once && isDuplicateKey(error) ? new ChokaQConfirmationError('used') : error;
}

/** The page `rows` (up to `limit + 1`, newest first) make; the cursor is the last row returned. */
export function toAuditPage(
  query: CheckedAuditQuery,
  rows: readonly Record<string, unknown>[],
): AuditLogPage {
  const items = rows.slice(0, query.limit).map(mapAuditRow);
  const last = items[items.length - 1];
  return {
    items,
    nextCursor:
      rows.length > query.limit && last
        ? encodeListCursor('audit', 'newest', { at: last.atUtc.toISOString(), id: last.id })
        : null,
  };
}
