export { dlqStatusFor } from '../../common/dlq-status';

/** Metric-bucket outcome codes: 0 succeeded, 1 failed, 2 cancelled (cancellations are not failures). */
export enum Outcome {
  Succeeded = 0,
  Failed = 1,
  Cancelled = 2,
}
