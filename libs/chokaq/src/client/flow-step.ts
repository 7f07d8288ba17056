import type { JobDefinition } from '../decorators/job-definition';
import type { DependencyPolicy, JobDependency, NewJob } from '../interfaces/job.interface';
import type { TransactionOption } from './job-client';

/**
 * Per-step options of `JobClient.enqueueFlow`: those of `enqueue`, with `after` naming the steps of
 * the same flow this one waits on, and `dependsOn` the existing jobs it waits on (their ids). A
 * step takes no idempotency or dedupe key: the steps that wait on it wait on the job it makes. To
 * make a flow safe to retry, give its steps their own `id`s: a retry then makes none of them again.
 * @publicApi
 */
export type FlowStepOptions = Pick<
  NewJob,
  'id' | 'priority' | 'delayMs' | 'runAt' | 'group' | 'tags' | 'createdBy'
> & {
  /** Steps of this flow to wait on: a step's name, or `{ step, onFailure }` (default `block`). */
  after?: readonly (string | FlowStepDependency)[];
  /** Jobs outside the flow to wait on (`NewJob.dependsOn`). */
  dependsOn?: readonly (string | JobDependency)[];
};

/** One step a flow step waits on, with what its failure does. @publicApi */
export interface FlowStepDependency {
  step: string;
  /** Default `block`. */
  onFailure?: DependencyPolicy;
}

/** A step of a flow, as {@link flowStep} makes it. @publicApi */
export interface FlowStep {
  readonly target: string | JobDefinition<unknown, unknown>;
  readonly payload: unknown;
  readonly options: FlowStepOptions & { type?: string };
}

/** Options of `JobClient.enqueueFlow`. @publicApi */
export type EnqueueFlowOptions = TransactionOption;

/** What `enqueueFlow` returns: each step's job id, by step name. @publicApi */
export interface FlowEnqueued {
  jobIds: Record<string, string>;
}

/**
 * One step of `JobClient.enqueueFlow`: a definition (its payload typed and checked by its schema)
 * or a queue, its payload, and its options; `after` names the steps it waits on.
 *
 * ```ts
 * await jobs.enqueueFlow({
 *   east: flowStep(SalesReport, { region: 'east' }),
 *   west: flowStep(SalesReport, { region: 'west' }),
 *   total: flowStep(MergeReports, { month }, { after: ['east', 'west'] }),
 * });
 * ```
 *
 * @publicApi
 */
export function flowStep<T, TInput>(
  definition: JobDefinition<T, TInput>,
  payload: NoInfer<TInput>,
  options?: FlowStepOptions,
): FlowStep;
export function flowStep(
  queue: string,
  payload?: unknown,
  options?: FlowStepOptions & { type?: string },
): FlowStep;
export function flowStep(
  target: string | JobDefinition<unknown, unknown>,
  payload?: unknown,
  options: FlowStepOptions & { type?: string } = {},
): FlowStep {
  return { target, payload, options };
}
