import { isUuid } from '../common/uuid';
import { ChokaQValidationError, ValidationIssue } from '../errors';
import type { BatchResultsQuery } from '../interfaces/batch.interface';
import type {
  ActiveFilter,
  CountQuery,
  DlqFilter,
  GetJobOptions,
  Pillar,
  QueueOutcomesQuery,
  ThroughputSeriesQuery,
} from '../interfaces/job-view.interface';
import {
  DEFAULT_BATCH_RESULTS_PAGE,
  LIMITS,
  MAX_PAGE_SIZE,
  MAX_SERIES_POINTS,
  METRIC_BUCKET_MS,
  QUEUE_OUTCOMES_MINUTES,
} from './limits';
import { filterIssues } from './validate-filter';
import { assertQueueName } from './validate-job';

/*
 * Rules of the operator reads that take more than a filter: `countExactly`,
 * `getThroughputSeries`, `getQueueOutcomes`, the options of `getJob` and the page of
 * `getBatchResults`. Each collects every problem of its argument and throws one
 * `ChokaQValidationError` naming them all, before any SQL runs.
 */

const PILLARS: readonly Pillar[] = ['hot', 'archive', 'dlq'];

/** A `countExactly` request after the edge: a known pillar and a checked filter. */
export interface CheckedCountQuery {
  pillar: Pillar;
  /** The filter, `{}` when none was given; keys of other pillars are ignored, as in pages. */
  filter: ActiveFilter & DlqFilter;
}

/** Validates a `countExactly` request: the pillar is one of three, the filter as a page's. */
export function assertCountQuery(query: CountQuery): CheckedCountQuery {
  if (query === null || typeof query !== 'object') {
    throw new ChokaQValidationError([
      { path: 'query', message: 'must be { pillar, filter? }', value: query },
    ]);
  }
  const issues: ValidationIssue[] = [];
  if (!PILLARS.includes(query.pillar)) {
    issues.push({
      path: 'query.pillar',
      message: `must be one of ${PILLARS.join(', ')}`,
      value: query.pillar,
    });
  }
  const filter = (query.filter ?? {}) as ActiveFilter & DlqFilter;
  issues.push(...filterIssues(filter).map((i) => ({ ...i, path: `query.${i.path}` })));
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  return { pillar: query.pillar, filter };
}

/** A throughput series request after the edge. */
export interface CheckedSeriesQuery {
  /** One queue, or null for all. */
  queue: string | null;
  /** `from` rounded down to its minute: the start of the first point. */
  from: Date;
  to: Date;
  stepMs: number;
  /** How many points the series has: `ceil((to − from) / stepMs)`, 1 to {@link MAX_SERIES_POINTS}. */
  points: number;
}

/** Year 1 to year 9999, what every dialect's time type holds. */
const MAX_TIME = Date.parse('9999-12-31T23:59:59.999Z');

function isStorableDate(value: unknown): value is Date {
  return (
    value instanceof Date &&
    Number.isFinite(value.getTime()) &&
    value.getTime() >= LIMITS.minRunAt &&
    value.getTime() <= MAX_TIME
  );
}

/**
 * Validates a throughput series request: `from` before `to` (both valid dates), a step of a whole
 * number of minutes (metric buckets are {@link METRIC_BUCKET_MS} wide, so a finer step would split
 * a bucket), at most {@link MAX_SERIES_POINTS} points, and a queue name if one is given.
 */
export function assertThroughputSeriesQuery(query: ThroughputSeriesQuery): CheckedSeriesQuery {
  if (query === null || typeof query !== 'object') {
    throw new ChokaQValidationError([
      { path: 'query', message: 'must be { from, to, stepMs, queue? }', value: query },
    ]);
  }
  const issues: ValidationIssue[] = [];
  let queue: string | null = null;
  if (query.queue !== undefined) {
    try {
      queue = assertQueueName(query.queue, 'query.queue');
    } catch (error) {
      if (!(error instanceof ChokaQValidationError)) throw error;
      issues.push(...error.issues);
    }
  }
  for (const key of ['from', 'to'] as const) {
    if (!isStorableDate(query[key])) {
      issues.push({
        path: `query.${key}`,
        message: 'must be a valid Date from year 1 to year 9999',
        value: query[key],
      });
    }
  }
  const step = query.stepMs;
  const stepOk =
    typeof step === 'number' &&
    Number.isSafeInteger(step) &&
    step >= METRIC_BUCKET_MS &&
    step % METRIC_BUCKET_MS === 0;
  if (!stepOk) {
    issues.push({
      path: 'query.stepMs',
      message: `must be a whole number of minutes: a positive multiple of ${METRIC_BUCKET_MS}`,
      value: step,
    });
  }
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  const from = new Date(Math.floor(query.from.getTime() / METRIC_BUCKET_MS) * METRIC_BUCKET_MS);
  const to = query.to;
  if (query.from.getTime() >= to.getTime()) {
    throw new ChokaQValidationError([
      { path: 'query.to', message: 'must be after query.from', value: to },
    ]);
  }
  const points = Math.ceil((to.getTime() - from.getTime()) / step);
  if (points > MAX_SERIES_POINTS) {
    throw new ChokaQValidationError([
      {
        path: 'query.stepMs',
        message: `gives ${points} points from query.from to query.to; at most ${MAX_SERIES_POINTS} are allowed`,
        value: step,
      },
    ]);
  }
  return { queue, from, to: new Date(to.getTime()), stepMs: step, points };
}

