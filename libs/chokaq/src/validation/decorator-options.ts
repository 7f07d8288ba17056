import { ChokaQValidationError, ValidationIssue } from '../errors';
import type { HandlerDefinition, JobHandlerMetadata } from '../interfaces/handler.interface';
import { JOB_EVENT_NAMES, type OnJobEventMetadata } from '../interfaces/job-event.interface';
import type { RecurringJobMetadata, RecurringJobSpec } from '../interfaces/recurring-job.interface';
import {
  JOB_EVENT_RULES,
  JOB_HANDLER_RULES,
  RECURRING_JOB_RULES,
  int,
  optionIssues,
  satisfies,
  timer,
} from './option-rules';
import { assertRecurringDefinition, assertRecurringName } from './validate-args';
import { scheduleIssues } from './validate-cron';
import { assertQueueName, validateNewJob } from './validate-job';
import { STANDARD_SCHEMA_RULE, isStandardSchema } from './validate-payload';
import { payloadVersionIssues } from './payload-version';
import { MAX_TIMER_MS } from './limits';

/*
 * Startup checks of decorator options. They return issues rather than throw, so the explorer can
 * report every problem of every decorator in one ChokaQValidationError, as `forRoot` does. The
 * rules are not restated here: numbers come from the option table (option-rules.ts), and
 * queues, payloads and schedules are checked by the validators that guard the writes, so a start
 * refuses exactly what would fail later at the first enqueue or the first slot.
 */

/** The issues a throwing validator reports, or none; anything else it throws is rethrown. */
function issuesOf(check: () => unknown): readonly ValidationIssue[] {
  try {
    check();
    return [];
  } catch (error) {
    if (error instanceof ChokaQValidationError) return error.issues;
    throw error;
  }
}

/** Every problem of one `@JobHandler`'s queue and options; `name` is `Class.method`. */
export function jobHandlerIssues(name: string, meta: JobHandlerMetadata): ValidationIssue[] {
  const at = (key: string) => `@JobHandler of ${name}: ${key}`;
  return [
    ...issuesOf(() => assertQueueName(meta.queue, at('queue'))),
    ...(meta.schema === undefined || isStandardSchema(meta.schema)
      ? []
      : [{ path: at('schema'), message: STANDARD_SCHEMA_RULE, value: meta.schema }]),
    ...payloadVersionIssues(meta.version, meta.upgrade, at),
    ...backoffIssues(meta.backoff, at('backoff')),
    ...batchIssues(meta, at('batch')),
    ...optionIssues(meta as unknown as Record<string, unknown>, JOB_HANDLER_RULES, at, [
      'queue',
      'schema',
      'version',
      'upgrade',
      'backoff',
      'batch',
    ]),
  ];
}

/** Most jobs per call of a batch handler. */
export const MAX_BATCH_SIZE = 1_000;
/** A batch's wait for more jobs when the handler names none. */
export const DEFAULT_BATCH_WAIT_MS = 20;
/** Longest wait of a batch for more jobs. */
export const MAX_BATCH_WAIT_MS = 60_000;

const BATCH_RULE = `must be { size: an integer from 1 to ${MAX_BATCH_SIZE}, waitMs?: an integer from 0 to ${MAX_BATCH_WAIT_MS} }`;

/** The problems of a handler's `batch`: absent, or a size and a wait in range, of a typed handler, not transactional. */
function batchIssues(meta: JobHandlerMetadata, path: string): ValidationIssue[] {
  const batch = meta.batch as unknown;
  if (batch === undefined) return [];
  const b = batch as { size?: unknown; waitMs?: unknown } | null;
  const ok =
    typeof b === 'object' &&
    b !== null &&
    Object.keys(b).every((k) => k === 'size' || k === 'waitMs') &&
    satisfies(int(1, MAX_BATCH_SIZE), b.size) &&
    (b.waitMs === undefined || satisfies(int(0, MAX_BATCH_WAIT_MS), b.waitMs));
  const issues: ValidationIssue[] = ok ? [] : [{ path, message: BATCH_RULE, value: batch }];
  if (meta.transactional === true) {
    issues.push({
      path,
      message: 'cannot be combined with transactional (one transaction per job)',
      value: batch,
    });
  }
  if (meta.type === undefined) {
    issues.push({
      path,
      message: 'needs a job type (a job definition, or the type option): a batch holds one type',
      value: batch,
    });
  }
  return issues;
}

