import type { AuditLogPage } from '../interfaces/audit.interface';
import type { BatchEnqueued, BatchResultsPage, BatchView } from '../interfaces/batch.interface';
import type { Checked } from '../interfaces/checked.interface';
import type {
  ActiveFilter,
  BulkPreview,
  DlqErrorFamily,
  DlqFilter,
  HistoryFilter,
  JobView,
  ListPage,
  QueueOutcomes,
  ThroughputPoint,
  ThroughputStats,
} from '../interfaces/job-view.interface';
import type {
  CancelResult,
  ClaimedJobs,
  CompletedJob,
  EnqueueOptions,
  EnqueueResult,
  FetchRequest,
  JobLease,
  KeepAliveResult,
  QueueGroupLoad,
  QueueInfo,
  QueuePatch,
  RetentionPolicy,
  RetentionResult,
  RunRef,
  ZombieRescueResult,
  DependencyCheckResult,
  JobDependencies,
} from '../interfaces/job.interface';
import type { WorkerInfo } from '../interfaces/worker.interface';
import type {
  CheckedDlqMove,
  CheckedRecurringDefinition,
  CheckedWorkerHeartbeat,
  CheckedWorkerQuery,
  CheckedZombieRetryRule,
} from '../validation/validate-args';
import type { CheckedAudit, CheckedAuditQuery } from '../validation/validate-audit';
import type {
  ValidatedBatch,
  ValidatedEdits,
  ValidatedJob,
  ValidatedPendingUpdate,
} from '../validation/validate-job';
import type { ListRequest } from '../validation/validate-list';
import type {
  CheckedBatchResultsQuery,
  CheckedCountQuery,
  CheckedOutcomesQuery,
  CheckedSeriesQuery,
} from '../validation/validate-reads';
import type {
  HandlerTransaction,
  HandlerTransactionSupport,
  JobQueries,
  JobStorage,
} from './job-storage';

/** A {@link HandlerTransaction} as a dialect implements it: its `archive` takes a checked run. */
export interface DialectHandlerTransaction extends Omit<HandlerTransaction, 'archive'> {
  archive(completed: Checked<CompletedJob>): Promise<boolean>;
}

/** One rescue sweep of expired Processing rows, as the edge hands it to a dialect. */
export interface ZombieSweep {
  /** Heartbeat timeout of rows whose queue sets none. */
  defaultTimeoutMs: number;
  /** At most this many rows (1 or more: the edge answers 0 itself). */
  limit: number;
  rules: readonly CheckedZombieRetryRule[];
  /** The stored text: `LastError` of a retried row, the DLQ error of a dead one. */
  error: string;
}

/**
 * The audit row a mutation writes in its own transaction (rows affected and time added by the
 * dialect), or null when the caller asked for none.
 */
export type Audit = Checked<CheckedAudit> | null;

/**
 * What a dialect (SQLite, PostgreSQL, SQL Server) implements: the operations of {@link JobStorage}
 * on arguments that the validating edge (`validated-job-storage.ts`) already checked and
 * normalised against the one limits table. A dialect applies no input rule of its own, so the
 * three cannot drift apart on what they accept; it keeps only the invariants of its own SQL
 * (chunk sizes, parameter counts). Scalar arguments (ids, limits, delays) are checked by the edge
 * too; the `Checked` brand marks the structured ones, which only the edge can produce.
 *
 * Not public: users implement or call {@link JobStorage}.
 */
export interface DialectJobStorage extends Pick<
  JobStorage,
  | 'dialect'
  | 'reportsRateLimitWait'
  | 'startsAhead'
  | 'prepare'
  | 'ensureSchema'
  | 'schemaStatus'
  | 'convertKeysToBinary'
  | 'close'
  | 'now'
  | 'subscribe'
  | 'getQueues'
  | 'getSummary'
  | 'getQueueStats'
  | 'replicationLagMs'
  | 'getQueueHealth'
  | 'getRecurringJobs'
