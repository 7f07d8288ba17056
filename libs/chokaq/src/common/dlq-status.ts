import { FailureReason, JobStatus } from '../interfaces/job-status.enum';

/** The DLQ status a failure reason lands as: the one rule the storage and the events share. */
export function dlqStatusFor(reason: FailureReason): JobStatus {
  if (reason === FailureReason.Cancelled || reason === FailureReason.DependencyFailed) {
    return JobStatus.Cancelled;
  }
  if (reason === FailureReason.Zombie) return JobStatus.Zombie;
  return JobStatus.Failed;
}
