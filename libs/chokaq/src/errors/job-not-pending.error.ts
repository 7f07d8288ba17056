import { JobStatus } from '../interfaces/job-status.enum';
import { ChokaQError } from './chokaq.error';

/**
 * `updatePending` was refused: the job is no longer Pending (a worker has claimed it, started it,
 * or it has finished), or no job has the id. `status` says which (null: no such job); nothing
 * was changed.
 *
 * @publicApi
 */
export class ChokaQJobNotPendingError extends ChokaQError {
  constructor(
    /** The job the edit named. */
    readonly jobId: string,
    /** Its status when the edit was refused; null when no job has the id. */
    readonly status: JobStatus | null,
  ) {
    super(
      status === null
        ? `Job ${jobId} cannot be edited: no job has this id`
        : `Job ${jobId} cannot be edited: it is ${JobStatus[status]}, and only a Pending job can be`,
    );
  }
}
