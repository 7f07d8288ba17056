import type { FailureReason } from './job-status.enum';
import type { JobView, Pillar } from './job-view.interface';

/**
 * The lifecycle events of a job, in the order a job can meet them. Each is emitted by the process
 * that made the move it describes, after that move committed:
 * - `started`: a run of the handler began (its attempt is counted);
 * - `progress`: the handler called `ctx.reportProgress`;
 * - `succeeded`: the run's success was archived;
 * - `failed`: a run of the handler failed (it threw, timed out or lost its heartbeat); followed by
 *   `retried` or `dead` for the move that failure led to;
 * - `retried`: the job went back to Pending to be tried again;
 * - `dead`: the job went to the DLQ for a failure (any reason but a cancellation);
 * - `cancelled`: the job went to the DLQ as cancelled;
 * - `stalled`: the rescue loop of this process found the job's worker gone (its heartbeat expired
 *   while the job was Processing: a zombie) and moved it on, to the DLQ as Zombie or back to
 *   Pending where zombies of its queue or handler are retried.
 *
 * @publicApi
 */
export const JOB_EVENT_NAMES = [
  'started',
  'progress',
  'succeeded',
  'failed',
  'retried',
  'dead',
  'cancelled',
  'stalled',
] as const;

/** One of {@link JOB_EVENT_NAMES}. @publicApi */
export type JobEventName = (typeof JOB_EVENT_NAMES)[number];

/**
 * One lifecycle event of one job. Process-local: only listeners in the process that made the move
 * hear it. For a cluster-wide history, read the Archive and the DLQ.
 *
 * @publicApi
 */
export interface JobEvent {
  name: JobEventName;
  /**
   * The job as this process knows it just after the move: the claimed row with the status, pillar
   * and outcome fields of the move applied. Times this process did not read from the database
   * (`finishedAtUtc`, `failedAtUtc`) are its estimate of the database clock. For `stalled`, the
   * row is the one the rescue moved, as it found it, and its `payload` is not read (null).
   */
  job: JobView;
  /** The pillar the job is in after the move. */
  pillar: Pillar;
  /** The attempt (1-based) the event belongs to. */
  attempt: number;
  /** Handler run time in ms (`succeeded`, `failed`, `dead` and `cancelled` of a run that ran). */
  durationMs?: number;
  /** The error text stored with the job (`failed`, `retried`, `dead`, `cancelled`, `stalled`). */
  error?: string;
  /** The DLQ reason (`dead`, `cancelled`, and `stalled` when the zombie went to the DLQ). */
  reason?: FailureReason;
  /** `failed` only: whether the job will be tried again (a `retried` event follows). */
  willRetry?: boolean;
  /** `retried` only: the wait before the job is due again, in ms. */
  retryDelayMs?: number;
  /** `progress` only: the percentage reported (0–100). */
  progress?: number;
  /** `progress` only: the note reported with it, if any. */
  note?: string;
  /**
   * `stalled` only: the worker whose heartbeat stopped, the job's owner when it was rescued (for
   * a job returned to Pending, `job.workerId` is already cleared).
   */
  lostWorkerId?: string;
  /** When this process emitted the event (its own clock). */
  at: Date;
}

/** Which jobs a listener hears: those of one queue, one type, or both. @publicApi */
export interface JobEventFilter {
  queue?: string;
  type?: string;
}

/** What `@OnJobEvent` stores on a method. */
export interface OnJobEventMetadata extends JobEventFilter {
  events: JobEventName[];
}
