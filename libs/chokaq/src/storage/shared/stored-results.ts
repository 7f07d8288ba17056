import type { CompletedJob } from '../../interfaces/job.interface';

/**
 * True when some run of a batch of completions records its result (`recordResult`): the batch then
 * takes its dialect's result-carrying archive statement. Every other batch keeps the statement it
 * had before stored results, byte for byte, so handlers that store nothing pay nothing.
 */
export function hasResults(completed: readonly Pick<CompletedJob, 'result'>[]): boolean {
  return completed.some((c) => c.result !== undefined);
}
