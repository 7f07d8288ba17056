import { sanitizeErrorText } from '../common/error-text';
import { isUuid } from '../common/uuid';
import { ChokaQValidationError, ValidationIssue } from '../errors';
import { FailureReason } from '../interfaces/job-status.enum';
import {
  CompletedJob,
  DlqMove,
  FetchRequest,
  HandledJobs,
  JobLease,
  QueuePatch,
  RateLimit,
  RetentionPolicy,
  ZombieRetryRule,
} from '../interfaces/job.interface';
import { RecurringJobDefinition, RecurringJobSource } from '../interfaces/recurring-job.interface';
import type { WorkerHeartbeat, WorkerQuery } from '../interfaces/worker.interface';
import {
  AUDIT_LIMITS,
  DEFAULT_WORKER_LIST,
  LIMITS,
  MAX_DLQ_BULK,
  MAX_CLAIM,
  MAX_ENQUEUE_MANY,
  MAX_LIBRARY_VERSION,
  MAX_PID,
  MAX_RECURRING_TEXT,
  MAX_RETENTION_BATCH,
  MAX_TIME_ZONE,
  MAX_WORKER_HOST,
  MAX_WORKER_ID,
  MAX_WORKER_LIST,
  MAX_WORKER_REPORT_ENTRIES,
  MAX_ZOMBIE_RETRY_RULES,
  QUEUE_RANGES,
  RATE_LIMIT_RANGES,
  TRAILING_WHITESPACE,
  endsWithWhitespace,
} from './limits';
import { scheduleIssues } from './validate-cron';
import { assertIntInRange, validateNewJob } from './validate-job';
import { isPayloadVersion, PAYLOAD_VERSION_RULE } from './payload-version';

/**
 * Validation of the storage operations' own arguments (leases, actors, queue controls, recurring
 * definitions), shared by every dialect so that one input is accepted or refused the same way on
 * SQLite, PostgreSQL and SQL Server, always before any SQL runs.
 */

/** Lease ids are UUIDs in practice; the columns are `varchar(36)`, so only that alphabet fits. */
const LEASE_ID = /^[A-Za-z0-9-]{1,36}$/;

function fail(issues: ValidationIssue[]): void {
  if (issues.length > 0) throw new ChokaQValidationError(issues);
}

function textIssue(
  path: string,
  value: unknown,
  max: number,
  min = 1,
): ValidationIssue | undefined {
  if (
    typeof value !== 'string' ||
    value.length < min ||
    value.length > max ||
    value.includes('\u0000')
  ) {
    return { path, message: `must be a string of ${min}–${max} characters without NUL`, value };
  }
  return undefined;
}

/** {@link textIssue} for a key, a type or a name: also refused when it ends with whitespace. */
function keyIssue(path: string, value: unknown, max: number): ValidationIssue | undefined {
  const issue = textIssue(path, value, max);
  if (issue || !endsWithWhitespace(value as string)) return issue;
  return { path, message: TRAILING_WHITESPACE, value };
}

/** A worker id: 1–255 characters without NUL. */
export function assertWorkerId(value: unknown, path = 'workerId'): string {
  const issue = textIssue(path, value, MAX_WORKER_ID);
  fail(issue ? [issue] : []);
  return value as string;
}

/**
 * Validates fencing tokens (id a UUID, workerId 1–255 characters, leaseId 1–36 of `[A-Za-z0-9-]`),
 * at most {@link MAX_ENQUEUE_MANY} of them, every bad one reported. Returns them with exact
 * duplicates (same id and lease) collapsed to the first. Two leases of one id both stay: a stale run
 * and the run that replaced it may be finalised in one batch, and the statement's fencing predicate,
 * not this list, decides which one still owns the row.
 */
