import type { ValidationIssue } from '../errors';
import type { JobHandlerOptions } from '../interfaces/handler.interface';
import type { ChokaQModuleOptions } from '../interfaces/module-options.interface';
import type { TransientRetryOptions } from '../interfaces/storage-options.interface';
import { LIMITS, MAX_TIMER_MS, endsWithWhitespace } from './limits';

/** One option's rule; {@link describeRule} words it the same way wherever it is broken. */
export type OptionRule =
  | { kind: 'int'; min: number; max: number }
  | { kind: 'number'; min: number; max: number }
  | { kind: 'boolean' }
  | { kind: 'string'; min: number; max: number; key?: true }
  | { kind: 'oneOf'; values: readonly string[] };

/** An integer from `min` to `max` (default: any safe integer). */
export const int = (min: number, max = Number.MAX_SAFE_INTEGER): OptionRule => ({
  kind: 'int',
  min,
  max,
});
/** A delay that becomes a Node timer: an integer from `min` to {@link MAX_TIMER_MS}. */
export const timer = (min: number): OptionRule => int(min, MAX_TIMER_MS);
const bool: OptionRule = { kind: 'boolean' };
const text = (min: number, max: number): OptionRule => ({ kind: 'string', min, max });
/** A job type: {@link text} that does not end with whitespace ({@link endsWithWhitespace}). */
const typeName: OptionRule = { kind: 'string', min: 1, max: LIMITS.type, key: true };
const oneOf = (...values: string[]): OptionRule => ({ kind: 'oneOf', values });

/** The rules of every numeric/boolean section of `forRoot`; keys not listed here are unknown keys. */
export const OPTION_RULES = {
  retry: {
    maxAttempts: int(1),
    baseDelayMs: timer(0),
    multiplier: { kind: 'number', min: 1, max: 100 },
    maxDelayMs: timer(0),
    jitterMs: timer(0),
    maxJobAgeMs: int(1),
  },
  execution: { timeoutMs: timer(1) },
  heartbeat: {
    intervalMs: timer(1),
    failureThreshold: int(1, 1_000_000),
    cancelOnHeartbeatFailure: bool,
  },
  rescue: { intervalMs: timer(1), fetchedJobTimeoutMs: int(1), zombieTimeoutMs: int(1) },
  worker: {
    enabled: bool,
    concurrency: int(1, 10_000),
    prefetch: int(1, 100_000),
    startAhead: int(0, 10_000),
    batchSize: int(1, 10_000),
    pollIntervalMs: timer(1),
    shutdownGracePeriodMs: timer(0),
    workerId: text(1, 100),
  },
  payload: { maxBytes: int(1, 1_073_741_824) },
  retention: {
    archiveMs: int(0),
    dlqMs: int(0),
    metricsMs: int(0),
    workersMs: int(0),
    auditMs: int(0),
    intervalMs: timer(1),
  },
  circuitBreaker: {
    failureThreshold: int(1, 1_000_000),
    windowMs: timer(1),
    breakDurationMs: timer(1),
    halfOpenProbes: int(1, 10_000),
  },
  events: { maxQueuedPerListener: int(1, 1_000_000) },
  // `metrics.meterProvider` is an object, checked by resolveChokaQOptions (OPTIONS_CHECKED_ELSEWHERE).
  metrics: { enabled: bool, maxAttributeValues: int(1, 100_000), queueGauges: bool },
  // `tracing.tracerProvider` is an object, checked by resolveChokaQOptions too.
  tracing: { enabled: bool },
} as const satisfies Record<
  Exclude<keyof ChokaQModuleOptions, 'storage'>,
  Record<string, OptionRule>
>;

/** `storage.transientRetry`: its waits are timers, so they are capped like the other delays. */
export const TRANSIENT_RETRY_RULES = {
  maxAttempts: int(1),
  baseDelayMs: timer(0),
  maxDelayMs: timer(0),
} as const satisfies Record<keyof TransientRetryOptions, OptionRule>;

