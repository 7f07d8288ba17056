import { ChokaQValidationError, ValidationIssue } from '../../errors';
import type { DlqFilter, PageQuery, SortKey } from '../../interfaces/job-view.interface';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../validation/limits';
import { filterIssues } from '../../validation/validate-filter';

/**
 * The sort keys each pillar accepts. Each maps to a column name in canonical (snake_case) form;
 * dialects translate it to their own spelling. Anything else is rejected, never interpolated.
 */
export const SORT_COLUMNS: Record<'hot' | 'archive' | 'dlq', Partial<Record<SortKey, string>>> = {
  hot: {
    createdAt: 'created_at_utc',
    enqueuedAt: 'enqueued_at_utc',
    scheduledAt: 'scheduled_at_utc',
    priority: 'priority',
    queue: 'queue',
    type: 'type',
    attempts: 'attempt_count',
  },
  archive: {
    createdAt: 'created_at_utc',
    enqueuedAt: 'enqueued_at_utc',
    finishedAt: 'finished_at_utc',
    priority: 'priority',
    queue: 'queue',
    type: 'type',
    attempts: 'attempt_count',
    duration: 'duration_ms',
  },
  dlq: {
    createdAt: 'created_at_utc',
    enqueuedAt: 'enqueued_at_utc',
    failedAt: 'failed_at_utc',
    priority: 'priority',
    queue: 'queue',
    type: 'type',
    attempts: 'attempt_count',
  },
};

/** Default sort per pillar: newest first. */
const DEFAULT_SORT: Record<'hot' | 'archive' | 'dlq', SortKey> = {
  hot: 'createdAt',
  archive: 'finishedAt',
  dlq: 'failedAt',
};

/** A validated page request. */
export interface NormalizedPage<F> {
  filter: F;
  page: number;
  pageSize: number;
  offset: number;
  /** Canonical snake_case column from {@link SORT_COLUMNS}. */
  sortColumn: string;
  sortDir: 'ASC' | 'DESC';
}

/**
 * Validates paging, sorting and the common filter fields; throws `ChokaQValidationError` naming
 * every bad field. The filter is returned unchanged otherwise.
 */
export function normalizePage<F extends object>(
  pillar: 'hot' | 'archive' | 'dlq',
  query: PageQuery<F> | undefined,
): NormalizedPage<F> {
  const issues: ValidationIssue[] = [];
  const q = query ?? {};
  const page = q.page ?? 1;
  const pageSize = q.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(page) || page < 1 || page > 1_000_000) {
    issues.push({ path: 'page', message: 'must be an integer from 1 to 1000000', value: page });
  }
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    issues.push({
      path: 'pageSize',
      message: `must be an integer from 1 to ${MAX_PAGE_SIZE}`,
      value: pageSize,
    });
  }
  const sortKey = q.sortBy ?? DEFAULT_SORT[pillar];
  // Own keys only: `constructor`, `__proto__` or `toString` would otherwise find Object.prototype's
  // members, pass as "known" and reach the SQL builder (a raw error instead of a validation one).
  const sortColumn = Object.hasOwn(SORT_COLUMNS[pillar], sortKey)
    ? SORT_COLUMNS[pillar][sortKey]
    : undefined;
  if (!sortColumn) {
    issues.push({
      path: 'sortBy',
      message: `must be one of ${Object.keys(SORT_COLUMNS[pillar]).join(', ')}`,
      value: q.sortBy,
    });
  }
  if (q.sortDir !== undefined && q.sortDir !== 'asc' && q.sortDir !== 'desc') {
    issues.push({ path: 'sortDir', message: "must be 'asc' or 'desc'", value: q.sortDir });
  }
  const filter = (q.filter ?? {}) as F;
  issues.push(...filterIssues(filter as DlqFilter));
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  return {
    filter,
    page,
    pageSize,
    offset: (page - 1) * pageSize,
    sortColumn: sortColumn!,
    sortDir: q.sortDir === 'asc' ? 'ASC' : 'DESC',
  };
}
