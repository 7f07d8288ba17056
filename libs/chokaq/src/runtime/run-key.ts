import type { RunRef } from '../interfaces/job.interface';

/**
 * The key of one run, `(id, leaseId)`: what every map of runs in the runtime is keyed by. A job id
 * alone is not enough, because one process can hold a stale run of a job (its event loop stalled
 * past the zombie timeout, the job was rescued or resurrected) and the run that replaced it at the
 * same time. A NUL cannot occur in a UUID or a lease id, so the pair is unambiguous.
 */
export function runKey(run: RunRef): string {
  return `${run.id}\u0000${run.leaseId}`;
}
