import { BadRequestException } from '@nestjs/common';
import { ChokaQValidationError } from '../errors';
import type {
  ActiveFilter,
  DlqFilter,
  HistoryFilter,
  ListOrder,
  ListQuery,
} from '../interfaces/job-view.interface';
import type { AuditLogQuery } from '../interfaces/audit.interface';
import type { PendingEdits } from '../interfaces/job.interface';

/**
 * The Deck's HTTP inputs, turned into the operator core's arguments. Only the shape is read
 * here (strings to numbers and dates); the core's validating edge checks the values, and its
 * `ChokaQValidationError` becomes a 400 with the issues.
 */
export type QueryParams = Record<string, string | string[] | undefined>;

function one(params: QueryParams, name: string): string | undefined {
  const value = params[name];
  if (Array.isArray(value)) {
    throw new ChokaQValidationError([{ path: name, message: 'must be given once', value }]);
  }
  return value === undefined || value === '' ? undefined : value;
}

function date(params: QueryParams, name: string): Date | undefined {
  const text = one(params, name);
  return text === undefined ? undefined : isoDate(text, name, 'must be an ISO 8601 date');
}

/** `value` as an instant when it is an ISO 8601 string, else a 400 at `path` saying `rule`. */
function isoDate(value: unknown, path: string, rule: string): Date {
  const at = typeof value === 'string' ? new Date(value) : undefined;
  if (at === undefined || Number.isNaN(at.getTime())) {
    throw new ChokaQValidationError([{ path, message: rule, value }]);
  }
  return at;
}

function int(params: QueryParams, name: string): number | undefined {
  const text = one(params, name);
  if (text === undefined) return undefined;
  if (!/^-?\d+$/.test(text)) {
    throw new ChokaQValidationError([
      { path: name, message: 'must be a whole number', value: text },
    ]);
  }
  return Number(text);
}

function defined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function page<F>(params: QueryParams, filter: F): ListQuery<F> {
  const order = one(params, 'order') as ListOrder | undefined;
  return defined({ filter, limit: int(params, 'limit'), cursor: one(params, 'cursor'), order });
}

export function historyFilter(params: QueryParams): HistoryFilter {
  return defined({
    queue: one(params, 'queue'),
    type: one(params, 'type'),
    tag: one(params, 'tag'),
    search: one(params, 'search'),
    from: date(params, 'from'),
    to: date(params, 'to'),
  });
}

export function dlqFilter(params: QueryParams): DlqFilter {
  return defined({
    ...historyFilter(params),
    reason: int(params, 'reason') as DlqFilter['reason'],
  });
}

export function activeQuery(params: QueryParams): ListQuery<ActiveFilter> {
  const status = int(params, 'status') as ActiveFilter['status'];
  return page(params, defined({ ...historyFilter(params), status }));
}

export function archiveQuery(params: QueryParams): ListQuery<HistoryFilter> {
  return page(params, historyFilter(params));
}

export function dlqQuery(params: QueryParams): ListQuery<DlqFilter> {
  return page(params, dlqFilter(params));
}

export function auditQuery(params: QueryParams): AuditLogQuery {
  return defined({
    actor: one(params, 'actor'),
    action: one(params, 'action') as AuditLogQuery['action'],
    from: date(params, 'from'),
    to: date(params, 'to'),
    limit: int(params, 'limit'),
    cursor: one(params, 'cursor'),
  });
}

/** A JSON body's object, or a 400. */
export function body(value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new BadRequestException('The request body must be a JSON object.');
  }
  return value as Record<string, unknown>;
}

/** A DLQ filter sent in a JSON body: the same fields as the query string, dates as ISO strings. */
export function dlqFilterFromBody(value: unknown): DlqFilter {
  const raw = value === undefined ? {} : body(value);
  const params: QueryParams = {};
  for (const [key, v] of Object.entries(raw)) {
    if (key === 'ids') continue;
    if (typeof v !== 'string') {
      throw new ChokaQValidationError([
        { path: `filter.${key}`, message: 'must be a string', value: v },
      ]);
    }
    params[key] = v;
  }
  const filter = dlqFilter(params);
  return raw.ids === undefined ? filter : { ...filter, ids: raw.ids as string[] };
}

/**
 * `updatePending`'s edits sent as JSON: `payload`, `priority` and `tags` as given, `runAt` an ISO
 * 8601 string or `"now"`. Fields it does not know are refused, so a typo is not a silent no-op.
 */
export function pendingEditsFromBody(value: unknown): PendingEdits {
  const raw = body(value);
  const unknown = Object.keys(raw).filter((k) => !PENDING_BODY_FIELDS.has(k));
  if (unknown.length > 0) {
    throw new ChokaQValidationError(
      unknown.map((k) => ({ path: k, message: 'is not an editable field', value: raw[k] })),
    );
  }
  const { runAt, ...rest } = raw as PendingEdits & { runAt?: unknown };
  if (runAt === undefined || runAt === 'now') return { ...rest, runAt };
  return { ...rest, runAt: isoDate(runAt, 'runAt', 'must be an ISO 8601 date or "now"') };
}

const PENDING_BODY_FIELDS: ReadonlySet<string> = new Set(['payload', 'priority', 'tags', 'runAt']);