export function assertLeases<T extends JobLease>(leases: readonly T[], path = 'leases'): T[] {
  if (!Array.isArray(leases) || leases.length > MAX_ENQUEUE_MANY) {
    fail([
      { path, message: `must be an array of at most ${MAX_ENQUEUE_MANY} leases`, value: leases },
    ]);
  }
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  const out: T[] = [];
  // Keyed by (id, leaseId): a NUL cannot occur in a UUID or a lease id, so the pair is unambiguous.
  leases.forEach((lease, i) => {
    const at = `${path}[${i}]`;
    if (lease === null || typeof lease !== 'object') {
      issues.push({ path: at, message: 'must be { id, workerId, leaseId }', value: lease });
      return;
    }
    if (!isUuid(lease.id))
      issues.push({ path: `${at}.id`, message: 'must be a UUID string', value: lease.id });
    const worker = textIssue(`${at}.workerId`, lease.workerId, MAX_WORKER_ID);
    if (worker) issues.push(worker);
    if (typeof lease.leaseId !== 'string' || !LEASE_ID.test(lease.leaseId)) {
      issues.push({
        path: `${at}.leaseId`,
        message: 'must be 1–36 characters of [A-Za-z0-9-] (a UUID)',
        value: lease.leaseId,
      });
    }
    const key = `${String(lease.id)}\u0000${String(lease.leaseId)}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(lease);
    }
  });
  fail(issues);
  return out;
}

/** Who performed an admin action: at most 100 characters without NUL, or null. */
export function assertActor(actor: unknown, path = 'actor'): string | null {
  if (actor === undefined || actor === null) return null;
  const issue = textIssue(path, actor, LIMITS.createdBy, 0);
  fail(issue ? [issue] : []);
  return actor as string;
}

/** The codes of `FailureReason` (its numeric values; the reserved 4 and 8 are not among them). */
const FAILURE_REASON_CODES: ReadonlySet<unknown> = new Set(
  Object.values(FailureReason).filter((value) => typeof value === 'number'),
);

/**
 * True for a `FailureReason` code. Membership of the values, never `value in FailureReason`: the
 * enum object also has the names (`'Timeout'`) as keys and inherits `'toString'`, `'constructor'`
 * and `'__proto__'`, none of which is a code the database can compare with.
 */
export function isFailureReason(value: unknown): value is FailureReason {
  return FAILURE_REASON_CODES.has(value);
}

/** A produced DLQ reason: a `FailureReason` code, never the reserved 4 or 8. */
export function assertFailureReason(reason: unknown, path = 'move.reason'): FailureReason {
  if (!isFailureReason(reason)) {
    fail([{ path, message: 'must be a FailureReason code', value: reason }]);
  }
  return reason as FailureReason;
}

/** A validated {@link DlqMove}: the error text sanitised for storage. */
export interface CheckedDlqMove {
  reason: FailureReason;
  error: string;
  actor: string | null;
  /** Rounded, or null when the job did not run (or the value was not a finite number ≥ 0). */
  durationMs: number | null;
}

/** Validates how a job lands in the DLQ. */
export function assertDlqMove(move: DlqMove): CheckedDlqMove {
  if (move === null || typeof move !== 'object') {
    fail([{ path: 'move', message: 'must be { reason, error }', value: move }]);
  }
  const d = move.durationMs;
  return {
    reason: assertFailureReason(move.reason),
    error: sanitizeErrorText(String(move.error ?? '')),
    actor: assertActor(move.actor, 'move.actor'),
    durationMs: typeof d === 'number' && Number.isFinite(d) && d >= 0 ? Math.round(d) : null,
  };
}

/** A valid `Date`. */
export function assertDate(value: unknown, path: string): Date {
  if (!(value instanceof Date) || !Number.isFinite(value.getTime())) {
    fail([{ path, message: 'must be a valid Date', value }]);
  }
  return value as Date;
}

/** Validates queue controls, every bad field reported; returns only the known fields. */
export function assertQueuePatch(patch: QueuePatch): QueuePatch {
  if (patch === null || typeof patch !== 'object') {
    fail([{ path: 'patch', message: 'must be an object', value: patch }]);
  }
  const issues: ValidationIssue[] = [];
  for (const key of ['isPaused', 'isActive', 'retryZombies'] as const) {
    const v = patch[key];
    if (v !== undefined && typeof v !== 'boolean') {
      issues.push({ path: `patch.${key}`, message: 'must be a boolean', value: v });
    }
  }
  for (const key of Object.keys(QUEUE_RANGES) as Array<keyof typeof QUEUE_RANGES>) {
    const [min, max] = QUEUE_RANGES[key];
    const v = patch[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      issues.push({
        path: `patch.${key}`,
        message: `must be null or an integer from ${min} to ${max}`,
        value: v,
      });
    }
  }
  const rate = checkRateLimit(issues, 'patch.rateLimit', patch.rateLimit);
  const groupRate = checkRateLimit(issues, 'patch.groupRateLimit', patch.groupRateLimit);
  fail(issues);
  return {
    isPaused: patch.isPaused,
    isActive: patch.isActive,
    maxWorkers: patch.maxWorkers,
    zombieTimeoutSeconds: patch.zombieTimeoutSeconds,
    executionTimeoutMs: patch.executionTimeoutMs,
    retryZombies: patch.retryZombies,
    rateLimit: rate,
    groupConcurrency: patch.groupConcurrency,
    groupRateLimit: groupRate,
  };
}

/** Checks a rate limit of a queue patch (undefined: unchanged; null: removed); a copy of it. */
function checkRateLimit(
  issues: ValidationIssue[],
  path: string,
  rate: RateLimit | null | undefined,
): RateLimit | null | undefined {
  if (rate === undefined || rate === null) return rate;
  if (typeof rate !== 'object' || Array.isArray(rate)) {
    issues.push({ path, message: 'must be null or an object { max, perMs }', value: rate });
    return undefined;
  }
  for (const key of ['max', 'perMs'] as const) {
    const [min, max] = RATE_LIMIT_RANGES[key];
    const v = rate[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      issues.push({
        path: `${path}.${key}`,
        message: `must be an integer from ${min} to ${max}`,
        value: v,
      });
    }
  }
  return { max: rate.max, perMs: rate.perMs };
}

/** A validated {@link ZombieRetryRule}: `type` null for a queue-wide handler. */
export interface CheckedZombieRetryRule {
  queue: string;
  type: string | null;
  retry: boolean;
}

/**
 * Validates the handler rules of `archiveZombies`, every bad one reported: at most
 * {@link MAX_ZOMBIE_RETRY_RULES}, queue and type 1–255 characters without NUL, `retry` a boolean,
 * and one rule per `(queue, type)` slot (type absent = the queue-wide slot), so that a zombie
 * resolves to one answer, as a claim resolves to one handler. Undefined means no rules.
 */
export function assertZombieRetryRules(
  rules: readonly ZombieRetryRule[] | undefined,
  path = 'retryRules',
): CheckedZombieRetryRule[] {
  if (rules === undefined) return [];
  if (!Array.isArray(rules) || rules.length > MAX_ZOMBIE_RETRY_RULES) {
    fail([
      {
        path,
        message: `must be an array of at most ${MAX_ZOMBIE_RETRY_RULES} { queue, type?, retry }`,
        value: rules,
      },
    ]);
  }
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  const out: CheckedZombieRetryRule[] = [];
  rules.forEach((rule, i) => {
    const at = `${path}[${i}]`;
    if (rule === null || typeof rule !== 'object') {
      issues.push({ path: at, message: 'must be { queue, type?, retry }', value: rule });
      return;
    }
    const queue = textIssue(`${at}.queue`, rule.queue, LIMITS.queueName);
    const type =
      rule.type === undefined ? undefined : keyIssue(`${at}.type`, rule.type, LIMITS.type);
    if (queue) issues.push(queue);
    if (type) issues.push(type);
    if (typeof rule.retry !== 'boolean') {
      issues.push({ path: `${at}.retry`, message: 'must be a boolean', value: rule.retry });
    }
    if (queue || type) return;
    // JSON of the pair: unambiguous whatever the characters, and undefined (queue-wide) stays apart.
    const slot = JSON.stringify([rule.queue, rule.type ?? null]);
    if (seen.has(slot)) {
      issues.push({
        path: at,
        message: 'repeats the (queue, type) of an earlier rule',
        value: rule,
      });
    }
    seen.add(slot);
    out.push({ queue: rule.queue, type: rule.type ?? null, retry: rule.retry });
  });
  fail(issues);
  return out;
}

/** A recurring definition with its job fields checked like an enqueue (every slot becomes a job). */
export interface CheckedRecurringDefinition {
  name: string;
  cron: string;
  timeZone: string;
  queue: string;
  type: string;
  /** Serialised JSON. */
  payload: string;
  misfirePolicy: 'skip' | 'none';
  nextSlotUtc: Date;
  source: RecurringJobSource;
}

/** A recurring-job name: 1–255 characters without NUL, not ending with whitespace. */
export function assertRecurringName(name: unknown, path = 'name'): string {
  const issue = keyIssue(path, name, MAX_RECURRING_TEXT);
  fail(issue ? [issue] : []);
  return name as string;
}

/** A boolean flag (a pause switch); anything else is refused rather than coerced. */
export function assertBoolean(value: unknown, path: string): boolean {
  if (typeof value !== 'boolean') fail([{ path, message: 'must be true or false', value }]);
  return value as boolean;
}

/** Validates a recurring definition, every bad field reported. */
export function assertRecurringDefinition(
  definition: RecurringJobDefinition,
  payloadMaxBytes: number,
): CheckedRecurringDefinition {
  if (definition === null || typeof definition !== 'object') {
    fail([{ path: 'definition', message: 'must be an object', value: definition }]);
  }
  const issues = [
    textIssue('name', definition.name, MAX_RECURRING_TEXT),
    textIssue('cron', definition.cron, MAX_RECURRING_TEXT),
    textIssue('timeZone', definition.timeZone, MAX_TIME_ZONE),
  ].filter((i): i is ValidationIssue => i !== undefined);
  // Stored only if the recurring loop can schedule it; fields already refused are not re-checked.
  const refused = new Set(issues.map((i) => i.path));
  issues.push(
    ...scheduleIssues(
      refused.has('cron') ? undefined : definition.cron,
      refused.has('timeZone') ? undefined : definition.timeZone,
    ),
  );
  if (definition.misfirePolicy !== 'skip' && definition.misfirePolicy !== 'none') {
    issues.push({
      path: 'misfirePolicy',
      message: "must be 'skip' or 'none'",
      value: definition.misfirePolicy,
    });
  }
  const next = definition.nextSlotUtc;
  if (!(next instanceof Date) || !Number.isFinite(next.getTime())) {
    issues.push({ path: 'nextSlotUtc', message: 'must be a valid Date', value: next });
  }
  const source = definition.source ?? 'decorator';
  if (source !== 'decorator' && source !== 'runtime') {
    issues.push({ path: 'source', message: "must be 'decorator' or 'runtime'", value: source });
  }
  fail(issues);
  const job = validateNewJob(
    { queue: definition.queue, type: definition.type, payload: definition.payload },
    payloadMaxBytes,
  );
  return {
    name: definition.name,
    cron: definition.cron,
    timeZone: definition.timeZone,
    queue: job.queue,
    type: job.type,
    payload: job.payload,
    misfirePolicy: definition.misfirePolicy,
    nextSlotUtc: next,
    source,
  };
}

/** Splits `items` into consecutive chunks of at most `size`. */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Validates a claim request: worker and lease ids as in a lease, a limit, the handled lists. */
export function assertFetchRequest(request: FetchRequest): FetchRequest & { start: number } {
  if (request === null || typeof request !== 'object') {
    fail([{ path: 'request', message: 'must be an object', value: request }]);
  }
  const { workerId, leaseId, limit, handled } = request;
  const issues: ValidationIssue[] = [];
  const worker = textIssue('workerId', workerId, MAX_WORKER_ID);
  if (worker) issues.push(worker);
  if (typeof leaseId !== 'string' || !LEASE_ID.test(leaseId)) {
    issues.push({
      path: 'leaseId',
      message: 'must be 1–36 characters of [A-Za-z0-9-] (a UUID)',
      value: leaseId,
    });
  }
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > MAX_CLAIM) {
    issues.push({
      path: 'limit',
      message: `must be an integer from 0 to ${MAX_CLAIM}`,
      value: limit,
    });
  }
  issues.push(...handledIssues(handled, 'handled'));
  const start = request.start ?? 0;
  if (
    typeof start !== 'number' ||
    !Number.isInteger(start) ||
    start < 0 ||
    (typeof limit === 'number' && start > limit)
  ) {
    issues.push({ path: 'start', message: 'must be an integer from 0 to limit', value: start });
  }
  const budgeted = request.budgetedQueues;
  if (budgeted !== undefined) {
    if (!Array.isArray(budgeted)) {
      issues.push({ path: 'budgetedQueues', message: 'must be an array', value: budgeted });
    } else {
      budgeted.forEach((queue, i) => {
        const issue = textIssue(`budgetedQueues[${i}]`, queue, LIMITS.queueName);
        if (issue) issues.push(issue);
      });
    }
  }
  const ahead = request.ahead;
  if (ahead !== undefined && typeof ahead !== 'boolean') {
    issues.push({ path: 'ahead', message: 'must be a boolean', value: ahead });
  } else if (ahead === true && typeof limit === 'number' && start !== limit) {
    issues.push({
      path: 'ahead',
      message: 'a claim that starts ahead must start every row it takes (start = limit)',
      value: ahead,
    });
  }
  fail(issues);
  return { ...request, handled: withVersionRanges(handled), start };
}

/** The issues of a {@link HandledJobs}: queue names and `(queue, type)` pairs. */
function handledIssues(handled: HandledJobs, path: string): ValidationIssue[] {
  if (!handled || !Array.isArray(handled.queues) || !Array.isArray(handled.types)) {
    return [{ path, message: 'must have queues and types arrays', value: handled }];
  }
  const issues: ValidationIssue[] = [];
  handled.queues.forEach((queue, i) => {
    const issue = textIssue(`${path}.queues[${i}]`, queue, LIMITS.queueName);
    if (issue) issues.push(issue);
  });
  handled.types.forEach((pair, i) => {
    const q = textIssue(`${path}.types[${i}].queue`, pair?.queue, LIMITS.queueName);
    const t = keyIssue(`${path}.types[${i}].type`, pair?.type, LIMITS.type);
    if (q) issues.push(q);
    if (t) issues.push(t);
    const { minVersion, maxVersion } = pair ?? {};
    if (minVersion !== undefined && !isPayloadVersion(minVersion)) {
      issues.push({
        path: `${path}.types[${i}].minVersion`,
        message: PAYLOAD_VERSION_RULE,
        value: minVersion,
      });
    }
    if (maxVersion !== undefined && !isPayloadVersion(maxVersion)) {
      issues.push({
        path: `${path}.types[${i}].maxVersion`,
        message: PAYLOAD_VERSION_RULE,
        value: maxVersion,
      });
    }
    if (
      isPayloadVersion(minVersion ?? 1) &&
      isPayloadVersion(maxVersion ?? 1) &&
      (minVersion ?? 1) > (maxVersion ?? 1)
    ) {
      issues.push({
        path: `${path}.types[${i}].minVersion`,
        message: `must not exceed maxVersion (${maxVersion ?? 1})`,
        value: minVersion,
      });
    }
  });
  return issues;
}

/** The handled lists with every pair's version range made explicit (1 to 1 where absent). */
function withVersionRanges(handled: HandledJobs): HandledJobs {
  return {
    queues: handled.queues,
    types: handled.types.map((pair) => ({
      queue: pair.queue,
      type: pair.type,
      minVersion: pair.minVersion ?? 1,
      maxVersion: pair.maxVersion ?? 1,
    })),
  };
}

/** A `moveToDlq` target with a worker or lease id is a lease (validated as one); else an admin `{ id }`. */
export function isLeaseTarget(target: JobLease | { id: string }): target is JobLease {
  return (
    target !== null && typeof target === 'object' && ('leaseId' in target || 'workerId' in target)
  );
}

/**
 * Validates finished jobs for `archiveSucceeded`: fencing tokens as {@link assertLeases}, and each
 * `durationMs` a finite number ≥ 0 (rounded). Exact duplicates (same id and lease) collapse to the
 * first.
 */
export function assertCompletedJobs(items: readonly CompletedJob[]): CompletedJob[] {
  if (Array.isArray(items) && items.length <= MAX_ENQUEUE_MANY && madeByRuntime(items)) {
    return [...items];
  }
  const leases = assertLeases(items, 'items');
  const issues: ValidationIssue[] = [];
  items.forEach((item, i) => {
    const d = item.durationMs;
    if (!Number.isFinite(d) || d < 0) {
      issues.push({
        path: `items[${i}].durationMs`,
        message: 'must be a finite number ≥ 0',
        value: d,
      });
    }
    if (item.result !== undefined && !isJsonText(item.result)) {
      issues.push({ path: `items[${i}].result`, message: RESULT_RULE, value: item.result });
    }
  });
  fail(issues);
  return leases.map((l) => ({ ...l, durationMs: Math.round(l.durationMs) }));
}

const RESULT_RULE = 'must be JSON text (a handler result serialised), or absent';

/** True for a string that parses as JSON. */
function isJsonText(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    JSON.parse(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * The completions the worker runtime made ({@link completionOf}) from the lease of a row its own
 * claim returned: the claim checked the worker and lease ids, the id is the row's, and the object
 * is frozen when made, so none of it can have changed since. {@link assertCompletedJobs} takes a
 * batch of only such completions as it is, without checking or copying each one again: on the hot
 * path that is work per job, for every job.
 */
const runtimeCompletions = new WeakSet<CompletedJob>();

/**
 * The completion of a run whose lease came from a claim (see {@link runtimeCompletions}), with its
 * duration rounded to whole milliseconds (a duration that is not a finite number ≥ 0 counts as 0).
 * @internal the worker runtime's, not for leases from elsewhere.
 */
export function completionOf(lease: JobLease, durationMs: number, result?: string): CompletedJob {
  const ms = Number.isFinite(durationMs) ? Math.max(0, Math.round(durationMs)) : 0;
  // Only a run that records its result carries the key (made by serializeResult, so JSON text
  // within the cap), so the others keep the one shape.
  const completion: CompletedJob = Object.freeze(
    result === undefined
      ? { id: lease.id, workerId: lease.workerId, leaseId: lease.leaseId, durationMs: ms }
      : { id: lease.id, workerId: lease.workerId, leaseId: lease.leaseId, durationMs: ms, result },
  );
  runtimeCompletions.add(completion);
  return completion;
}

/**
 * True when every item is a completion the runtime made, each of another job: a repeated id (two
 * runs of one job, or an exact duplicate to collapse) takes the full check.
 */
function madeByRuntime(items: readonly CompletedJob[]): boolean {
  const ids = new Set<string>();
  for (const item of items) {
    if (!runtimeCompletions.has(item) || ids.has(item.id)) return false;
    ids.add(item.id);
  }
  return true;
}

/** The `max` of a bulk DLQ action: an integer from 0 to {@link MAX_DLQ_BULK}. */
export function assertBulkMax(max: unknown, path = 'max'): number {
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 0 || max > MAX_DLQ_BULK) {
    fail([{ path, message: `must be an integer from 0 to ${MAX_DLQ_BULK}`, value: max }]);
  }
  return max as number;
}

/** Most groups `getQueueGroups` returns. */
export const MAX_QUEUE_GROUPS = 100;

/** The `limit` of `getQueueGroups`: an integer from 1 to {@link MAX_QUEUE_GROUPS}. */
export function assertGroupsLimit(limit: unknown, path = 'limit'): number {
  return assertIntInRange(limit, path, 1, MAX_QUEUE_GROUPS);
}

/** Rows per delete transaction of `applyRetention` when the policy names none. */
export const DEFAULT_RETENTION_BATCH = 1_000;

/** How long `applyRetention` keeps rows of the Workers table when the policy names no window: 1 day. */
export const DEFAULT_WORKER_RETENTION_MS = 86_400_000;

/**
 * Validates a retention policy, every bad field reported: the windows integers ≥ 0 ms
 * (`workersMs` default {@link DEFAULT_WORKER_RETENTION_MS}, `auditMs` default 90 days), and `batchSize` (default {@link DEFAULT_RETENTION_BATCH}) from 1 to {@link MAX_RETENTION_BATCH}. A
 * batch of 0 is refused, never read as "do nothing" or as 1.
 */
export function assertRetentionPolicy(policy: RetentionPolicy): Required<RetentionPolicy> {
  if (policy === null || typeof policy !== 'object') {
    fail([{ path: 'policy', message: 'must be { archiveMs, dlqMs, metricsMs }', value: policy }]);
  }
  const issues: ValidationIssue[] = [];
  const workersMs = policy.workersMs ?? DEFAULT_WORKER_RETENTION_MS;
  const auditMs = policy.auditMs ?? AUDIT_LIMITS.retentionMs;
  for (const [key, v] of [
    ['archiveMs', policy.archiveMs],
    ['dlqMs', policy.dlqMs],
    ['metricsMs', policy.metricsMs],
    ['workersMs', workersMs],
    ['auditMs', auditMs],
  ] as const) {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > Number.MAX_SAFE_INTEGER) {
      issues.push({
        path: key,
        message: `must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}`,
        value: v,
      });
    }
  }
  const batchSize = policy.batchSize ?? DEFAULT_RETENTION_BATCH;
  if (
    typeof batchSize !== 'number' ||
    !Number.isInteger(batchSize) ||
    batchSize < 1 ||
    batchSize > MAX_RETENTION_BATCH
  ) {
    issues.push({
      path: 'batchSize',
      message: `must be an integer from 1 to ${MAX_RETENTION_BATCH}`,
      value: batchSize,
    });
  }
  fail(issues);
  return {
    archiveMs: policy.archiveMs,
    dlqMs: policy.dlqMs,
    metricsMs: policy.metricsMs,
    workersMs,
    auditMs,
    batchSize,
  };
}

/** A {@link WorkerHeartbeat} as the dialects write it: the lists as JSON text. */
export interface CheckedWorkerHeartbeat {
  workerId: string;
  host: string;
  pid: number;
  libraryVersion: string;
  concurrency: number;
  running: number;
  /** `{ queues, types }` as JSON. */
  handled: string;
  /** `{ "queue/type": state }` as JSON. */
  circuits: string;
  draining: boolean;
  starting: boolean;
}

const CIRCUIT_STATES: ReadonlySet<unknown> = new Set(['closed', 'open', 'half-open']);

/** An integer from `min` to `max`, or its issue. */
function intIssue(path: string, value: unknown, min: number, max: number): ValidationIssue[] {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max
    ? []
    : [{ path, message: `must be an integer from ${min} to ${max}`, value }];
}

/**
 * Validates a worker's report for its row of the Workers table, every bad field reported: the
 * worker id as a lease's, host 1–255 and library version 1–100 characters without NUL, pid,
 * concurrency and running count integers, the handled queues and types as a claim's (at most
 * {@link MAX_WORKER_REPORT_ENTRIES} each), circuits a map of `queue/type` to a circuit state,
 * and the two flags booleans.
 */
export function assertWorkerHeartbeat(report: WorkerHeartbeat): CheckedWorkerHeartbeat {
  if (report === null || typeof report !== 'object') {
    fail([{ path: 'report', message: 'must be a WorkerHeartbeat', value: report }]);
  }
  const { workerId, host, pid, libraryVersion, concurrency, running, handled, circuits } = report;
  const issues: ValidationIssue[] = [
    textIssue('workerId', workerId, MAX_WORKER_ID),
    textIssue('host', host, MAX_WORKER_HOST),
    textIssue('libraryVersion', libraryVersion, MAX_LIBRARY_VERSION),
  ].filter((i): i is ValidationIssue => i !== undefined);
  issues.push(...intIssue('pid', pid, 0, MAX_PID));
  issues.push(...intIssue('concurrency', concurrency, 0, MAX_CLAIM));
  issues.push(...intIssue('running', running, 0, MAX_PID));
  issues.push(...handledIssues(handled, 'handled'));
  if (
    handled &&
    Array.isArray(handled.queues) &&
    Array.isArray(handled.types) &&
    (handled.queues.length > MAX_WORKER_REPORT_ENTRIES ||
      handled.types.length > MAX_WORKER_REPORT_ENTRIES)
  ) {
    issues.push({
      path: 'handled',
      message: `must list at most ${MAX_WORKER_REPORT_ENTRIES} queues and ${MAX_WORKER_REPORT_ENTRIES} types`,
      value: handled,
    });
  }
  const entries =
    circuits !== null && typeof circuits === 'object' && !Array.isArray(circuits)
      ? Object.entries(circuits)
      : undefined;
  if (!entries || entries.length > MAX_WORKER_REPORT_ENTRIES) {
    issues.push({
      path: 'circuits',
      message: `must be an object of at most ${MAX_WORKER_REPORT_ENTRIES} circuit states`,
      value: circuits,
    });
  } else {
    for (const [key, state] of entries) {
      // A circuit is keyed `queue/type`.
      const keyIssue = textIssue(
        `circuits[${JSON.stringify(key)}]`,
        key,
        LIMITS.queueName + 1 + LIMITS.type,
      );
      if (keyIssue) issues.push(keyIssue);
      if (!CIRCUIT_STATES.has(state)) {
        issues.push({
          path: `circuits[${JSON.stringify(key)}]`,
          message: "must be 'closed', 'open' or 'half-open'",
          value: state,
        });
      }
    }
  }
  for (const key of ['draining', 'starting'] as const) {
    if (typeof report[key] !== 'boolean') {
      issues.push({ path: key, message: 'must be a boolean', value: report[key] });
    }
  }
  fail(issues);
  return {
    workerId,
    host,
    pid,
    libraryVersion,
    concurrency,
    running,
    // Only the known fields: a report object may carry more.
    handled: JSON.stringify({
      queues: [...handled.queues],
      types: handled.types.map((t) => ({ queue: t.queue, type: t.type })),
    }),
    circuits: JSON.stringify(Object.fromEntries(entries!)),
    draining: report.draining,
    starting: report.starting,
  };
}

/** A validated {@link WorkerQuery}, with its defaults applied. */
export interface CheckedWorkerQuery {
  lostAfterMs: number;
  limit: number;
}

/**
 * Validates the arguments of `listWorkers`: `lostAfterMs` an integer ≥ 0 (default
 * `defaultLostAfterMs`), `limit` from 1 to {@link MAX_WORKER_LIST} (default
 * {@link DEFAULT_WORKER_LIST}).
 */
export function assertWorkerQuery(
  query: WorkerQuery | undefined,
  defaultLostAfterMs: number,
): CheckedWorkerQuery {
  if (query !== undefined && (query === null || typeof query !== 'object')) {
    fail([{ path: 'query', message: 'must be { lostAfterMs?, limit? }', value: query }]);
  }
  const lostAfterMs = query?.lostAfterMs ?? defaultLostAfterMs;
  const limit = query?.limit ?? DEFAULT_WORKER_LIST;
  fail([
    ...intIssue('lostAfterMs', lostAfterMs, 0, Number.MAX_SAFE_INTEGER),
    ...intIssue('limit', limit, 1, MAX_WORKER_LIST),
  ]);
  return { lostAfterMs, limit };
}

/**
 * A progress note as stored with the percentage: null (none), or a string of at most
 * `LIMITS.progressNote` characters without NUL (the runtime cuts and cleans a handler's note
 * before it gets here).
 */
export function assertProgressNote(note: unknown, path = 'note'): string | null {
  if (note === undefined || note === null) return null;
  const issue = textIssue(path, note, LIMITS.progressNote, 0);
  fail(issue ? [issue] : []);
  return note as string;
}
