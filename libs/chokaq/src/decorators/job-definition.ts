import { ChokaQValidationError } from '../errors';
import type {
  StandardSchemaInput,
  StandardSchemaOutput,
  StandardSchemaV1,
} from '../interfaces/standard-schema.interface';
import type { PayloadUpgradeStep } from '../interfaces/handler.interface';
import { payloadVersionIssues } from '../validation/payload-version';
import { assertQueueName } from '../validation/validate-job';
import { STANDARD_SCHEMA_RULE, isStandardSchema } from '../validation/validate-payload';

/** Carries the payload type of a {@link JobDefinition} at compile time only; no value exists. */
declare const PAYLOAD_TYPE: unique symbol;
/** Carries what producers pass (the schema's input type); no value exists. */
declare const INPUT_TYPE: unique symbol;
/** Carries what the handler returns (its stored result, `recordResult`); no value exists. */
declare const RESULT_TYPE: unique symbol;

/**
 * A job kind bound once to its queue, type and payload type, so producers and handlers agree:
 * `jobs.enqueue(def, payload)` checks `payload` against `TInput` and `@JobHandler(def)` the
 * handler's parameter against `T`, at compile time. With a schema they are the schema's input and
 * output types, and the payload is also checked at run time (see {@link defineJob}); without one
 * both are `T`. `TResult` is what its handler returns (stored with `recordResult`): the handler's
 * return type is checked against it and `JobClient.getResult` returns it. Create it with
 * {@link defineJob}.
 *
 * @publicApi
 */
export interface JobDefinition<T = unknown, TInput = T, TResult = unknown> {
  /** Queue the jobs go to. */
  readonly queue: string;
  /** Stable type key of the jobs (e.g. `welcome.v1`). */
  readonly type: string;
  /** The payload's Standard Schema, when the definition has one. */
  readonly schema?: StandardSchemaV1<TInput, T>;
  /**
   * The version of the payload's shape (an integer ≥ 1), when the definition has one: stored with
   * every job it enqueues, and the newest version its handler runs. Absent means 1.
   */
  readonly version?: number;
  /**
   * The upgrade chain of a versioned definition: `upgrade[v]` turns a version v payload into a
   * version v + 1 payload, so a handler of `version` runs payloads enqueued as any version from
   * the lowest key up.
   */
  readonly upgrade?: Readonly<Record<number, PayloadUpgradeStep>>;
  /** Phantom field: never set, it only carries `T` for the type checker. */
  readonly [PAYLOAD_TYPE]?: T;
  /** Phantom field: never set, it only carries `TInput` for the type checker. */
  readonly [INPUT_TYPE]?: TInput;
  /** Phantom field: never set, it only carries `TResult` for the type checker. */
  readonly [RESULT_TYPE]?: TResult;
}

/** The payload type a handler of a {@link JobDefinition} receives (a schema's output). @publicApi */
export type JobPayload<D> = D extends JobDefinition<infer T, unknown> ? T : never;

/** The payload type producers pass for a {@link JobDefinition} (a schema's input). @publicApi */
export type JobInput<D> = D extends JobDefinition<unknown, infer I> ? I : never;

/** The result type a {@link JobDefinition}'s handler returns (and `recordResult` stores). @publicApi */
export type JobResult<D> = D extends JobDefinition<unknown, unknown, infer R> ? R : never;

/**
 * The versions of a payload's shape (see {@link defineJob}): `version`, an integer from 1 to
 * 2^31-1 (default 1), and `upgrade`, a function per earlier version v from the version v payload to
 * the version v + 1 payload (each may be async). The keys must be contiguous up to `version` − 1.
 *
 * @publicApi
 */
export interface PayloadVersionOptions {
  /** The version of the payloads this definition enqueues and its handler expects. Default 1. */
  version?: number;
  /**
   * `{ 1: (p) => …, 2: (p) => … }`: step v upgrades a version v payload to version v + 1. A stored
   * payload of version v runs `upgrade[v]`, then `upgrade[v + 1]`, … up to `version`, before the
   * schema check and the handler; the stored payload is never changed.
   */
  upgrade?: Readonly<Record<number, PayloadUpgradeStep>>;
}

/** Options of {@link defineJob}. @publicApi */
export interface DefineJobOptions<S extends StandardSchemaV1> extends PayloadVersionOptions {
  /**
   * Any Standard Schema v1 validator (zod ≥ 3.24, valibot ≥ 1.0, arktype ≥ 2.0, …) of the payload.
   * The payload types are inferred from it; `enqueue` refuses a payload it rejects before anything
   * is written, and the worker checks the stored payload again before the handler runs.
   */
  schema: S;
}