/**
 * `@JobHandler` options. Those that override a `forRoot` option use its rule, so a handler cannot
 * set what `forRoot` refuses (a `timeoutMs` above {@link MAX_TIMER_MS} would fire after 1 ms).
 */
export const JOB_HANDLER_RULES = {
  type: typeName,
  timeoutMs: OPTION_RULES.execution.timeoutMs,
  maxAttempts: OPTION_RULES.retry.maxAttempts,
  retryZombies: bool,
  transactional: bool,
  recordResult: bool,
  // `backoff` (a list or a function) and `batch` (an object) have rules of their own:
  // `backoffIssues` and `batchIssues` in decorator-options.ts.
} as const satisfies Record<Exclude<keyof JobHandlerOptions, 'backoff' | 'batch'>, OptionRule>;

/**
 * `@RecurringJob` options with a rule of their own. `queue` and `payload` are checked as an
 * enqueue checks them, and the cron expression and time zone as the stored record is, so startup
 * refuses exactly what the recurring loop could not store or schedule.
 */
export const RECURRING_JOB_RULES = {
  type: typeName,
  misfire: oneOf('skip', 'none'),
} as const satisfies Record<string, OptionRule>;

/** `@OnJobEvent` filter: the type as a job's type is checked (the queue is checked as a queue name). */
export const JOB_EVENT_RULES = {
  type: typeName,
} as const satisfies Record<string, OptionRule>;

/** `ChokaQTesting.runDueJobs` options: its timeout becomes a timer. */
export const RUN_DUE_JOBS_RULES = { timeoutMs: timer(1) } as const satisfies Record<
  string,
  OptionRule
>;

/** The rule in words, e.g. `must be an integer from 1 to 2147483647`. */
export function describeRule(rule: OptionRule): string {
  switch (rule.kind) {
    case 'boolean':
      return 'must be a boolean';
    case 'string':
      return `must be a string of ${rule.min}–${rule.max} characters without NUL${rule.key ? ', not ending with whitespace' : ''}`;
    case 'oneOf':
      return `must be ${rule.values.map((v) => `'${v}'`).join(' or ')}`;
    case 'int':
    case 'number': {
      const what = rule.kind === 'int' ? 'an integer' : 'a finite number';
      return rule.max === Number.MAX_SAFE_INTEGER
        ? `must be ${what} ≥ ${rule.min}`
        : `must be ${what} from ${rule.min} to ${rule.max}`;
    }
  }
}

/** True when `value` keeps `rule`. */
export function satisfies(rule: OptionRule, value: unknown): boolean {
  switch (rule.kind) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'string':
      return (
        typeof value === 'string' &&
        value.length >= rule.min &&
        value.length <= rule.max &&
        !value.includes('\u0000') &&
        !(rule.key && endsWithWhitespace(value))
      );
    case 'oneOf':
      return typeof value === 'string' && rule.values.includes(value);
    case 'int':
    case 'number':
      return (
        typeof value === 'number' &&
        Number.isFinite(value) &&
        (rule.kind === 'number' || Number.isInteger(value)) &&
        value >= rule.min &&
        value <= rule.max
      );
  }
}

/**
 * Checks an options object against `rules`: every key that is neither ruled nor in `checkedElsewhere`
 * is an unknown option; every defined value must keep its rule. Returns the issues (paths made by
 * `pathOf`), so callers can report all problems of many objects at once.
 */
export function optionIssues(
  given: Record<string, unknown>,
  rules: Readonly<Record<string, OptionRule>>,
  pathOf: (key: string) => string,
  checkedElsewhere: readonly string[] = [],
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const [key, value] of Object.entries(given)) {
    const rule = Object.prototype.hasOwnProperty.call(rules, key) ? rules[key] : undefined;
    if (!rule) {
      if (!checkedElsewhere.includes(key)) {
        issues.push({ path: pathOf(key), message: 'is not a known option', value });
      }
    } else if (value !== undefined && !satisfies(rule, value)) {
      issues.push({ path: pathOf(key), message: describeRule(rule), value });
    }
  }
  return issues;
}
