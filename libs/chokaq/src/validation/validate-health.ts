import { ChokaQValidationError, type ValidationIssue } from '../errors';
import type {
  QueuesCheckOptions,
  StorageCheckOptions,
  WorkerCheckOptions,
} from '../interfaces/health-check.interface';
import { MAX_ENQUEUE_MANY } from './limits';
import { describeRule, int, optionIssues, timer } from './option-rules';
import { assertQueueName } from './validate-job';

/** How long a health check waits for the database by default, in ms. */
export const DEFAULT_HEALTH_TIMEOUT_MS = 3_000;

/** The worker check's default staleness, in heartbeat intervals. */
export const HEARTBEAT_STALE_INTERVALS = 3;

/** At most this many queues named in `QueuesCheckOptions.queues`. */
export const MAX_HEALTH_QUEUES = MAX_ENQUEUE_MANY;

/** The longest key of a check (its name in Terminus' response). */
export const MAX_HEALTH_KEY = 255;

/** The rules of each check's options; a key not listed is an unknown option. */
export const HEALTH_CHECK_RULES = {
  storage: { timeoutMs: timer(1) },
  worker: { heartbeatStaleMs: int(1) },
  // `queues` is a list, checked below.
  queues: { lagDegradedMs: int(0), lagUnhealthyMs: int(0), timeoutMs: timer(1) },
} as const;

/** `StorageCheckOptions` with their defaults. */
export interface CheckedStorageCheck {
  key: string;
  timeoutMs: number;
}

/** `WorkerCheckOptions`, the staleness still to default from the worker's own interval. */
export interface CheckedWorkerCheck {
  key: string;
  heartbeatStaleMs: number | undefined;
}

/** `QueuesCheckOptions` with their defaults. */
export interface CheckedQueuesCheck {
  key: string;
  lagDegradedMs: number;
  lagUnhealthyMs: number;
  /** The queues named, or undefined for every unpaused, active queue. */
  queues: readonly string[] | undefined;
  timeoutMs: number;
}

/**
 * Checks a health check's key and options, every problem reported at once
 * (`ChokaQValidationError`): a bad argument is the calling code's mistake, so it throws rather
 * than reporting the component down.
 */
export function assertStorageCheck(key: unknown, options: unknown): CheckedStorageCheck {
  const given = optionsObject(options, 'StorageCheckOptions');
  fail([
    ...keyIssues(key),
    ...optionIssues(given, HEALTH_CHECK_RULES.storage, (k) => `options.${k}`),
  ]);
  const { timeoutMs } = given as StorageCheckOptions;
  return { key: key as string, timeoutMs: timeoutMs ?? DEFAULT_HEALTH_TIMEOUT_MS };
}

/** {@link assertStorageCheck} for `worker()`. */
export function assertWorkerCheck(key: unknown, options: unknown): CheckedWorkerCheck {
  const given = optionsObject(options, 'WorkerCheckOptions');
  fail([
    ...keyIssues(key),
    ...optionIssues(given, HEALTH_CHECK_RULES.worker, (k) => `options.${k}`),
  ]);
  return { key: key as string, heartbeatStaleMs: (given as WorkerCheckOptions).heartbeatStaleMs };
}

/** {@link assertStorageCheck} for `queues()`: both thresholds required, degraded ≤ unhealthy. */
export function assertQueuesCheck(key: unknown, options: unknown): CheckedQueuesCheck {
  if (options === undefined || options === null || typeof options !== 'object') {
    fail([
      ...keyIssues(key),
      {
        path: 'options',
        message: 'must be { lagDegradedMs, lagUnhealthyMs, queues?, timeoutMs? }',
        value: options,
      },
    ]);
  }
  const given = options as Record<string, unknown>;
  const issues = [
    ...keyIssues(key),
    ...optionIssues(given, HEALTH_CHECK_RULES.queues, (k) => `options.${k}`, ['queues']),
  ];
  const { lagDegradedMs, lagUnhealthyMs, queues, timeoutMs } = given as Partial<QueuesCheckOptions>;
  for (const name of ['lagDegradedMs', 'lagUnhealthyMs'] as const) {
    if (given[name] === undefined) {
      issues.push({
        path: `options.${name}`,
        message: `is required: ${describeRule(HEALTH_CHECK_RULES.queues[name])}`,
        value: undefined,
      });
    }
  }
  if (
    issues.length === 0 &&
    (lagDegradedMs as number) > (lagUnhealthyMs as number) // both checked above
  ) {
    issues.push({
      path: 'options.lagDegradedMs',
      message: `must be at most lagUnhealthyMs (${lagUnhealthyMs})`,
      value: lagDegradedMs,
    });
  }
  issues.push(...queueListIssues(queues));
  fail(issues);
  return {
    key: key as string,
    lagDegradedMs: lagDegradedMs as number,
    lagUnhealthyMs: lagUnhealthyMs as number,
    queues: queues === undefined ? undefined : [...queues],
    timeoutMs: timeoutMs ?? DEFAULT_HEALTH_TIMEOUT_MS,
  };
}

/** A Terminus key: the name of the check in the response (`info`, `error`, `details`). */
function keyIssues(key: unknown): ValidationIssue[] {
  return typeof key === 'string' && key.length > 0 && key.length <= MAX_HEALTH_KEY
    ? []
    : [{ path: 'key', message: `must be a string of 1–${MAX_HEALTH_KEY} characters`, value: key }];
}

function optionsObject(options: unknown, name: string): Record<string, unknown> {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    fail([{ path: 'options', message: `must be a ${name} object`, value: options }]);
  }
  return options as Record<string, unknown>;
}

function queueListIssues(queues: unknown): ValidationIssue[] {
  if (queues === undefined) return [];
  if (!Array.isArray(queues) || queues.length > MAX_HEALTH_QUEUES) {
    return [
      {
        path: 'options.queues',
        message: `must be an array of at most ${MAX_HEALTH_QUEUES} queue names`,
        value: queues,
      },
    ];
  }
  const issues: ValidationIssue[] = [];
  queues.forEach((name: unknown, i) => {
    try {
      assertQueueName(name, `options.queues[${i}]`);
    } catch (error) {
      if (!(error instanceof ChokaQValidationError)) throw error;
      issues.push(...error.issues);
    }
  });
  return issues;
}

function fail(issues: ValidationIssue[]): void {
  if (issues.length > 0) throw new ChokaQValidationError(issues);
}
