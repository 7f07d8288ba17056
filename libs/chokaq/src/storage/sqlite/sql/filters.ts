/** Predicates built per request from a filter (DLQ, history, active), each value a named parameter. */
import {
  ActiveFilter,
  DlqFilter,
  HistoryFilter,
  Pillar,
} from '../../../interfaces/job-view.interface';
import { escapeLike } from '../../shared/escape-like';
import { LIST_SORT_KEY } from '../../shared/page';

/** A WHERE clause and its named parameters. */
export interface SqlWhere {
  sql: string;
  params: Record<string, unknown>;
}

/** Hot-table status filters as literals (validated 0/1/2/7), so the partial indexes stay usable. */
export const STATUS_LITERAL: Record<number, string> = {
  0: 'status = 0',
  1: 'status = 1',
  2: 'status = 2',
  7: 'status = 7',
};

/** Error text columns a search looks in: the DLQ error and the last retry error. */
const ERROR_COLUMNS = {
  hot: ['last_error'],
  archive: ['last_error'],
  dlq: ['error_details', 'last_error'],
} as const;

/** The tag filter: one tag, exactly, between the commas of the stored `,a,b,` string. */
export function tagPredicate(tag: string, params: Record<string, unknown>): string {
  params.f_tag = escapeLike(tag);
  return `tags LIKE '%,' || @f_tag || ',%' ESCAPE '\\'`;
}

/**
 * The search filter: a substring of the id, the type, the payload or the error text, `%`, `_`,
 * `[` matched literally; LIKE is case-insensitive for ASCII letters only.
 */
export function searchPredicate(
  pillar: Pillar,
  search: string,
  params: Record<string, unknown>,
): string {
  params.f_search = `%${escapeLike(search)}%`;
  const columns = ['id', 'type', 'payload', ...ERROR_COLUMNS[pillar]];
  return `(${columns.map((c) => `${c} LIKE @f_search ESCAPE '\\'`).join(' OR ')})`;
}

function commonFilter(
  pillar: Pillar,
  filter: { queue?: string; type?: string; tag?: string; search?: string },
  where: string[],
  params: Record<string, unknown>,
): void {
  if (filter.queue !== undefined) {
    where.push('queue = @f_queue');
    params.f_queue = filter.queue;
  }
  if (filter.type !== undefined) {
    where.push('type = @f_type');
    params.f_type = filter.type;
  }
  if (filter.tag !== undefined) where.push(tagPredicate(filter.tag, params));
  if (filter.search !== undefined && filter.search !== '') {
    where.push(searchPredicate(pillar, filter.search, params));
  }
}

export function finish(where: string[], params: Record<string, unknown>): SqlWhere {
  return { sql: where.length > 0 ? where.join(' AND ') : '1 = 1', params };
}

/** WHERE clause of a bulk DLQ action, its preview or the error families (dates on `failed_at_utc`). */
export function dlqWhere(filter: DlqFilter): SqlWhere {
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  commonFilter('dlq', filter, where, params);
  dateRange('failed_at_utc', filter, where, params);
  if (filter.reason !== undefined) {
    where.push('failure_reason = @f_reason');
    params.f_reason = filter.reason;
  }
  if (filter.ids !== undefined) {
    where.push('id IN (SELECT value FROM json_each(@f_ids))');
    params.f_ids = JSON.stringify(filter.ids);
  }
  return finish(where, params);
}

export function dateRange(
  column: 'enqueued_at_utc' | 'finished_at_utc' | 'failed_at_utc',
  filter: HistoryFilter,
  where: string[],
  params: Record<string, unknown>,
): void {
  if (filter.from !== undefined) {
    where.push(`${column} >= @f_from`);
    params.f_from = filter.from.getTime();
  }
  if (filter.to !== undefined) {
    where.push(`${column} < @f_to`);
    params.f_to = filter.to.getTime();
  }
}

/**
 * WHERE clause of `countExactly`: the filter of the pillar's list (the time range on its sort key)
 * without a cursor; the DLQ's takes `ids` too, as its bulk actions do.
 */
export function countWhere(pillar: Pillar, filter: ActiveFilter & DlqFilter): SqlWhere {
  if (pillar === 'dlq') return dlqWhere(filter);
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  commonFilter(pillar, filter, where, params);
  if (pillar === 'hot' && filter.status !== undefined) where.push(STATUS_LITERAL[filter.status]);
  dateRange(LIST_SORT_KEY[pillar], filter, where, params);
  return finish(where, params);
}