> {
  // ---------------------------------------------------------------- producer
  enqueue(job: Checked<ValidatedJob>, options?: EnqueueOptions): Promise<EnqueueResult>;
  /** At least one job (the edge answers an empty batch itself). */
  enqueueMany(
    jobs: readonly Checked<ValidatedJob>[],
    options?: EnqueueOptions,
  ): Promise<EnqueueResult[]>;

  enqueueBatch(batch: Checked<ValidatedBatch>, options?: EnqueueOptions): Promise<BatchEnqueued>;

  // ---------------------------------------------------------------- worker-owned transitions
  /** A limit of 1 or more and at least one handled queue or type: the edge answers the rest. */
  fetchNextBatch(request: Checked<FetchRequest & { start: number }>): Promise<ClaimedJobs>;
  markAsProcessing(leases: readonly Checked<JobLease>[]): Promise<string[]>;
  keepAlive(workerId: string, leases: readonly Checked<JobLease>[]): Promise<KeepAliveResult>;
  release(leases: readonly Checked<JobLease>[], delayMs: number | null): Promise<number>;
  unstart(leases: readonly Checked<JobLease>[], delayMs: number | null): Promise<number>;
  reportProgress(lease: Checked<JobLease>, percent: number, note: string | null): Promise<number>;
  rescheduleForRetry(lease: Checked<JobLease>, delayMs: number, error: string): Promise<number>;
  archiveSucceeded(items: readonly Checked<CompletedJob>[]): Promise<RunRef[]>;
  handlerTransactions(): HandlerTransactionSupport;
  /** `statementTimeoutMs`: a positive integer, or undefined for none. */
  beginHandlerTransaction(
    statementTimeoutMs: number | undefined,
  ): Promise<DialectHandlerTransaction>;
  moveToDlq(
    target: Checked<JobLease> | Checked<{ id: string }>,
    move: Checked<CheckedDlqMove>,
  ): Promise<number>;
  /** `error`: the stored DLQ text of a job cancelled before it ran. */
  cancel(
    ids: readonly string[],
    actor: string | null,
    error: string,
    audit: Audit,
  ): Promise<CancelResult>;

  /**
   * Applies `edits` to the job `id` if it is Pending (and of `edits.expect`'s queue and type, if
   * given), with the audit row in the same transaction; returns the rows changed (0 or 1). A
   * refused edit writes nothing, not even its audit row.
   */
  updatePending(
    id: string,
    edits: Checked<ValidatedPendingUpdate>,
    actor: string | null,
    audit: Audit,
  ): Promise<number>;

  // ---------------------------------------------------------------- DLQ → hot
  resurrect(
    id: string,
    edits: Checked<ValidatedEdits>,
    actor: string | null,
    audit: Audit,
  ): Promise<number>;
  resurrectMany(ids: readonly string[], actor: string | null, audit: Audit): Promise<string[]>;
  resurrectByFilter(
    filter: Checked<DlqFilter>,
    max: number,
    actor: string | null,
    audit: Audit,
  ): Promise<string[]>;

  // ---------------------------------------------------------------- rescue
  recoverAbandoned(fetchedTimeoutMs: number, limit: number): Promise<number>;
  checkDependencies(limit: number): Promise<DependencyCheckResult>;
  archiveZombies(sweep: Checked<ZombieSweep>): Promise<ZombieRescueResult>;

  // ---------------------------------------------------------------- workers
  upsertWorker(report: Checked<CheckedWorkerHeartbeat>): Promise<void>;
  markWorkerStopped(workerId: string): Promise<number>;

  // ---------------------------------------------------------------- queues
  updateQueue(name: string, patch: Checked<QueuePatch>, audit: Audit): Promise<QueueInfo>;

  // ---------------------------------------------------------------- purge and retention
  purgeDlq(ids: readonly string[], audit: Audit): Promise<number>;
  purgeDlqByFilter(filter: Checked<DlqFilter>, max: number, audit: Audit): Promise<number>;
  applyRetention(
    policy: Checked<Required<RetentionPolicy>>,
    audit: Audit,
  ): Promise<RetentionResult>;

  // ---------------------------------------------------------------- audit log
  /** `candidate`: 64 hex digits, stored unless a secret exists. */
  confirmationSecret(candidate: string): Promise<string>;
  getAuditLog(query: Checked<CheckedAuditQuery>): Promise<AuditLogPage>;

  // ---------------------------------------------------------------- reads
  /** `attempts`: also read the job's `JobAttempts` rows (only when the job exists). */
  getJob(id: string, attempts: boolean): Promise<JobView | null>;
  getBatch(id: string): Promise<BatchView | null>;
  getDependencies(id: string): Promise<JobDependencies>;
  /** `query.after`: `''` for the first page (every id sorts after it). */
  getBatchResults(
    batchId: string,
    query: Checked<CheckedBatchResultsQuery>,
  ): Promise<BatchResultsPage>;
  batchHotJobIds(id: string): Promise<string[]>;
  listActive(request: Checked<ListRequest<ActiveFilter>>): Promise<ListPage>;
  listArchive(request: Checked<ListRequest<HistoryFilter>>): Promise<ListPage>;
  listDlq(request: Checked<ListRequest<DlqFilter>>): Promise<ListPage>;
  getQueueOutcomes(query: Checked<CheckedOutcomesQuery>): Promise<QueueOutcomes[]>;
  getThroughput(queue?: string): Promise<ThroughputStats>;
  getQueueGroups(queue: string, limit: number): Promise<QueueGroupLoad[]>;
  getThroughputSeries(query: Checked<CheckedSeriesQuery>): Promise<ThroughputPoint[]>;
  getTopDlqErrors(limit: number, filter: Checked<DlqFilter>): Promise<DlqErrorFamily[]>;
  countExactly(query: Checked<CheckedCountQuery>): Promise<number>;
  previewDlqFilter(filter: Checked<DlqFilter>, max: number): Promise<BulkPreview>;
  listWorkers(query: Checked<CheckedWorkerQuery>): Promise<WorkerInfo[]>;

  // ---------------------------------------------------------------- recurring jobs
  upsertRecurringJob(definition: Checked<CheckedRecurringDefinition>, audit: Audit): Promise<void>;
  setRecurringJobPaused(name: string, paused: boolean, audit: Audit): Promise<boolean>;
  removeRecurringJob(name: string, audit: Audit): Promise<boolean>;
  triggerRecurringJob(
    name: string,
    job: Checked<ValidatedJob>,
    audit: Audit,
  ): Promise<EnqueueResult | null>;
  claimRecurringSlot(
    name: string,
    slotUtc: Date,
    nextSlotUtc: Date,
    job: Checked<ValidatedJob> | null,
  ): Promise<EnqueueResult | null>;
}

/**
 * The write half of {@link DialectJobStorage} (with the lifecycle), as `JobStore` is of
 * `JobStorage`: what a dialect's `<d>-job-store.ts` implements.
 */
export type DialectJobStore = Omit<DialectJobStorage, keyof JobQueries>;

/** The read half of {@link DialectJobStorage}: what a dialect's `<d>-job-queries.ts` implements. */
export type DialectJobQueries = Pick<DialectJobStorage, keyof JobQueries>;

/**
 * No read of `JobQueries`: the edge takes a dialect's store as `DialectJobStore & NoReads`, so a
 * store class that defines a read as well (which the edge would never call) fails to compile.
 */
export type NoReads = { readonly [K in keyof JobQueries]?: never };
