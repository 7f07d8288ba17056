import { ChokaQValidationError, ValidationIssue } from '../errors';
import type {
  ActiveFilter,
  DlqFilter,
  ListOrder,
  ListQuery,
  Pillar,
} from '../interfaces/job-view.interface';
import { DEFAULT_PAGE_SIZE, MAX_LIST_SCAN, MAX_PAGE_SIZE } from './limits';
import { decodeListCursor, ListPosition } from './list-cursor';
import { filterIssues } from './validate-filter';

/** A list request as the validating edge hands it to a dialect. */
export interface ListRequest<F> {
  /** The list: the hot table (`listActive`), the archive or the DLQ. */
  readonly pillar: Pillar;
  readonly filter: F;
  /** Rows per page, 1 to `MAX_PAGE_SIZE`. */
  readonly limit: number;
  readonly order: ListOrder;
  /** Where the page starts (exclusive), from the caller's cursor; null for the first page. */
  readonly after: ListPosition | null;
  /**
   * `MAX_LIST_SCAN` when the filter has a part no index serves (a search term, a tag): the page
   * then reads at most that many rows from where it starts. Null otherwise.
   */
  readonly scanBound: number | null;
}

/** The fields of a list query; any other is refused (the offset pages' `page`, `sortBy`…). */
const QUERY_KEYS = new Set(['filter', 'limit', 'cursor', 'order']);

/**
 * Checks a list query of `pillar` and returns it normalised (defaults applied, cursor read);
 * throws one `ChokaQValidationError` naming every bad field: `limit`, `order`, `cursor`, a key the
 * query does not have, and the filter's fields (`filter.*`, the rules of `validate-filter.ts`).
 */
export function assertListQuery<F extends object>(
  pillar: Pillar,
  query: ListQuery<F> | undefined | null,
): ListRequest<F> {
  if (typeof query !== 'object' && query !== undefined) {
    throw new ChokaQValidationError([
      { path: 'query', message: 'must be an object', value: query },
    ]);
  }
  const q: ListQuery<F> = query ?? {};
  const issues: ValidationIssue[] = [];
  for (const key of Object.keys(q)) {
    if (!QUERY_KEYS.has(key)) {
      issues.push({
        path: key,
        message: 'is not a list query field (lists take filter, limit, cursor and order)',
        value: (q as Record<string, unknown>)[key],
      });
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
  const order = q.order ?? 'newest';
  if (order !== 'newest' && order !== 'oldest') {
    issues.push({ path: 'order', message: "must be 'newest' or 'oldest'", value: q.order });
  }
  let after: ListPosition | null = null;
  if (q.cursor !== undefined && (order === 'newest' || order === 'oldest')) {
    const position = decodeListCursor(q.cursor, pillar, order);
    if ('path' in position) issues.push(position);
    else after = position;
  }
  const filter = (q.filter ?? {}) as F;
  issues.push(...filterIssues(filter as DlqFilter));
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  const f = filter as ActiveFilter;
  const unindexed = (f.search !== undefined && f.search !== '') || f.tag !== undefined;
  return {
    pillar,
    filter,
    limit,
    order,
    after,
    scanBound: unindexed ? MAX_LIST_SCAN : null,
  };
}