/** Most entries of a `backoff` list. */
const MAX_BACKOFF_STEPS = 100;

const BACKOFF_RULE = `must be a function (attempt, error) => ms or a list of 1 to ${MAX_BACKOFF_STEPS} integers from 0 to ${MAX_TIMER_MS}`;

/** The problems of a handler's `backoff`: absent, a function, or a list of delays in ms. */
function backoffIssues(backoff: unknown, path: string): ValidationIssue[] {
  if (backoff === undefined || typeof backoff === 'function') return [];
  const ok =
    Array.isArray(backoff) &&
    backoff.length >= 1 &&
    backoff.length <= MAX_BACKOFF_STEPS &&
    backoff.every((ms) => satisfies(timer(0), ms));
  return ok ? [] : [{ path, message: BACKOFF_RULE, value: backoff }];
}

/**
 * Every problem of one `@OnJobEvent`: at least one event, each a name of `JOB_EVENT_NAMES`, and a
 * filter whose queue and type are valid names; `name` is `Class.method`.
 */
export function jobEventIssues(name: string, meta: OnJobEventMetadata): ValidationIssue[] {
  const at = (key: string) => `@OnJobEvent of ${name}: ${key}`;
  const issues: ValidationIssue[] = [];
  if (meta.events.length === 0) {
    issues.push({ path: at('event'), message: 'must name at least one event', value: [] });
  }
  for (const event of meta.events) {
    if (!(JOB_EVENT_NAMES as readonly unknown[]).includes(event)) {
      issues.push({
        path: at('event'),
        message: `must be one of ${JOB_EVENT_NAMES.map((n) => `'${n}'`).join(', ')}`,
        value: event,
      });
    }
  }
  if (meta.queue !== undefined)
    issues.push(...issuesOf(() => assertQueueName(meta.queue, at('queue'))));
  issues.push(
    ...optionIssues(meta as unknown as Record<string, unknown>, JOB_EVENT_RULES, at, [
      'events',
      'queue',
    ]),
  );
  return issues;
}

/**
 * Every problem of a handler definition registered without the decorator
 * (`HandlerRegistry.register`): the same rules on the same fields.
 */
export function handlerDefinitionIssues(handler: HandlerDefinition): ValidationIssue[] {
  const { queue, type, timeoutMs, maxAttempts, retryZombies, transactional, schema } = handler;
  const unbatched =
    handler.batch !== undefined && typeof handler.invokeBatch !== 'function'
      ? [
          {
            path: `@JobHandler of ${handler.name}: batch`,
            message: 'needs invokeBatch (the call of one batch)',
            value: handler.batch,
          },
        ]
      : [];
  return [
    ...unbatched,
    ...jobHandlerIssues(handler.name, {
      queue,
      type,
      timeoutMs,
      maxAttempts,
      retryZombies,
      transactional,
      schema,
      ...(handler.recordResult !== undefined && { recordResult: handler.recordResult }),
      ...(handler.backoff !== undefined && { backoff: handler.backoff }),
      // Only when given, so the rules see the same keys as before for an unversioned handler.
      ...(handler.version !== undefined && { version: handler.version }),
      ...(handler.upgrade !== undefined && { upgrade: handler.upgrade }),
      ...(handler.batch !== undefined && { batch: handler.batch }),
    }),
  ];
}

/**
 * Every problem of one `@RecurringJob`: its name, cron expression and time zone (as the stored
 * record is checked), its queue (`queue`, resolved from the handler when not given, undefined when
 * there is none), its payload (as an enqueue is checked, against `payloadMaxBytes`), its other
 * options and unknown keys. `where` is `Class` or `Class.method`.
 */