/**
 * Binds a queue, a type and a payload type once:
 *
 * ```ts
 * export const WelcomeEmail = defineJob<{ to: string }>('emails', 'welcome.v1');
 * await jobs.enqueue(WelcomeEmail, { to });            // payload checked against { to: string }
 * @JobHandler(WelcomeEmail) welcome(p: { to: string }, ctx: JobContext) { … }
 * ```
 *
 * or, checked at run time too, with any Standard Schema validator:
 *
 * ```ts
 * export const WelcomeEmail = defineJob('emails', 'welcome.v1', {
 *   schema: z.object({ to: z.email() }),
 * });
 * ```
 *
 * With a schema, `enqueue`, `enqueueMany` and `schedule` validate every payload (as it will be
 * stored, after a JSON round trip) before anything is written, and throw a
 * `ChokaQPayloadValidationError` with the schema's issues; what is stored is the payload the caller
 * passed, not the schema's output. The worker validates the stored payload before the middleware
 * and the handler run, and hands them the schema's output (defaults and transforms applied); a
 * payload that fails goes to the DLQ at once as `FatalError`, the issues in its error text.
 *
 * Versions: `{ version: 3, upgrade: { 1: (p) => …, 2: (p) => … } }` stores 3 with every job
 * enqueued through the definition, and lets its handler run jobs enqueued as version 1 or 2: the
 * stored payload goes through the chain (a copy; the stored one is never changed), then the
 * schema, then the handler. A process claims a job only if its handler runs that version, so an
 * older process never claims a newer payload during a rolling deploy. Checked here: the version an
 * integer from 1 to 2^31-1, the upgrade keys integers below it, each a function, no gap up to
 * `version` − 1 (a `ChokaQValidationError` naming the problem).
 *
 * Results: `defineJob<{ month: string }, { rows: number }>('reports', 'monthly.v1')` names what the
 * handler returns as well; `@JobHandler(def, { recordResult: true })` stores it and
 * `JobClient.getResult(def, id)` reads it back with that type (with a schema:
 * `defineJob<typeof schema, { rows: number }>(…)`).
 *
 * The queue name is validated at once (1–255 chars of `[A-Za-z0-9._:-]`), so a typo fails at
 * import time rather than at the first enqueue. `type` defaults to the queue name.
 *
 * @publicApi
 */
export function defineJob<S extends StandardSchemaV1, R = unknown>(
  queue: string,
  type: string | undefined,
  options: DefineJobOptions<S>,
): JobDefinition<StandardSchemaOutput<S>, StandardSchemaInput<S>, R>;
export function defineJob<T = unknown, R = unknown>(
  queue: string,
  type?: string,
  options?: PayloadVersionOptions,
): JobDefinition<T, T, R>;
export function defineJob(
  queue: string,
  type: string = queue,
  options?: PayloadVersionOptions & { schema?: StandardSchemaV1 },
): JobDefinition {
  assertQueueName(queue, 'defineJob.queue');
  if (
    typeof type !== 'string' ||
    type.length === 0 ||
    type.length > 255 ||
    type.includes('\u0000')
  ) {
    throw new ChokaQValidationError([
      {
        path: 'defineJob.type',
        message: 'must be a string of 1–255 characters without NUL',
        value: type,
      },
    ]);
  }
  if (options === undefined) return Object.freeze({ queue, type });
  if (options === null || typeof options !== 'object') {
    throw new ChokaQValidationError([
      { path: 'defineJob.options', message: 'must be an object', value: options },
    ]);
  }
  const { schema, version, upgrade } = options;
  // A `schema` key must hold a validator (`{ schema: undefined }` is a mistake, not "no schema").
  if ('schema' in options && !isStandardSchema(schema)) {
    throw new ChokaQValidationError([
      { path: 'defineJob.options.schema', message: STANDARD_SCHEMA_RULE, value: schema },
    ]);
  }
  const issues = payloadVersionIssues(version, upgrade, (key) => `defineJob.options.${key}`);
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  return Object.freeze({
    queue,
    type,
    // Only what was given, so an unversioned definition keeps its shape.
    ...(schema !== undefined && { schema }),
    ...(version !== undefined && { version }),
    ...(upgrade !== undefined && { upgrade: Object.freeze({ ...upgrade }) }),
  });
}

/** True for a value made by {@link defineJob} (or shaped like one). */
export function isJobDefinition(value: unknown): value is JobDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as JobDefinition).queue === 'string' &&
    typeof (value as JobDefinition).type === 'string'
  );
}
