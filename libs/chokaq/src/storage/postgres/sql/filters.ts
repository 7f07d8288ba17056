/**
 * Predicates built per request from a filter (DLQ, history, active): each value is bound as the
 * next `$n` of the caller's parameter list as the predicate is built, so a statement and its values
 * come from one place.
 */
import { ActiveFilter, DlqFilter, HistoryFilter } from '../../../interfaces/job-view.interface';
import { escapeLike } from '../../shared/escape-like';

/** Table of each pillar. */
export const PILLAR_TABLE = { hot: 'jobs_hot', archive: 'jobs_archive', dlq: 'jobs_dlq' } as const;

/** Date column the `from`/`to` filters of bulk DLQ actions and error families apply to. */
const PILLAR_DATE = {
  hot: 'enqueued_at_utc',
  archive: 'finished_at_utc',
  dlq: 'failed_at_utc',
} as const;

/** Error text columns a search looks in: the DLQ error and the last retry error. */
const ERROR_COLUMNS = {
  hot: ['last_error'],
  archive: ['last_error'],
  dlq: ['error_details', 'last_error'],
} as const;

/** Appends `value` to `params` and returns its placeholder. */
export function bind(params: unknown[], value: unknown): string {
  params.push(value);
  return `$${params.length}`;
}

/** The tag filter: one tag, exactly, inside the stored `,a,b,` string. */
export function tagPredicate(column: string, tag: string, params: unknown[]): string {
  return `${column} LIKE '%,' || ${bind(params, escapeLike(tag))} || ',%' ESCAPE '\\'`;
}

/**
 * The search filter: a case-insensitive substring (ILIKE, like SQL Server's and SQLite's default
 * LIKE) of the id, the type, the payload or the error text, with `%`, `_`, `[` matched literally.
 */
export function searchPredicate(
  pillar: 'hot' | 'archive' | 'dlq',
  c: (column: string) => string,
  search: string,
  params: unknown[],
): string {
  const term = bind(params, `%${escapeLike(search)}%`);
  const columns = ['id', 'type', 'payload', ...ERROR_COLUMNS[pillar]];
  return `(${columns.map((col) => `${c(col)} ILIKE ${term} ESCAPE '\\'`).join(' OR ')})`;
}

/**
 * Builds the WHERE clause of a bulk DLQ action, its preview, the error families or `countExactly`
 * (any pillar, with the filter of that pillar's list, without a cursor), appending
 * values to `params` (every value is a parameter; the hot-table status is a validated literal 0–2 or 7
 * so partial indexes apply). Tag: exact match inside the `,a,b,` string; search: see
 * {@link searchPredicate}. `alias` prefixes the columns.
 */
export function filterClause(
  pillar: 'hot' | 'archive' | 'dlq',
  filter: ActiveFilter & DlqFilter,
  params: unknown[],
  alias: string,
): string {
  const p = (value: unknown): string => bind(params, value);
  const c = (column: string): string => `${alias}.${column}`;
  const parts: string[] = [];
  if (filter.queue !== undefined) parts.push(`${c('queue')} = ${p(filter.queue)}`);
  if (filter.type !== undefined) parts.push(`${c('type')} = ${p(filter.type)}`);
  if (pillar === 'hot' && filter.status !== undefined) {
    parts.push(`${c('status')} = ${statusLiteral(filter.status)}`);
  }
  if (filter.tag !== undefined) parts.push(tagPredicate(c('tags'), filter.tag, params));
  if (filter.search !== undefined && filter.search !== '') {
    parts.push(searchPredicate(pillar, c, filter.search, params));
  }
  // The time range is on each list's sort key: enqueued (hot), finished (archive), failed (DLQ).
  const dateColumn = c(PILLAR_DATE[pillar]);
  const history = filter as HistoryFilter;
  if (history.from !== undefined) parts.push(`${dateColumn} >= ${p(history.from)}::timestamptz`);
  if (history.to !== undefined) parts.push(`${dateColumn} < ${p(history.to)}::timestamptz`);
  if (pillar === 'dlq') {
    if (filter.reason !== undefined)
      parts.push(`${c('failure_reason')} = ${p(filter.reason)}::smallint`);
    if (filter.ids !== undefined) parts.push(`${c('id')} = ANY (${p([...filter.ids])}::text[])`);
  }
  return parts.length === 0 ? 'TRUE' : parts.join(' AND ');
}

/** A validated hot status (0, 1, 2 or 7) as a literal, so the partial indexes apply. */
export function statusLiteral(value: unknown): number {
  const status = Number(value);
  if (![0, 1, 2, 7].includes(status)) throw new Error(`Unvalidated hot status ${String(value)}`);
  return status;
}
