import { SetMetadata } from '@nestjs/common';
import { JOB_HANDLER_METADATA } from '../chokaq.constants';
import type { JobHandlerMetadata, JobHandlerOptions } from '../interfaces/handler.interface';
import type { JobContext } from '../interfaces/job-context.interface';
import { JobDefinition, isJobDefinition } from './job-definition';

/**
 * A method decorator that accepts only methods whose first parameter takes `T`
 * (the payload type of the {@link JobDefinition}).
 *
 * @publicApi
 */
export type TypedJobHandlerDecorator<T> = <M extends (payload: T, ctx: JobContext) => unknown>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;

/**
 * Marks a method of a singleton provider as the handler of a job definition's `(queue, type)`;
 * the method's payload parameter is checked against the definition's payload type.
 *
 * @publicApi
 */
export function JobHandler<T>(
  definition: JobDefinition<T>,
  options?: Omit<JobHandlerOptions, 'type'>,
): TypedJobHandlerDecorator<T>;
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
  queueOrDefinition: string | JobDefinition<unknown>,
  options: JobHandlerOptions = {},
): MethodDecorator {
  const metadata: JobHandlerMetadata = isJobDefinition(queueOrDefinition)
    ? { ...options, queue: queueOrDefinition.queue, type: queueOrDefinition.type }
    : { ...options, queue: queueOrDefinition };
  return SetMetadata(JOB_HANDLER_METADATA, metadata);
}
