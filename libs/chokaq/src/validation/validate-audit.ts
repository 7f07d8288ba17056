import { createHash } from 'node:crypto';
import { uuidv7 } from '../common/uuid';
import { ChokaQValidationError, ValidationIssue } from '../errors';
import {
  AUDIT_ACTIONS,
  AuditAction,
  AuditLogQuery,
  AuditRequest,
} from '../interfaces/audit.interface';
import type { DlqFilter } from '../interfaces/job-view.interface';
import { AUDIT_LIMITS, CONFIRMATION, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './limits';
import { decodeListCursor, ListPosition } from './list-cursor';
import { assertActor } from './validate-args';
import { inStorableRange } from './validate-filter';

/*
 * The audit log's inputs: who acted and what the row says about the action (built here, once, so
 * the three dialects store the same row for the same call), the query of `getAuditLog`, and the
 * canonical form of a DLQ filter that both an audit row and a confirmation token carry.
 */

/** An audit row as the validating edge hands it to a dialect; the dialect adds time and rows. */
export interface CheckedAudit {
  /**
   * UUIDv7, given here: every batch of a bulk action adds its rows to the row of this id. For an
   * action confirmed by a token, a UUID (version 8) derived from the token instead.
   */
  readonly id: string;
  /**
   * True for an action confirmed by a token: its first batch must insert the row (never add to
   * one), so a token that already confirmed an action is refused (see {@link auditIdOfToken});
   * a dialect's later batches run with it cleared (`laterBatches` of `storage/shared/audit-log`).
   */
  readonly once: boolean;
  readonly actor: string;
  readonly action: AuditAction;
  readonly target: string | null;
  /** JSON text, or null. */
  readonly details: string | null;
}

const ACTIONS: ReadonlySet<unknown> = new Set(AUDIT_ACTIONS);

/** The actor recorded when a caller names none. */
export const DEFAULT_AUDIT_ACTOR = 'system';

/**
 * The audit row of an action, or null when the caller asked for none (`audit` undefined). The
 * action must be one of {@link AUDIT_ACTIONS}; the actor follows the rule of `createdBy`, default
 * {@link DEFAULT_AUDIT_ACTOR}. `target` is cut to `AUDIT_LIMITS.target` characters.
 */
export function auditRecord(
  audit: AuditRequest | undefined,
  target: string | null,
  details: Record<string, unknown> | null = null,
): CheckedAudit | null {
  if (audit === undefined) return null;
  if (audit === null || typeof audit !== 'object') {
    throw new ChokaQValidationError([
      { path: 'audit', message: 'must be { action, actor? }', value: audit },
    ]);
  }
  if (!ACTIONS.has(audit.action)) {
    throw new ChokaQValidationError([
      {
        path: 'audit.action',
        message: `must be one of ${AUDIT_ACTIONS.join(', ')}`,
        value: audit.action,
      },
    ]);
  }
  if (audit.confirmation !== undefined && typeof audit.confirmation !== 'string') {
    throw new ChokaQValidationError([
      { path: 'audit.confirmation', message: 'must be a string', value: audit.confirmation },
    ]);
  }
  const once = typeof audit.confirmation === 'string';
  return {
    id: once ? auditIdOfToken(audit.confirmation!) : uuidv7(),
    once,
    actor: assertActor(audit.actor, 'audit.actor') ?? DEFAULT_AUDIT_ACTOR,
    action: audit.action,
    target: target === null ? null : target.slice(0, AUDIT_LIMITS.target),
    details: details === null ? null : JSON.stringify(details),
  };
}

/**
 * The audit row id of the action a confirmation token confirms: the first 16 bytes of the token's
 * SHA-256 as a UUID of version 8 (RFC 9562, custom). One token, one row: the action's first batch
 * inserts it, and the primary key refuses a second action with the same token.
 */
export function auditIdOfToken(token: string): string {
  const bytes = createHash('sha256')
    .update(`chokaq-confirmation:${token}`)
    .digest()
    .subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x80;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The target of an action on a list of ids, and the ids its details keep (at most 100). */
export function idsTarget(ids: readonly string[]): {
  target: string;
  details: { ids: string[] };
} {
  return {
    target: ids.length === 1 ? ids[0] : `${ids.length} ids`,
    details: { ids: ids.slice(0, AUDIT_LIMITS.detailIds) },
  };
}

/** What an audit row keeps of a stored payload: its SHA-256 and its size, never the payload. */
export function payloadFingerprint(json: string): { payloadSha256: string; payloadBytes: number } {
  return {
    payloadSha256: createHash('sha256').update(json, 'utf8').digest('hex'),
    payloadBytes: Buffer.byteLength(json, 'utf8'),
  };
}

/**
 * A checked DLQ filter as canonical JSON: keys sorted, absent and empty-search fields left out,
 * times as ISO-8601, ids sorted. Two filters that select the same rows have the same text, so it
 * is what an audit row's target and a confirmation token carry.
 */
export function canonicalFilter(filter: DlqFilter): string {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(filter).sort() as (keyof DlqFilter)[]) {
    const value = filter[key];
    if (value === undefined || (key === 'search' && value === '')) continue;
    if (value instanceof Date) out[key] = value.toISOString();
    else if (key === 'ids' && Array.isArray(value)) out[key] = [...new Set(value)].sort();
    else out[key] = value;
  }
  return JSON.stringify(out);
}

/** A `getAuditLog` query after the edge. */
export interface CheckedAuditQuery {
  readonly actor: string | null;
  readonly action: AuditAction | null;
  /** Entries whose target is exactly this, or null for any. */
  readonly target: string | null;
  readonly from: Date | null;
  readonly to: Date | null;
  readonly limit: number;
  /** Where the page starts (exclusive), newest first; null for the first page. */
  readonly after: ListPosition | null;
}

const QUERY_KEYS = new Set(['actor', 'action', 'target', 'from', 'to', 'limit', 'cursor']);

/** Validates a `getAuditLog` query; one `ChokaQValidationError` names every bad field. */
export function assertAuditLogQuery(query: AuditLogQuery | undefined): CheckedAuditQuery {
  if (query !== undefined && (query === null || typeof query !== 'object')) {
    throw new ChokaQValidationError([
      { path: 'query', message: 'must be an object', value: query },
    ]);
  }
  const q = query ?? {};
  const issues: ValidationIssue[] = [];
  for (const key of Object.keys(q)) {
    if (!QUERY_KEYS.has(key)) {
      issues.push({
        path: key,
        message: 'is not an audit query field (actor, action, target, from, to, limit, cursor)',
        value: (q as Record<string, unknown>)[key],
      });
    }
  }
  let actor: string | null = null;
  try {
    actor = assertActor(q.actor);
  } catch (error) {
    if (!(error instanceof ChokaQValidationError)) throw error;
    issues.push(...error.issues);
  }
  if (q.action !== undefined && !ACTIONS.has(q.action)) {
    issues.push({
      path: 'action',
      message: `must be one of ${AUDIT_ACTIONS.join(', ')}`,
      value: q.action,
    });
  }
  // The column's width; NUL, which PostgreSQL's text cannot hold, is refused like everywhere else.
  const target = q.target;
  if (
    target !== undefined &&
    (typeof target !== 'string' ||
      target.length < 1 ||
      target.length > AUDIT_LIMITS.target ||
      target.includes('\u0000'))
  ) {
    issues.push({
      path: 'target',
      message: `must be a string of 1–${AUDIT_LIMITS.target} characters without NUL`,
      value: target,
    });
  }
  for (const key of ['from', 'to'] as const) {
    const value = q[key];
    if (value !== undefined && !(value instanceof Date && inStorableRange(value.getTime()))) {
      issues.push({ path: key, message: 'must be a valid Date from year 1 to year 9999', value });
    }
  }
  const limit = q.limit ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    issues.push({
      path: 'limit',
      message: `must be an integer from 1 to ${MAX_PAGE_SIZE}`,
      value: q.limit,
    });
  }
  let after: ListPosition | null = null;
  if (q.cursor !== undefined) {
    const position = decodeListCursor(q.cursor, 'audit', 'newest');
    if ('path' in position) issues.push(position);
    else after = position;
  }
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  return {
    actor,
    action: q.action ?? null,
    target: target ?? null,
    from: q.from ?? null,
    to: q.to ?? null,
    limit,
    after,
  };
}

/**
 * The tolerance of a confirmed bulk action: a fraction from 0 to `CONFIRMATION.maxTolerance`
 * (0.1, i.e. 10 %), default 0 (the count must not have changed).
 */
export function assertTolerance(value: unknown, path = 'confirm.tolerance'): number {
  if (value === undefined) return 0;
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < 0 ||
    value > CONFIRMATION.maxTolerance
  ) {
    throw new ChokaQValidationError([
      {
        path,
        message: `must be a number from 0 to ${CONFIRMATION.maxTolerance} (a fraction of the previewed count)`,
        value,
      },
    ]);
  }
  return value;
}
