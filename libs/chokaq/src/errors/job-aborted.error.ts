import { ChokaQError } from './chokaq.error';

/** Why the worker aborted a running job's signal (other than its timeout). @publicApi */
export type JobAbortCause = 'cancelled' | 'shutdown' | 'heartbeat-failure';

/**
 * The reason of a job's `AbortSignal` when the job is cancelled, the worker shuts down, or the
 * worker's heartbeats keep failing. A cooperative handler stops its work and rethrows: on shutdown
 * the job then returns to Pending (keeping its attempt) and runs again elsewhere, so make the work
 * idempotent.
 *
 * @publicApi
 */
export class ChokaQJobAbortedError extends ChokaQError {
  constructor(
    readonly jobId: string,
    readonly abortCause: JobAbortCause,
  ) {
    super(`Job ${jobId} was aborted: ${ABORT_TEXT[abortCause]}.`);
  }
}

const ABORT_TEXT: Record<JobAbortCause, string> = {
  cancelled: 'its cancellation was requested',
  shutdown: 'the worker is shutting down; the job returns to Pending and runs again',
  'heartbeat-failure':
    'the worker could not renew its heartbeat, so another process may take the job over',
};
