/** Predicates built per request from a filter (DLQ, history, active), each value a typed parameter. */
import { ActiveFilter, DlqFilter, HistoryFilter } from '../../../interfaces/job-view.interface';
import { escapeLike } from '../../shared/escape-like';
import { ParamList } from '../mssql-params';
import { SEARCH_COLLATION } from '../mssql.schema';
import { ID_JSON } from './fragments';

export function whereClause(conditions: readonly string[]): string {
  return conditions.length === 0 ? '' : ` WHERE ${conditions.join(' AND ')}`;
}

/** Error text columns a search looks in: the DLQ error and the last retry error. */
const ERROR_COLUMNS = {
  hot: ['LastError'],
  archive: ['LastError'],
  dlq: ['ErrorDetails', 'LastError'],
} as const;

/** The tag filter: one tag, exactly, inside the stored `,a,b,` string. */
export function tagPredicate(p: ParamList, a: string, tag: string): string {
  return `${a}.Tags LIKE ${p.nvarchar(`%,${escapeLike(tag)},%`, 4000)} ESCAPE '\\'`;
}

/**
 * The search filter: a substring of the id, the type, the payload or the error text, `%`, `_`,
 * `[` matched literally, case-insensitive in {@link SEARCH_COLLATION} whatever the columns'
 * collation (a binary-key install's `Type` is case-sensitive).
 */
export function searchPredicate(
  p: ParamList,
  a: string,
  pillar: 'hot' | 'archive' | 'dlq',
  search: string,
): string {
  const term = p.nvarchar(`%${escapeLike(search)}%`, 4000);
  const columns = ['Id', 'Type', 'Payload', ...ERROR_COLUMNS[pillar]];
  return `(${columns.map((col) => `${a}.${col} COLLATE ${SEARCH_COLLATION} LIKE ${term} ESCAPE '\\'`).join(' OR ')})`;
}

/**
 * Filter conditions of bulk DLQ actions, their preview, the error families and `countExactly`
 * (any pillar, with the filter of that pillar's list, without a cursor); every value a parameter.
 */
export function historyWhere(
  p: ParamList,
  a: string,
  pillar: 'hot' | 'archive' | 'dlq',
  filter: ActiveFilter & HistoryFilter & DlqFilter,
): string[] {
  const out: string[] = [];
  if (filter.queue !== undefined) out.push(`${a}.Queue = ${p.varchar(filter.queue, 255)}`);
  if (filter.type !== undefined) out.push(`${a}.Type = ${p.nvarchar(filter.type, 255)}`);
  if (pillar === 'hot' && filter.status !== undefined) {
    // A literal, not a parameter: validated to 0, 1, 2 or 7, and the filtered indexes need it.
    out.push(`${a}.Status = ${Number(filter.status)}`);
  }
  if (filter.tag !== undefined) out.push(tagPredicate(p, a, filter.tag));
  if (filter.search !== undefined) out.push(searchPredicate(p, a, pillar, filter.search));
  // The time range is on each list's sort key: enqueued (hot), finished (archive), failed (DLQ).
  const col = { hot: 'EnqueuedAtUtc', archive: 'FinishedAtUtc', dlq: 'FailedAtUtc' }[pillar];
  if (filter.from !== undefined) out.push(`${a}.${col} >= ${p.instant(filter.from)}`);
  if (filter.to !== undefined) out.push(`${a}.${col} < ${p.instant(filter.to)}`);
  if (pillar === 'dlq') {
    if (filter.reason !== undefined) out.push(`${a}.FailureReason = ${p.int(filter.reason)}`);
    if (filter.ids !== undefined) {
      out.push(`${a}.Id IN (SELECT j.Id FROM OPENJSON(${p.json(filter.ids)}) ${ID_JSON} AS j)`);
    }
  }
  return out;
}

export const PILLAR_TABLE = { hot: 'hot', archive: 'archive', dlq: 'dlq' } as const;
