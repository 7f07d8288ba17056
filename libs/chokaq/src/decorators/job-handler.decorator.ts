import { SetMetadata } from '@nestjs/common';
import { JOB_HANDLER_METADATA } from '../chokaq.constants';
import type {
  JobBatchItem,
  JobBatchOptions,
  JobBatchOutcome,
  JobHandlerMetadata,
  JobHandlerOptions,
} from '../interfaces/handler.interface';
import type { JobContext } from '../interfaces/job-context.interface';
import { JobDefinition, isJobDefinition } from './job-definition';

/**
 * A method decorator that accepts only methods whose first parameter takes `T` (the payload type
 * of the {@link JobDefinition}) and that return its result type `R` (or a promise of it; any value
 * when the definition names none).
 *
 * @publicApi
 */
export type TypedJobHandlerDecorator<T, R = unknown> = <
  M extends (payload: T, ctx: JobContext) => R | PromiseLike<R>,
>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;

/**
 * A method decorator that accepts only batch methods: their parameter takes the items of a batch
 * (`JobBatchItem<T>[]`, `T` the definition's payload type) and they return one outcome per item,
 * or nothing.
 *
 * @publicApi
 */
export type TypedBatchJobHandlerDecorator<T> = <
  M extends (
    items: JobBatchItem<T>[],
  ) => JobBatchOutcome[] | void | PromiseLike<JobBatchOutcome[] | void>,
>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;

/**
 * Marks a method of a singleton provider as the batch handler of a job definition's
 * `(queue, type)`: it is called as `method(items)` with up to `batch.size` jobs at once (see
 * `JobHandlerOptions.batch`).
 *
 * @publicApi
 */
export function JobHandler<T, TInput, R>(
  definition: JobDefinition<T, TInput, R>,
  options: Omit<JobHandlerOptions, 'type' | 'batch'> & { batch: JobBatchOptions },
): TypedBatchJobHandlerDecorator<T>;
/**
 * Marks a method of a singleton provider as the handler of a job definition's `(queue, type)`;
 * the method's payload parameter is checked against the definition's payload type. When the
 * definition has a schema, the worker validates each stored payload with it before the handler
 * runs and passes the schema's output; a payload that fails goes to the DLQ at once as `FatalError`.
 *
 * @publicApi
 */
export function JobHandler<T, TInput, R>(
  definition: JobDefinition<T, TInput, R>,
  options?: Omit<JobHandlerOptions, 'type'>,
): TypedJobHandlerDecorator<T, R>;
/**
 * Marks a method of a singleton provider as a job handler: `@JobHandler('emails')` runs every
 * type of the queue, `@JobHandler('emails', { type: 'welcome.v1' })` only that type (and wins
 * over a queue-wide handler). The method is called as `method(payload, ctx: JobContext)`.
 *
 * Handlers are found at startup; a duplicate `(queue, type)` or a handler on a request-scoped or
 * transient provider fails the start with an error saying what to change.
 *
 * @publicApi
 */
export function JobHandler(queue: string, options?: JobHandlerOptions): MethodDecorator;
export function JobHandler(
  queueOrDefinition: string | JobDefinition<unknown, unknown>,
  options: JobHandlerOptions = {},
): MethodDecorator {
  const metadata: JobHandlerMetadata = isJobDefinition(queueOrDefinition)
    ? {
        ...options,
        queue: queueOrDefinition.queue,
        type: queueOrDefinition.type,
        // Only a definition made with a schema carries one, so other metadata keeps its shape.
        ...(queueOrDefinition.schema !== undefined && { schema: queueOrDefinition.schema }),
        ...(queueOrDefinition.version !== undefined && { version: queueOrDefinition.version }),
        ...(queueOrDefinition.upgrade !== undefined && { upgrade: queueOrDefinition.upgrade }),
      }
    : { ...options, queue: queueOrDefinition };
  return SetMetadata(JOB_HANDLER_METADATA, metadata);
}
