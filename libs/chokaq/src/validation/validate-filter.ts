import { isUuid } from '../common/uuid';
import { ChokaQValidationError, ValidationIssue } from '../errors';
import type { DlqFilter, HistoryFilter } from '../interfaces/job-view.interface';
import {
  LIMITS,
  MAX_ENQUEUE_MANY,
  MAX_SEARCH_LENGTH,
  TRAILING_WHITESPACE,
  endsWithWhitespace,
} from './limits';
import { isFailureReason } from './validate-args';

/** Year 1 to year 9999: what every dialect's time type holds (PostgreSQL rejects earlier than 4714 BC raw). */
const MIN_FILTER_TIME = LIMITS.minRunAt;
const MAX_FILTER_TIME = Date.parse('9999-12-31T23:59:59.999Z');

/** True for an instant every dialect's time type can store. */
export function inStorableRange(t: number): boolean {
  return Number.isFinite(t) && t >= MIN_FILTER_TIME && t <= MAX_FILTER_TIME;
}

/** Validates a DLQ filter used by bulk actions; throws on any bad field. */
export function assertDlqFilter(filter: DlqFilter | undefined): DlqFilter {
  const issues = filterIssues(filter ?? {});
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  return filter ?? {};
}

/**
 * Every problem of a list or bulk-action filter: text fields, the time window, the DLQ reason, the
 * hot status and explicit ids. Returns the issues, so `assertListQuery` reports them with its own.
 */
export function filterIssues(
  filter: DlqFilter & HistoryFilter & { status?: unknown },
): ValidationIssue[] {
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
    } else if (key === 'type' && endsWithWhitespace(value)) {
      // No stored type ends with one, and SQL Server's `=` would ignore it: refused everywhere.
      issues.push({ path: 'filter.type', message: TRAILING_WHITESPACE, value });
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
  if (filter.status !== undefined && ![0, 1, 2, 7].includes(filter.status as number)) {
    issues.push({ path: 'filter.status', message: 'must be 0, 1, 2 or 7', value: filter.status });
  }
  if (filter.ids !== undefined) {
    if (!Array.isArray(filter.ids) || filter.ids.length > MAX_ENQUEUE_MANY) {
      issues.push({
        path: 'filter.ids',
        message: `must be an array of at most ${MAX_ENQUEUE_MANY} ids`,
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
