import { ChokaQValidationError, ValidationIssue } from '../../errors';
import { DlqFilter, HistoryFilter, MAX_PAGE_SIZE, PageQuery, SortKey } from '../job-storage';
import { isUuid } from './uuid';
import { isFailureReason } from './validate-args';

/** Default page size of reads. */
export const DEFAULT_PAGE_SIZE = 50;

/** Longest search term accepted by page reads. */
export const MAX_SEARCH_LENGTH = 200;

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

/** Year 1 to year 9999: what every dialect's time type holds (PostgreSQL rejects earlier than 4714 BC raw). */
const MIN_FILTER_TIME = Date.parse('0001-01-01T00:00:00Z');
const MAX_FILTER_TIME = Date.parse('9999-12-31T23:59:59.999Z');

function inStorableRange(t: number): boolean {
  return Number.isFinite(t) && t >= MIN_FILTER_TIME && t <= MAX_FILTER_TIME;
}

/** Validates a DLQ filter used by bulk actions; throws on any bad field. */
export function assertDlqFilter(filter: DlqFilter | undefined): DlqFilter {
  const issues = filterIssues(filter ?? {});
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  return filter ?? {};
}

function filterIssues(filter: DlqFilter & HistoryFilter & { status?: unknown }): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (filter === null || typeof filter !== 'object') {
    return [{ path: 'filter', message: 'must be an object', value: filter }];
  }
  for (const key of ['queue', 'type', 'tag', 'search'] as const) {
    const value = filter[key];
    if (value === undefined) continue;
    const max = key === 'search' ? MAX_SEARCH_LENGTH : 255;
    if (
      typeof value !== 'string' ||
      value.length > max ||
      value.includes('\u0000') ||
      !value.isWellFormed()
    ) {
      issues.push({
        path: `filter.${key}`,
        message: `must be a string of at most ${max} characters without NUL or lone surrogates`,
        value,
      });
    }
  }
  for (const key of ['from', 'to'] as const) {
    const value = filter[key];
    if (value !== undefined && !(value instanceof Date && inStorableRange(value.getTime()))) {
      issues.push({
        path: `filter.${key}`,
        message: 'must be a valid Date from year 1 to year 9999',
        value,
      });
    }
  }
  if (filter.reason !== undefined && !isFailureReason(filter.reason)) {
    issues.push({
      path: 'filter.reason',
      message: 'must be a FailureReason code',
      value: filter.reason,
    });
  }
  if (filter.status !== undefined && ![0, 1, 2].includes(filter.status as number)) {
    issues.push({ path: 'filter.status', message: 'must be 0, 1 or 2', value: filter.status });
  }
  if (filter.ids !== undefined) {
    if (!Array.isArray(filter.ids) || filter.ids.length > 10_000) {
      issues.push({
        path: 'filter.ids',
        message: 'must be an array of at most 10000 ids',
        value: filter.ids,
      });
    } else {
      filter.ids.forEach((id, i) => {
        if (!isUuid(id))
          issues.push({ path: `filter.ids[${i}]`, message: 'must be a UUID string', value: id });
      });
    }
  }
  return issues;
}
