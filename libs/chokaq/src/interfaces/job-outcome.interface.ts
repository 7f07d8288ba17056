import type { FailureReason } from './job-status.enum';

/**
 * How one claimed job left this worker.
 * - `succeeded`: archived (see `applied`);
 * - `retried`: back to Pending with a delay (ordinary or throttled failure);
 * - `failed`: moved to the DLQ (`reason` says why);
 * - `cancelled`: moved to the DLQ as Cancelled while running;
 * - `released`: handed back without a verdict — circuit open, queue paused, shutdown, lease lost,
 *   or abandoned at the end of the shutdown grace period (then the rescue loop decides).
 *
 * @publicApi
 */
export interface JobOutcome {
  id: string;
  /**
   * The lease the run was claimed under: with `id` it names the run. One process can see two runs
   * of one job (a stale one and the one that replaced it), and their outcomes differ.
   */
  leaseId: string;
  queue: string;
  type: string;
  outcome: 'succeeded' | 'retried' | 'failed' | 'cancelled' | 'released';
  /** The attempt that ran (1-based); for a job that never started, the attempt it would have been. */
  attempt: number;
  /** The error text stored with the job, when there was one. */
  error?: string;
  /** The DLQ reason, for `failed` and `cancelled`. */
  reason?: FailureReason;
  /**
   * False when the storage refused the transition (zero rows: the lease was lost because the job
   * was cancelled, rescued or resurrected meanwhile) or could not be reached; the row's current
   * owner or the rescue loop decides its fate then.
   */
  applied?: boolean;
  /** Handler run time in ms, when the handler ran. */
  durationMs?: number;
  /** For `retried`: the delay before the job is due again, in ms. */
  retryDelayMs?: number;
}
