import { ChokaQError } from './chokaq.error';

/**
 * An enqueue named dependencies (`dependsOn`) that are in no table: neither hot, nor in the
 * Archive, nor in the DLQ, nor among the jobs of the same enqueue. Nothing was enqueued (the
 * transaction rolled back).
 *
 * @publicApi
 */
export class ChokaQDependencyNotFoundError extends ChokaQError {
  constructor(readonly missingIds: readonly string[]) {
    super(
      `No job has the id${missingIds.length === 1 ? '' : 's'} ${missingIds
        .slice(0, 5)
        .map((id) => `"${id}"`)
        .join(', ')}${missingIds.length > 5 ? ` (and ${missingIds.length - 5} more)` : ''}, ` +
        'named in dependsOn: nothing was enqueued. A dependency must be hot, archived or in the DLQ ' +
        '(a job removed by retention or a purge can no longer be waited on).',
    );
  }
}
