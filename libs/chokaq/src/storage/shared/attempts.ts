import { FailureReason } from '../../interfaces/job-status.enum';
import type { JobAttempt, JobAttemptOutcome } from '../../interfaces/job-view.interface';
import { toDate } from './row-mapper';

/*
 * The attempt history (`JobAttempts`), the same rules on every dialect:
 * - A row is written for a run that STARTED (its hot row was Processing, status 2) and ended
 *   anywhere but in the archive, in the transaction (PostgreSQL: the statement) of the move that
 *   ended it: `rescheduleForRetry`, a Hot → DLQ move of a Processing row, `archiveZombies`. The
 *   successful last attempt is the archive row itself, so `archiveSucceeded` writes nothing, and a
 *   job that succeeds at its first attempt has no row at all.
 * - A job cancelled or dead-lettered while Pending or Fetched (no run started under that claim)
 *   has no attempt for it: nothing ran. A Processing job cancelled by an operator ends its run
 *   when its worker moves it to the DLQ as Cancelled: that run's row says `cancelled`.
 * - The worker, lease, start time and attempt number are the hot row's at the move (set when the
 *   run started); the finish time is the move's, on the database clock.
 * - `seq` numbers a job's rows from 1 in the order they were written and keeps counting after a
 *   resurrect (which restarts `attempt_count`), so `(job id, seq)` is the key. Only the mover of
 *   the job's hot row can write its next row, so two writers never race for one `seq`.
 * - A resurrect keeps the rows; purging the DLQ row or retention of the archive or DLQ row
 *   deletes them in the same transaction.
 */

/** The failure reasons whose moves end a run with an outcome other than `failed`. */
const OUTCOME_BY_REASON: ReadonlyArray<[FailureReason, JobAttemptOutcome]> = [
  [FailureReason.Timeout, 'timeout'],
  [FailureReason.Cancelled, 'cancelled'],
  [FailureReason.Zombie, 'zombie'],
];

/** The attempt outcome of a Hot → DLQ move of a running job, by the move's failure reason. */
export function attemptOutcomeOf(reason: FailureReason): JobAttemptOutcome {
  return OUTCOME_BY_REASON.find(([r]) => r === reason)?.[1] ?? 'failed';
}

const OUTCOMES: readonly JobAttemptOutcome[] = [
  'retried',
  'timeout',
  'zombie',
  'cancelled',
  'failed',
];

/** Maps an attempt row (`job_attempts` or `JobAttempts`: the names fold alike). */
export function mapAttemptRow(raw: Record<string, unknown>): JobAttempt {
  const r: Record<string, unknown> = {};
  for (const key in raw) r[key.replace(/_/g, '').toLowerCase()] = raw[key];
  const outcome = String(r.outcome) as JobAttemptOutcome;
  if (!OUTCOMES.includes(outcome)) throw new TypeError(`Unknown attempt outcome ${outcome}`);
  const nullable = (value: unknown): number | null =>
    value === null || value === undefined ? null : Number(value);
  return {
    seq: Number(r.seq),
    attempt: Number(r.attempt),
    workerId: r.workerid === null || r.workerid === undefined ? null : String(r.workerid),
    leaseId: r.leaseid === null || r.leaseid === undefined ? null : String(r.leaseid),
    startedAtUtc: toDate(r.startedatutc),
    finishedAtUtc: toDate(r.finishedatutc)!,
    outcome,
    error: r.error === null || r.error === undefined ? null : String(r.error),
    durationMs: nullable(r.durationms),
  };
}

/**
 * {@link attemptOutcomeOf} as a SQL `CASE` over `reasonSql` (a failure reason expression), for
 * the server dialects' DLQ moves, whose reason is a parameter: every literal comes from here.
 */
export function attemptOutcomeSql(reasonSql: string): string {
  const whens = OUTCOME_BY_REASON.map(([reason, outcome]) => `WHEN ${reason} THEN '${outcome}'`);
  return `CASE ${reasonSql} ${whens.join(' ')} ELSE 'failed' END`;
}
