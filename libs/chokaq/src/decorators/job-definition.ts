import { ChokaQValidationError } from '../errors';
import { assertQueueName } from '../validation/validate-job';

/** Carries the payload type of a {@link JobDefinition} at compile time only; no value exists. */
declare const PAYLOAD_TYPE: unique symbol;

/**
 * A job kind bound once to its queue, type and payload type, so producers and handlers agree:
 * `jobs.enqueue(def, payload)` and `@JobHandler(def)` check `payload` against `T` at compile time.
 * Create it with {@link defineJob}.
 *
 * @publicApi
 */
export interface JobDefinition<T = unknown> {
  /** Queue the jobs go to. */
  readonly queue: string;
  /** Stable type key of the jobs (e.g. `welcome.v1`). */
  readonly type: string;
  /** Phantom field: never set, it only carries `T` for the type checker. */
  readonly [PAYLOAD_TYPE]?: T;
}

/** The payload type of a {@link JobDefinition}. @publicApi */
export type JobPayload<D> = D extends JobDefinition<infer T> ? T : never;

/**
 * Binds a queue, a type and a payload type once:
 *
 * ```ts
 * export const WelcomeEmail = defineJob<{ to: string }>('emails', 'welcome.v1');
 * await jobs.enqueue(WelcomeEmail, { to });            // payload checked against { to: string }
 * @JobHandler(WelcomeEmail) welcome(p: { to: string }, ctx: JobContext) { … }
 * ```
 *
 * The queue name is validated at once (1–255 chars of `[A-Za-z0-9._:-]`), so a typo fails at
 * import time rather than at the first enqueue. `type` defaults to the queue name.
 *
 * @publicApi
 */
export function defineJob<T = unknown>(queue: string, type: string = queue): JobDefinition<T> {
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
  return Object.freeze({ queue, type });
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
