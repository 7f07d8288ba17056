import type { JobDefinition } from '../decorators/job-definition';
import type { NewJob } from '../interfaces/job.interface';
import type { TransactionOption } from './job-client';

/**
 * Per-job options of a batch's job: those of `enqueue` less an id or a key, which a job that
 * belongs to one new batch cannot use. A callback takes neither a delay nor a run time: it runs
 * when the batch settles. @publicApi
 */
export type BatchJobOptions = Pick<
  NewJob,
  'priority' | 'delayMs' | 'runAt' | 'group' | 'tags' | 'createdBy'
>;

/** A job of a batch, or a batch's callback, as {@link batchJob} makes it. @publicApi */
export interface BatchEntry {
  readonly target: string | JobDefinition<unknown, unknown>;
  readonly payload: unknown;
  readonly options: BatchJobOptions & { type?: string };
}

/** Options of `JobClient.enqueueBatch`. @publicApi */
export interface EnqueueBatchOptions extends TransactionOption {
  /** Enqueued by the move that settles the batch, the first time, whatever the outcomes. */
  onComplete?: BatchEntry;
  /** Enqueued the first time the batch settles with none of its jobs in the DLQ. */
  onSuccess?: BatchEntry;
  /** Enqueued the first time the batch settles with at least one of its jobs in the DLQ. */
  onFailure?: BatchEntry;
  /** Who made the batch (the jobs' `createdBy` unless they name their own), ≤ 100 chars. */
  createdBy?: string;
}

/**
 * One job of `JobClient.enqueueBatch`, or one of its callbacks: a definition (its payload typed
 * and checked by its schema) or a plain queue, the payload and the per-job options.
 *
 * ```ts
 * await jobs.enqueueBatch(
 *   users.map((u) => batchJob(SendReport, { userId: u.id })),
 *   { onComplete: batchJob(ReportsSent, { month }) },
 * );
 * ```
 *
 * @publicApi
 */
export function batchJob<T, TInput>(
  definition: JobDefinition<T, TInput>,
  payload: NoInfer<TInput>,
  options?: BatchJobOptions,
): BatchEntry;
export function batchJob(
  queue: string,
  payload?: unknown,
  options?: BatchJobOptions & { type?: string },
): BatchEntry;
export function batchJob(
  target: string | JobDefinition<unknown, unknown>,
  payload?: unknown,
  options: BatchJobOptions & { type?: string } = {},
): BatchEntry {
  return { target, payload, options };
}
