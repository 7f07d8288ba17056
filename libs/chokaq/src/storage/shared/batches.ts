/**
 * What every dialect stores of a batch the same way: a bit per callback kind (the `kind` of a
 * `batch_callbacks` row, and the `fired` mask of its `batches` row), and the reading of a batch's
 * rows as a {@link BatchView}.
 */
import type {
  BatchEnqueued,
  BatchCallbackKind,
  BatchCallbackView,
  BatchView,
} from '../../interfaces/batch.interface';
import type { ValidatedBatch } from '../../validation/validate-job';
import { toDate } from './row-mapper';

/** The stored bit of each callback kind. */
export enum BatchCallbackBit {
  Complete = 1,
  Success = 2,
  Failure = 4,
}

export const BATCH_CALLBACK_BITS: Readonly<Record<BatchCallbackKind, BatchCallbackBit>> = {
  complete: BatchCallbackBit.Complete,
  success: BatchCallbackBit.Success,
  failure: BatchCallbackBit.Failure,
};

const KIND_OF_BIT = new Map<number, BatchCallbackKind>(
  Object.entries(BATCH_CALLBACK_BITS).map(([kind, bit]) => [bit, kind as BatchCallbackKind]),
);

/**
 * The callbacks due when a batch settles with `failed` jobs in the DLQ and those of `fired` not
 * fired yet: complete, and success (none failed) or failure. The dialects that settle in code
 * rather than in SQL (SQLite) decide with this.
 */
export function dueCallbacks(failed: number, fired: number): number {
  const due =
    BatchCallbackBit.Complete |
    (failed === 0 ? BatchCallbackBit.Success : BatchCallbackBit.Failure);
  return due & ~fired;
}

/** What `enqueueBatch` returns for a batch it wrote. */
export function batchEnqueued(batch: ValidatedBatch): BatchEnqueued {
  return {
    batchId: batch.id,
    jobIds: batch.jobs.map((j) => j.id),
    callbacks: Object.fromEntries(batch.callbacks.map((c) => [c.kind, c.job.id])),
  };
}

/**
 * A batch from its rows: one per callback (`kind`, `job_id`, `queue`, `type`), or one with NULL
 * callback columns for a batch without callbacks; null for no rows. Column names in snake_case or
 * PascalCase (folded by the caller's `fold`).
 */
export function mapBatch(rows: readonly Record<string, unknown>[]): BatchView | null {
  const [first] = rows;
  if (first === undefined) return null;
  const fired = Number(first.fired);
  const total = Number(first.total);
  const succeeded = Number(first.succeeded);
  const failed = Number(first.failed);
  const callbacks: BatchCallbackView[] = [];
  for (const row of rows) {
    if (row.kind === null || row.kind === undefined) continue;
    const bit = Number(row.kind);
    callbacks.push({
      kind: KIND_OF_BIT.get(bit)!,
      jobId: String(row.jobid),
      queue: String(row.queue),
      type: String(row.type),
      fired: (fired & bit) !== 0,
    });
  }
  return {
    id: String(first.id),
    createdAtUtc: toDate(first.createdatutc)!,
    createdBy:
      first.createdby === null || first.createdby === undefined ? null : String(first.createdby),
    total,
    succeeded,
    failed,
    pending: total - succeeded - failed,
    settledAtUtc: toDate(first.settledatutc),
    callbacks,
  };
}
