import { errorText, sanitizeErrorText } from './error-text';

/**
 * The texts ChokaQ itself stores in `LastError` / `ErrorDetails`, the same on every dialect and in
 * one place, so a DLQ grouped by error (`getTopDlqErrors`) sees one family per event, whatever the
 * database. The storage's validating edge writes the Zombie and Cancelled texts; the runtime writes
 * the texts of runs it ends itself.
 */
export const STORED_TEXT = {
  /**
   * A Processing row whose heartbeat expired: the DLQ error of a dead one and the `LastError` of
   * one returned to Pending (RetryZombies), one text for both.
   */
  zombie:
    'Zombie: the heartbeat expired while the job was Processing (the worker crashed, hung or lost ' +
    'its database); the handler may have run partly.',
  /** The DLQ error of a job cancelled before it ran, naming who cancelled it when known. */
  cancelled: (actor: string | null): string =>
    sanitizeErrorText(actor === null ? 'Cancelled' : `Cancelled by ${actor}`),
  /** The DLQ error of a job started ahead whose cancellation reached its worker before a slot did. */
  cancelledBeforeRun: 'Cancelled while started ahead, before its handler ran',
  /** The DLQ error of a running job whose cancellation aborted its signal. */
  cancelledWhileRunning: 'Cancelled while running: the handler signal was aborted',
  /** The DLQ error of a run aborted because its worker could not renew the heartbeat. */
  heartbeatLost: 'Aborted because the worker could not renew its heartbeat',
  /** `LastError` of a started job handed back to Pending by shutdown before its handler ran. */
  shutdownBeforeStart: 'Returned to Pending by worker shutdown before the handler started',
  /** `LastError` of a run whose handler stopped when shutdown aborted its signal. */
  shutdownStopped: (error: unknown): string =>
    `Returned to Pending by worker shutdown (the handler stopped when its signal was aborted): ${errorText(error)}`,
} as const;
