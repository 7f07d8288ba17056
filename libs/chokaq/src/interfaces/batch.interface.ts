import type { NewJob } from './job.interface';

/**
 * The callbacks of a batch ({@link NewBatch.callbacks}): each a job, enqueued by the move that
 * settles the batch's last job, in that move's transaction. A batch is settled when every one of
 * its jobs is in the Archive (succeeded) or the DLQ (failed, cancelled or zombied).
 *
 * - `onComplete`: the first time the batch settles, whatever its jobs' outcomes.
 * - `onSuccess`: the first time it settles with no job in the DLQ. A batch that settled with
 *   failures and later settles again without (its failed jobs resurrected, then succeeded) fires
 *   it then.
 * - `onFailure`: the first time it settles with at least one job in the DLQ.
 *
 * Each fires at most once per batch. @publicApi
 */
export interface BatchCallbacks {
  onComplete?: BatchCallbackJob;
  onSuccess?: BatchCallbackJob;
  onFailure?: BatchCallbackJob;
}

/**
 * A callback's job: what `enqueue` takes, less what a job that does not exist yet cannot use. Its
 * id is made when the batch is enqueued ({@link BatchEnqueued.callbacks}); it runs as soon as it is
 * enqueued (no delay) and takes no idempotency or dedupe key. @publicApi
 */
export type BatchCallbackJob = Omit<
  NewJob,
  'id' | 'idempotencyKey' | 'dedupe' | 'delayMs' | 'runAt' | 'dependsOn'
>;

/** A batch's jobs: what `enqueue` takes, less an id or a key (each job is new, and in this batch only). @publicApi */
export type BatchJob = Omit<NewJob, 'id' | 'idempotencyKey' | 'dedupe' | 'dependsOn'>;

/** What `JobStorage.enqueueBatch` takes. @publicApi */
export interface NewBatch {
  /** 1 to 10,000 jobs, inserted in one transaction with the batch. */
  jobs: readonly BatchJob[];
  callbacks?: BatchCallbacks;
  /** Who made the batch, ≤ 100 chars. */
  createdBy?: string;
}

/** Which callback: `complete`, `success` or `failure`. @publicApi */
export type BatchCallbackKind = 'complete' | 'success' | 'failure';

/** What `enqueueBatch` returns. @publicApi */
export interface BatchEnqueued {
  /** The batch's id (a UUIDv7). */
  batchId: string;
  /** The jobs' ids, in input order. */
  jobIds: string[];
  /** The ids the callbacks' jobs will have, by kind (only the kinds given). */
  callbacks: Partial<Record<BatchCallbackKind, string>>;
}

/** One callback of a batch as `getBatch` shows it. @publicApi */
export interface BatchCallbackView {
  kind: BatchCallbackKind;
  /** The id its job has once fired (`getJob` finds it then). */
  jobId: string;
  queue: string;
  type: string;
  /** True once the settling move enqueued it. */
  fired: boolean;
}

/**
 * A batch and its progress (`admin.getBatch`, `JobClient.getBatch`). Counts are kept by the moves
 * themselves, in their transactions, so they are exact at any moment: `pending + succeeded +
 * failed = total`. @publicApi
 */
export interface BatchView {
  id: string;
  createdAtUtc: Date;
  createdBy: string | null;
  /** Jobs in the batch (its callbacks not counted). */
  total: number;
  /** Jobs in the Archive. */
  succeeded: number;
  /** Jobs in the DLQ (failed, cancelled, zombied). A resurrect takes one back. */
  failed: number;
  /** Jobs still in the hot table (Pending, Fetched or Processing). */
  pending: number;
  /** When the batch last settled (every job finished); null while any job is hot. */
  settledAtUtc: Date | null;
  callbacks: BatchCallbackView[];
}

/** What `getBatchResults` takes: where the page starts and how long it is. @publicApi */
export interface BatchResultsQuery {
  /**
   * The `nextCursor` of the previous page: this page starts after that job (exclusive). Omitted
   * for the first page.
   */
  after?: string;
  /** Jobs per page, 1 to 1,000 (`MAX_PAGE_SIZE`). Default 100. */
  limit?: number;
}

/**
 * A page of a batch's results (`JobClient.getBatchResults`, `JobStorage.getBatchResults`): the
 * batch's jobs in the Archive (its callbacks excluded), in id order, which for the UUIDv7 ids of a
 * batch is the order they were enqueued in. A job still in the hot table or in the DLQ is not
 * listed (the batch's counts say how many there are: `getBatch`). @publicApi
 */
export interface BatchResultsPage<R = unknown> {
  /**
   * Each archived job with its stored result, parsed; `result` is null for a job whose handler
   * records no result (`recordResult`).
   */
  items: { id: string; result: R | null }[];
  /** The `after` of the next page; null when this page is the last. */
  nextCursor: string | null;
}