/** A `getQueueOutcomes` request after the edge. */
export interface CheckedOutcomesQuery {
  /** Whole minutes before the current one, 1 to `QUEUE_OUTCOMES_MINUTES.max`. */
  minutes: number;
}

/**
 * Validates a `getQueueOutcomes` request: `minutes` an integer from 1 to
 * {@link QUEUE_OUTCOMES_MINUTES}`.max` (a day), {@link QUEUE_OUTCOMES_MINUTES}`.default` when
 * absent. The bound keeps the read's cost bounded: it sums every bucket of the window.
 */
export function assertQueueOutcomesQuery(
  query: QueueOutcomesQuery | undefined,
): CheckedOutcomesQuery {
  if (query !== undefined && (query === null || typeof query !== 'object')) {
    throw new ChokaQValidationError([
      { path: 'query', message: 'must be { minutes? }', value: query },
    ]);
  }
  const minutes = query?.minutes ?? QUEUE_OUTCOMES_MINUTES.default;
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > QUEUE_OUTCOMES_MINUTES.max) {
    throw new ChokaQValidationError([
      {
        path: 'query.minutes',
        message: `must be an integer from 1 to ${QUEUE_OUTCOMES_MINUTES.max}`,
        value: query?.minutes,
      },
    ]);
  }
  return { minutes };
}

/** `getJob` options after the edge. */
export interface CheckedGetJobOptions {
  /** Read the job's attempts too. */
  attempts: boolean;
}

const GET_JOB_OPTION_KEYS: readonly string[] = ['attempts'];

/**
 * Validates the options of `getJob`: absent, or an object whose only key is `attempts`, a boolean
 * (absent: false). An unknown key is refused rather than ignored: a misspelt option would
 * otherwise silently read nothing.
 */
export function assertGetJobOptions(options: GetJobOptions | undefined): CheckedGetJobOptions {
  if (options === undefined) return { attempts: false };
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ChokaQValidationError([
      { path: 'options', message: 'must be { attempts?: boolean }', value: options },
    ]);
  }
  const issues: ValidationIssue[] = [];
  for (const key of Object.keys(options)) {
    if (!GET_JOB_OPTION_KEYS.includes(key)) {
      issues.push({
        path: `options.${key}`,
        message: 'is not an option of getJob (known: attempts)',
        value: (options as Record<string, unknown>)[key],
      });
    }
  }
  const attempts = options.attempts;
  if (attempts !== undefined && typeof attempts !== 'boolean') {
    issues.push({ path: 'options.attempts', message: 'must be a boolean', value: attempts });
  }
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  return { attempts: attempts === true };
}

/** A `getBatchResults` page request after the edge (the batch id is checked apart). */
export interface CheckedBatchResultsQuery {
  /**
   * The page starts after this job id (exclusive), in lower case, the case of the ids ChokaQ
   * makes; `''` for the first page, before every id.
   */
  after: string;
  /** Jobs per page, 1 to `MAX_PAGE_SIZE`. */
  limit: number;
}

const BATCH_RESULTS_KEYS: readonly string[] = ['after', 'limit'];

/**
 * Validates the page of `getBatchResults`: absent, or an object of `after` (a UUID, the previous
 * page's `nextCursor`) and `limit` (an integer from 1 to {@link MAX_PAGE_SIZE}, default
 * {@link DEFAULT_BATCH_RESULTS_PAGE}). Every bad field is reported at once; an unknown key is
 * refused rather than ignored, as in the other reads.
 */
export function assertBatchResultsQuery(
  query: BatchResultsQuery | undefined,
): CheckedBatchResultsQuery {
  if (
    query !== undefined &&
    (query === null || typeof query !== 'object' || Array.isArray(query))
  ) {
    throw new ChokaQValidationError([
      { path: 'query', message: 'must be { after?, limit? }', value: query },
    ]);
  }
  const q: BatchResultsQuery = query ?? {};
  const issues: ValidationIssue[] = [];
  for (const key of Object.keys(q)) {
    if (!BATCH_RESULTS_KEYS.includes(key)) {
      issues.push({
        path: `query.${key}`,
        message: 'is not a field of a batch results query (known: after, limit)',
        value: (q as Record<string, unknown>)[key],
      });
    }
  }
  const limit = q.limit ?? DEFAULT_BATCH_RESULTS_PAGE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    issues.push({
      path: 'query.limit',
      message: `must be an integer from 1 to ${MAX_PAGE_SIZE}`,
      value: q.limit,
    });
  }
  if (q.after !== undefined && !isUuid(q.after)) {
    issues.push({
      path: 'query.after',
      message: "must be a job id (a UUID): the previous page's nextCursor",
      value: q.after,
    });
  }
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  return { after: q.after?.toLowerCase() ?? '', limit };
}
