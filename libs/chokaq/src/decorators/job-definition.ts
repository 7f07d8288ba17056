import { ChokaQValidationError } from '../errors';
import type {
  StandardSchemaInput,
  StandardSchemaOutput,
  StandardSchemaV1,
} from '../interfaces/standard-schema.interface';
import { assertQueueName } from '../validation/validate-job';
import { STANDARD_SCHEMA_RULE, isStandardSchema } from '../validation/validate-payload';

/** Carries the payload type of a {@link JobDefinition} at compile time only; no value exists. */
declare const PAYLOAD_TYPE: unique symbol;
/** Carries what producers pass (the schema's input type); no value exists. */
declare const INPUT_TYPE: unique symbol;

/**
 * A job kind bound once to its queue, type and payload type, so producers and handlers agree:
 * `jobs.enqueue(def, payload)` checks `payload` against `TInput` and `@JobHandler(def)` the
 * handler's parameter against `T`, at compile time. With a schema they are the schema's input and
 * output types, and the payload is also checked at run time (see {@link defineJob}); without one
 * both are `T`. Create it with {@link defineJob}.
 *
 * @publicApi
 */
export interface JobDefinition<T = unknown, TInput = T> {
  /** Queue the jobs go to. */
  readonly queue: string;
  /** Stable type key of the jobs (e.g. `welcome.v1`). */
  readonly type: string;
  /** The payload's Standard Schema, when the definition has one. */
  readonly schema?: StandardSchemaV1<TInput, T>;
  /** Phantom field: never set, it only carries `T` for the type checker. */
  readonly [PAYLOAD_TYPE]?: T;
  /** Phantom field: never set, it only carries `TInput` for the type checker. */
  readonly [INPUT_TYPE]?: TInput;
}

/** The payload type a handler of a {@link JobDefinition} receives (a schema's output). @publicApi */
export type JobPayload<D> = D extends JobDefinition<infer T, unknown> ? T : never;

/** The payload type producers pass for a {@link JobDefinition} (a schema's input). @publicApi */
export type JobInput<D> = D extends JobDefinition<unknown, infer I> ? I : never;

/** Options of {@link defineJob}. @publicApi */
export interface DefineJobOptions<S extends StandardSchemaV1> {
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
 * The queue name is validated at once (1–255 chars of `[A-Za-z0-9._:-]`), so a typo fails at
 * import time rather than at the first enqueue. `type` defaults to the queue name.
 *
 * @publicApi
 */
export function defineJob<S extends StandardSchemaV1>(
  queue: string,
  type: string | undefined,
  options: DefineJobOptions<S>,
): JobDefinition<StandardSchemaOutput<S>, StandardSchemaInput<S>>;
export function defineJob<T = unknown>(queue: string, type?: string): JobDefinition<T>;
export function defineJob(
  queue: string,
  type: string = queue,
  options?: DefineJobOptions<StandardSchemaV1>,
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
  const schema = (options as Partial<DefineJobOptions<StandardSchemaV1>> | null)?.schema;
  if (!isStandardSchema(schema)) {
    throw new ChokaQValidationError([
      { path: 'defineJob.options.schema', message: STANDARD_SCHEMA_RULE, value: schema },
    ]);
  }
  return Object.freeze({ queue, type, schema });
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
