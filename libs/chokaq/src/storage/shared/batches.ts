/**
 * What every dialect stores of a batch the same way: a bit per callback kind (the `kind` of a
 * `batch_callbacks` row, and the `fired` mask of its `batches` row), and the reading of a batch's
 * rows as a {@link BatchView} and of its archived jobs' results as a {@link BatchResultsPage}.
 */
import type {
  BatchEnqueued,
  BatchCallbackKind,
  BatchCallbackView,
  BatchResultsPage,
  BatchView,
} from '../../interfaces/batch.interface';
import type { ValidatedBatch } from '../../validation/validate-job';
import { fold, numOrNull, parsePayload, str, toDate } from './row-mapper';

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
    const bit = numOrNull(row.kind);
    if (bit === null) continue;
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
    createdBy: str(first.createdby),
    total,
    succeeded,
    failed,
    pending: total - succeeded - failed,
    settledAtUtc: toDate(first.settledatutc),
    callbacks,
  };
}

/**
 * A page of a batch's results from the rows of its read (`id`, `result`; any case, folded here),
 * in id order, which read `limit + 1` rows: the extra row only says that a next page exists, and
 * the page's last id is then its cursor. A result is the stored JSON text, parsed; NULL (a handler
 * that records none) is null.
 */
export function mapBatchResults(
  rows: readonly Record<string, unknown>[],
  limit: number,
): BatchResultsPage {
  const items = rows.slice(0, limit).map((raw) => {
    const row = fold(raw);
    return {
      id: String(row.id),
      result: parsePayload(row.result),
    };
  });
  return { items, nextCursor: rows.length > limit ? items[items.length - 1].id : null };
}