export function recurringJobIssues(
  meta: RecurringJobMetadata,
  where: string,
  queue: string | undefined,
  type: string,
  payloadMaxBytes: number,
): ValidationIssue[] {
  const at = (key: string) => `@RecurringJob('${meta.name}') on ${where}: ${key}`;
  const missingQueue = 'is required on a class, or on a method that is not a @JobHandler';
  return recurringIssues(meta, queue, type, payloadMaxBytes, at, missingQueue);
}

/**
 * Validates a recurring job given in data (`ChokaQAdmin.upsertRecurringJob`) by exactly the rules
 * of `@RecurringJob` ({@link recurringJobIssues}), issue paths being the spec's keys. `type`
 * defaults to the queue, as for a `@RecurringJob` on a class. Throws `ChokaQValidationError` with
 * every problem; returns the spec with its defaults applied.
 */
export function assertRecurringJobSpec(
  spec: RecurringJobSpec,
  payloadMaxBytes: number,
): Required<RecurringJobSpec> {
  if (spec === null || typeof spec !== 'object') {
    throw new ChokaQValidationError([{ path: 'spec', message: 'must be an object', value: spec }]);
  }
  const { queue, type, ...rest } = spec;
  // The decorator's metadata carries no queue of its own when a handler gives it; here the queue
  // is a plain field, passed as the decorator's resolved queue, and `type` defaults to it.
  const meta: RecurringJobMetadata = { ...rest, ...(type === undefined ? {} : { type }) };
  const issues = recurringIssues(
    meta,
    queue,
    type ?? queue ?? '',
    payloadMaxBytes,
    (key) => key,
    'is required',
  );
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  return {
    name: spec.name,
    cron: spec.cron,
    timeZone: spec.timeZone ?? 'UTC',
    queue: queue,
    type: type ?? queue,
    payload: spec.payload ?? {},
    misfire: spec.misfire ?? 'skip',
  };
}

/** The checks shared by a `@RecurringJob` and a recurring job given in data; `at` names a key. */
function recurringIssues(
  meta: RecurringJobMetadata,
  queue: string | undefined,
  type: string,
  payloadMaxBytes: number,
  at: (key: string) => string,
  missingQueue: string,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [
    ...issuesOf(() => assertRecurringName(meta.name, at('name'))),
    ...scheduleIssues(meta.cron, meta.timeZone ?? 'UTC', {
      cron: at('cron'),
      timeZone: at('timeZone'),
    }),
  ];
  if (queue === undefined) {
    issues.push({ path: at('queue'), message: missingQueue, value: undefined });
  } else {
    issues.push(...issuesOf(() => assertQueueName(queue, at('queue'))));
  }
  issues.push(
    ...optionIssues(meta as unknown as Record<string, unknown>, RECURRING_JOB_RULES, at, [
      'name',
      'cron',
      'queue',
      'payload',
      'timeZone',
    ]),
  );
  // Every slot enqueues this payload: refuse now what each enqueue would refuse.
  const payload = issuesOf(() =>
    validateNewJob({ queue: 'q', type: 't', payload: meta.payload ?? {} }, payloadMaxBytes),
  );
  issues.push(...payload.map((i) => ({ ...i, path: at(i.path) })));
  if (issues.length > 0 || queue === undefined) return issues;
  // The record the recurring loop will store, checked by the storage's own rule: this catches
  // what the checks above leave to it (the widths of the cron and time-zone columns).
  return issuesOf(() =>
    assertRecurringDefinition(
      {
        name: meta.name,
        cron: meta.cron,
        timeZone: meta.timeZone ?? 'UTC',
        queue,
        type,
        payload: meta.payload ?? {},
        misfirePolicy: meta.misfire ?? 'skip',
        nextSlotUtc: new Date(),
      },
      payloadMaxBytes,
    ),
  ).map((i) => ({ ...i, path: at(i.path === 'misfirePolicy' ? 'misfire' : i.path) }));
}
