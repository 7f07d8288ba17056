import { FailureReason, JobStatus } from '../../interfaces/job-status.enum';

/** The DLQ status a failure reason lands as. */
export function dlqStatusFor(reason: FailureReason): JobStatus {
  if (reason === FailureReason.Cancelled) return JobStatus.Cancelled;
  if (reason === FailureReason.Zombie) return JobStatus.Zombie;
  return JobStatus.Failed;
}

/** Metric-bucket outcome codes: 0 succeeded, 1 failed, 2 cancelled (cancellations are not failures). */
export enum Outcome {
  Succeeded = 0,
  Failed = 1,
  Cancelled = 2,
}
