import { sanitizeErrorText } from '../common/error-text';
import { ChokaQValidationError } from '../errors';
import { STORED_TEXT } from '../common/stored-text';
import { decodeTags } from '../common/tags';
import { JobStatus } from '../interfaces/job-status.enum';
import type { AuditLogPage, AuditLogQuery, AuditRequest } from '../interfaces/audit.interface';
import type {
  BatchEnqueued,
  BatchResultsPage,
  BatchResultsQuery,
  BatchView,
  NewBatch,
} from '../interfaces/batch.interface';
import type { Checked } from '../interfaces/checked.interface';
import type {
  ActiveFilter,
  BulkPreview,
  CountQuery,
  DlqErrorFamily,
  DlqFilter,
  GetJobOptions,
  HistoryFilter,
  JobView,
  ListPage,
  ListQuery,
  QueueHealth,
  QueueOutcomes,
  QueueOutcomesQuery,
  QueueStats,
  SummaryStats,
  ThroughputPoint,
  ThroughputSeriesQuery,
  ThroughputStats,
} from '../interfaces/job-view.interface';
import type {
  CancelResult,
  ClaimedJobs,
  CompletedJob,
  DlqMove,
  EnqueueOptions,
  EnqueueResult,
  FetchRequest,
  JobLease,
  KeepAliveResult,
  NewJob,
  PendingUpdate,
  PendingUpdateResult,
  QueueGroupLoad,
  QueueInfo,
  QueuePatch,
  ResurrectEdits,
  RetentionPolicy,
  RetentionResult,
  RunRef,
  StorageDialect,
  ZombieRescueResult,
  ZombieRetryRule,
  DependencyCheckResult,
  JobDependencies,
} from '../interfaces/job.interface';
import type {
  RecurringJobDefinition,
  RecurringJobRecord,
} from '../interfaces/recurring-job.interface';
import type { SchemaStatus } from '../interfaces/schema-status.interface';
import type { WorkerHeartbeat, WorkerInfo, WorkerQuery } from '../interfaces/worker.interface';
import { CHOKAQ_DEFAULTS } from '../config/resolve-options';
import {
  DEPENDENCY_CHECK_BATCH,
  LIMITS,
  MAX_RESCUE_BATCH,
  MAX_TIMER_MS,
  MAX_TOP_ERRORS,
} from '../validation/limits';
import {
  assertActor,
  assertBoolean,
  assertBulkMax,
  assertCompletedJobs,
  assertDate,
  assertDlqMove,
  assertFetchRequest,
  assertGroupsLimit,
  assertLeases,
  assertProgressNote,
  assertQueuePatch,
  assertRecurringDefinition,
  assertRecurringName,
  assertRetentionPolicy,
  assertWorkerHeartbeat,
  assertWorkerId,
  assertWorkerQuery,
  assertZombieRetryRules,
  isLeaseTarget,
} from '../validation/validate-args';
import {
  assertAuditLogQuery,
  auditRecord,
  CheckedAudit,
  canonicalFilter,
  idsTarget,
  payloadFingerprint,
} from '../validation/validate-audit';
import { assertDlqFilter } from '../validation/validate-filter';
import { assertListQuery } from '../validation/validate-list';
import {
  assertIds,
  assertNonNegativeInt,
  assertProgress,
  assertQueueName,
  validateEdits,
  validateNewBatch,
  validateNewJob,
  validateNewJobs,
  validatePendingUpdate,
  ValidatedPendingUpdate,
} from '../validation/validate-job';
import {
  assertBatchResultsQuery,
  assertCountQuery,
  assertGetJobOptions,
  assertQueueOutcomesQuery,
  assertThroughputSeriesQuery,
} from '../validation/validate-reads';
import type {
  Audit,
  DialectJobQueries,
  DialectJobStore,
  NoReads,
  ZombieSweep,
} from './dialect-job-storage';
import type { HandlerTransaction, HandlerTransactionSupport, JobStorage } from './job-storage';
import type { SqlStorageConfig } from './storage-config';

/** The texts ChokaQ stores (the Zombie and Cancelled texts are written here), from `common/`. */
export { STORED_TEXT };

/** Default bound of the rescue operations. */
const DEFAULT_RESCUE_LIMIT = 1_000;

/** Applies the brand: only this file calls it, after a rule accepted the value. */
function checked<T>(value: T): Checked<T> {
  return value as Checked<T>;
}

/** An audit row the edge built, or null when the caller asked for none. */
function optional(record: CheckedAudit | null): Audit {
  return record === null ? null : checked(record);
}

/** Tries of an `updatePending` whose job keeps being seen Pending after a refusal (a race). */
const PENDING_UPDATE_TRIES = 3;

/** The audit details of a pending-job edit: what changed, the payload as its hash and size. */
function pendingEditDetails(valid: ValidatedPendingUpdate): Record<string, unknown> {
  return {
    ...(valid.payload === null ? {} : payloadFingerprint(valid.payload)),
    ...(valid.payloadVersion === null ? {} : { payloadVersion: valid.payloadVersion }),
    ...(valid.tags === undefined ? {} : { tags: decodeTags(valid.tags) }),
    ...(valid.priority === null ? {} : { priority: valid.priority }),
    ...(valid.runAt === undefined ? {} : { runAt: valid.runAt?.toISOString() ?? 'now' }),
  };
}

/** A delay added to the database clock: an integer from 0 to ten years. */
function assertDelay(delayMs: unknown, path = 'delayMs'): number {
  return assertNonNegativeInt(delayMs, path, LIMITS.maxDelayMs);
}

/**
 * The one validating edge of the storage (the role of pg-boss's `attorney.ts`): a
 * {@link JobStorage} that checks and normalises every argument once, against the one limits table
 * of `validation/` (a refusal is a `ChokaQValidationError` naming every bad field), then hands the dialect branded, already-checked inputs
 * (its store and its queries, {@link DialectJobStore} and {@link DialectJobQueries}, each called
 * by name). So one input is accepted or refused the same way, with the same
 * issue paths, on SQLite, PostgreSQL and SQL Server, always before any SQL runs; and the texts
 * ChokaQ stores are written here once ({@link STORED_TEXT}). `createJobStorage` returns it.
 *
 * What the edge can answer without the database it answers itself (an empty batch, a limit of 0),
 * so no dialect needs a rule for it.
 */
export class ValidatedJobStorage implements JobStorage {
  readonly dialect: StorageDialect;
  readonly reportsRateLimitWait: boolean;
  readonly startsAhead: boolean;

  constructor(
    /** The dialect's write half and lifecycle (`<d>-job-store.ts`); it may define no read. */
    private readonly store: DialectJobStore & NoReads,
    /** The dialect's read half (`<d>-job-queries.ts`), on the same connection. */
    private readonly queries: DialectJobQueries,
    /** The dialect's settings; `payloadMaxBytes` bounds every payload. */
    private readonly config: SqlStorageConfig,
  ) {
    this.dialect = store.dialect;
    this.reportsRateLimitWait = store.reportsRateLimitWait === true;
    this.startsAhead = store.startsAhead === true;
  }

  // ---------------------------------------------------------------- lifecycle

  /** @inheritdoc */
  prepare(): Promise<void> {
    return this.store.prepare();
  }

  /** @inheritdoc */
  ensureSchema(): Promise<void> {
    return this.store.ensureSchema();
  }

  /** @inheritdoc */
  schemaStatus(): Promise<SchemaStatus> {
    return this.store.schemaStatus();
  }

  /** @inheritdoc */
  get convertKeysToBinary(): (() => Promise<boolean>) | undefined {
    return this.store.convertKeysToBinary?.bind(this.store);
  }

  /** @inheritdoc */
  close(): Promise<void> {
    return this.store.close();
  }

  /** @inheritdoc */
  now(): Promise<Date> {
    return this.store.now();
  }

  /** @inheritdoc */
  subscribe(
    listener: (queue?: string) => void,
    onCancelRequested?: (ids: string[]) => void,
  ): Promise<(() => Promise<void>) | null> {
    return this.store.subscribe(listener, onCancelRequested);
  }

  // ---------------------------------------------------------------- producer

  /** @inheritdoc */
  async enqueue(job: NewJob, options?: EnqueueOptions): Promise<EnqueueResult> {
    return this.store.enqueue(checked(validateNewJob(job, this.config.payloadMaxBytes)), options);
  }

  /** @inheritdoc */
  async enqueueMany(jobs: readonly NewJob[], options?: EnqueueOptions): Promise<EnqueueResult[]> {
    const valid = validateNewJobs(jobs, this.config.payloadMaxBytes);
    if (valid.length === 0) return [];
    return this.store.enqueueMany(valid.map(checked), options);
  }

  /** @inheritdoc */
  async enqueueBatch(batch: NewBatch, options?: EnqueueOptions): Promise<BatchEnqueued> {
    return this.store.enqueueBatch(
      checked(validateNewBatch(batch, this.config.payloadMaxBytes)),
      options,
    );
  }

  // ---------------------------------------------------------------- worker-owned transitions

  /** @inheritdoc */
  async fetchNextBatch(request: FetchRequest): Promise<ClaimedJobs> {
    const valid = assertFetchRequest(request);
    if (valid.ahead === true && !this.startsAhead) {
      throw new ChokaQValidationError([
        {
          path: 'ahead',
          message: `the ${this.dialect} storage does not start claims ahead (worker.startAhead)`,
          value: true,
        },
      ]);
    }
    const { queues, types } = valid.handled;
    if (valid.limit === 0 || (queues.length === 0 && types.length === 0)) return [];
    return this.store.fetchNextBatch(checked(valid));
  }

  /** @inheritdoc */
  async markAsProcessing(leases: readonly JobLease[]): Promise<string[]> {
    const valid = assertLeases(leases);
    if (valid.length === 0) return [];
    return this.store.markAsProcessing(valid.map(checked));
  }

  /** @inheritdoc */
  async keepAlive(workerId: string, leases: readonly JobLease[]): Promise<KeepAliveResult> {
    const worker = assertWorkerId(workerId);
    const valid = assertLeases(leases);
    if (valid.length === 0) return { touched: 0, cancelRequested: [] };
    return this.store.keepAlive(worker, valid.map(checked));
  }

  /** @inheritdoc */
  async release(leases: readonly JobLease[], delayMs?: number): Promise<number> {
    const valid = assertLeases(leases);
    const delay = delayMs === undefined ? null : assertDelay(delayMs);
    if (valid.length === 0) return 0;
    return this.store.release(valid.map(checked), delay);
  }

  /** @inheritdoc */
  async unstart(leases: readonly JobLease[], delayMs?: number): Promise<number> {
    const valid = assertLeases(leases);
    const delay = delayMs === undefined ? null : assertDelay(delayMs);
    if (valid.length === 0) return 0;
    return this.store.unstart(valid.map(checked), delay);
  }

  /** @inheritdoc */
  async reportProgress(lease: JobLease, percent: number, note?: string | null): Promise<number> {
    const [valid] = assertLeases([lease], 'lease');
    const value = assertProgress(percent);
    return this.store.reportProgress(checked(valid), value, assertProgressNote(note));
  }

  /** @inheritdoc */
  async rescheduleForRetry(lease: JobLease, delayMs: number, error: string): Promise<number> {
    const [valid] = assertLeases([lease], 'lease');
    const delay = assertDelay(delayMs);
    return this.store.rescheduleForRetry(
      checked(valid),
      delay,
      sanitizeErrorText(String(error ?? '')),
    );
  }

  /** @inheritdoc */
  async archiveSucceeded(items: readonly CompletedJob[]): Promise<RunRef[]> {
    const valid = assertCompletedJobs(items);
    if (valid.length === 0) return [];
    return this.store.archiveSucceeded(valid.map(checked));
  }

  /** @inheritdoc */
  handlerTransactions(): HandlerTransactionSupport {
    return this.store.handlerTransactions();
  }

  /** @inheritdoc */
  async beginHandlerTransaction(statementTimeoutMs?: number): Promise<HandlerTransaction> {
    const timeout =
      statementTimeoutMs === undefined
        ? 0
        : assertNonNegativeInt(statementTimeoutMs, 'statementTimeoutMs', MAX_TIMER_MS);
    const inner = await this.store.beginHandlerTransaction(timeout > 0 ? timeout : undefined);
    return {
      queryRunner: inner.queryRunner,
      manager: inner.manager,
      // The run is checked like any completion; the dialect moves it in the open transaction.
      archive: async (completed) => {
        const [valid] = assertCompletedJobs([completed]);
        return inner.archive(checked(valid));
      },
      rollback: () => inner.rollback(),
      abandon: () => inner.abandon(),
    };
  }

  /** @inheritdoc */
  async moveToDlq(target: JobLease | { id: string }, move: DlqMove): Promise<number> {
    const checkedTarget = isLeaseTarget(target)
      ? checked(assertLeases([target], 'target')[0])
      : checked({ id: assertIds([target?.id], 'target.id')[0] });
    return this.store.moveToDlq(checkedTarget, checked(assertDlqMove(move)));
  }

  /** @inheritdoc */
  async cancel(
    ids: readonly string[],
    actor?: string,
    audit?: AuditRequest,
  ): Promise<CancelResult> {
    const unique = assertIds(ids);
    const by = assertActor(actor);
    const { target, details } = idsTarget(unique);
    const record = auditRecord(audit, target, details);
    if (unique.length === 0) return { cancelled: [], cancelRequested: [] };
    return this.store.cancel(unique, by, STORED_TEXT.cancelled(by), optional(record));
  }

  /** @inheritdoc */
  async updatePending(
    id: string,
    edits: PendingUpdate,
    actor?: string,
    audit?: AuditRequest,
  ): Promise<PendingUpdateResult> {
    const [key] = assertIds([id], 'id');
    const valid = validatePendingUpdate(edits, this.config.payloadMaxBytes);
    const by = assertActor(actor);
    const record = optional(auditRecord(audit, key, pendingEditDetails(valid)));
    // A refusal is explained by a fresh read. A job seen Pending again (claimed and handed back
    // between the two) is tried again; each try is one guarded statement, so none half-applies.
    let result: PendingUpdateResult = { updated: false, status: JobStatus.Pending };
    for (let tries = 0; tries < PENDING_UPDATE_TRIES; tries++) {
      if ((await this.store.updatePending(key, checked(valid), by, record)) > 0) {
        return { updated: true };
      }
      const job = await this.queries.getJob(key, false);
      if (job === null) return { updated: false, status: null };
      result = { updated: false, status: job.status, queue: job.queue, type: job.type };
      const expected = valid.expect;
      const mismatched =
        expected !== null && (expected.queue !== job.queue || expected.type !== job.type);
      if (job.status !== JobStatus.Pending || mismatched) return result;
    }
    return result;
  }

  // ---------------------------------------------------------------- DLQ → hot

  /** @inheritdoc */
  async resurrect(
    id: string,
    edits?: ResurrectEdits,
    actor?: string,
    audit?: AuditRequest,
  ): Promise<number> {
    const [key] = assertIds([id], 'id');
    const valid = validateEdits(edits, this.config.payloadMaxBytes);
    const by = assertActor(actor);
    // The edit made, with the payload as its hash and size: an audit log is no copy of the data.
    const edit = {
      ...(valid.payload === null ? {} : payloadFingerprint(valid.payload)),
      ...(valid.tags === undefined ? {} : { tags: decodeTags(valid.tags) }),
      ...(valid.priority === null ? {} : { priority: valid.priority }),
    };
    const record = auditRecord(audit, key, Object.keys(edit).length > 0 ? edit : null);
    return this.store.resurrect(key, checked(valid), by, optional(record));
  }

  /** @inheritdoc */
  async resurrectMany(
    ids: readonly string[],
    actor?: string,
    audit?: AuditRequest,
  ): Promise<string[]> {
    const unique = assertIds(ids);
    const by = assertActor(actor);
    const { target, details } = idsTarget(unique);
    const record = auditRecord(audit, target, details);
    if (unique.length === 0) return [];
    return this.store.resurrectMany(unique, by, optional(record));
  }

  /** @inheritdoc */
  async resurrectByFilter(
    filter: DlqFilter,
    max: number,
    actor?: string,
    audit?: AuditRequest,
  ): Promise<string[]> {
    const valid = assertDlqFilter(filter);
    const limit = assertBulkMax(max);
    const by = assertActor(actor);
    const record = auditRecord(audit, canonicalFilter(valid), { max: limit });
    if (limit === 0) return [];
    return this.store.resurrectByFilter(checked(valid), limit, by, optional(record));
  }

  // ---------------------------------------------------------------- rescue

  /** @inheritdoc */
  async checkDependencies(limit = DEPENDENCY_CHECK_BATCH): Promise<DependencyCheckResult> {
    const max = assertNonNegativeInt(limit, 'limit', MAX_RESCUE_BATCH);
    if (max === 0) return { settled: 0, cancelled: [] };
    return this.store.checkDependencies(max);
  }

  /** @inheritdoc */
  async recoverAbandoned(fetchedTimeoutMs: number, limit = DEFAULT_RESCUE_LIMIT): Promise<number> {
    const timeout = assertNonNegativeInt(fetchedTimeoutMs, 'fetchedTimeoutMs');
    const max = assertNonNegativeInt(limit, 'limit', MAX_RESCUE_BATCH);
    if (max === 0) return 0;
    return this.store.recoverAbandoned(timeout, max);
  }

  /** @inheritdoc */
  async archiveZombies(
    defaultZombieTimeoutMs: number,
    limit = DEFAULT_RESCUE_LIMIT,
    retryRules?: readonly ZombieRetryRule[],
  ): Promise<ZombieRescueResult> {
    const sweep: ZombieSweep = {
      defaultTimeoutMs: assertNonNegativeInt(defaultZombieTimeoutMs, 'defaultZombieTimeoutMs'),
      limit: assertNonNegativeInt(limit, 'limit', MAX_RESCUE_BATCH),
      rules: assertZombieRetryRules(retryRules),
      error: STORED_TEXT.zombie,
    };
    if (sweep.limit === 0) return { dlq: [], retried: [], jobs: [] };
    return this.store.archiveZombies(checked(sweep));
  }

  // ---------------------------------------------------------------- workers

  /** @inheritdoc */
  async upsertWorker(report: WorkerHeartbeat): Promise<void> {
    return this.store.upsertWorker(checked(assertWorkerHeartbeat(report)));
  }

  /** @inheritdoc */
  async markWorkerStopped(workerId: string): Promise<number> {
    return this.store.markWorkerStopped(assertWorkerId(workerId));
  }

  // ---------------------------------------------------------------- queues

  /** @inheritdoc */
  getQueues(): Promise<QueueInfo[]> {
    return this.store.getQueues();
  }

  /** @inheritdoc */
  async updateQueue(name: string, patch: QueuePatch, audit?: AuditRequest): Promise<QueueInfo> {
    const queue = assertQueueName(name, 'name');
    const valid = assertQueuePatch(patch);
    const record = auditRecord(audit, queue, { ...valid });
    return this.store.updateQueue(queue, checked(valid), optional(record));
  }

  // ---------------------------------------------------------------- purge and retention

  /** @inheritdoc */
  async purgeDlq(ids: readonly string[], audit?: AuditRequest): Promise<number> {
    const unique = assertIds(ids);
    const { target, details } = idsTarget(unique);
    const record = auditRecord(audit, target, details);
    if (unique.length === 0) return 0;
    return this.store.purgeDlq(unique, optional(record));
  }

  /** @inheritdoc */
  async purgeDlqByFilter(filter: DlqFilter, max: number, audit?: AuditRequest): Promise<number> {
    const valid = assertDlqFilter(filter);
    const limit = assertBulkMax(max);
    const record = auditRecord(audit, canonicalFilter(valid), { max: limit });
    if (limit === 0) return 0;
    return this.store.purgeDlqByFilter(checked(valid), limit, optional(record));
  }

  /** @inheritdoc */
  async applyRetention(policy: RetentionPolicy, audit?: AuditRequest): Promise<RetentionResult> {
    const valid = assertRetentionPolicy(policy);
    const { batchSize: _batch, ...windows } = valid;
    // The windows here; each batch's transaction stores them again with the rows removed so far.
    const record = auditRecord(audit, null, windows);
    return this.store.applyRetention(checked(valid), optional(record));
  }

  // ---------------------------------------------------------------- audit log

  /** @inheritdoc */
  async confirmationSecret(candidate: string): Promise<string> {
    if (typeof candidate !== 'string' || !/^[0-9a-f]{64}$/.test(candidate)) {
      throw new ChokaQValidationError([
        { path: 'candidate', message: 'must be 64 lowercase hex digits', value: candidate },
      ]);
    }
    return this.store.confirmationSecret(candidate);
  }

  /** @inheritdoc */
  async getAuditLog(query?: AuditLogQuery): Promise<AuditLogPage> {
    return this.queries.getAuditLog(checked(assertAuditLogQuery(query)));
  }

  // ---------------------------------------------------------------- reads

  /** @inheritdoc */
  async getJob(id: string, options?: GetJobOptions): Promise<JobView | null> {
    const [key] = assertIds([id], 'id');
    return this.queries.getJob(key, assertGetJobOptions(options).attempts);
  }

  /** @inheritdoc */
  async getBatch(id: string): Promise<BatchView | null> {
    const [key] = assertIds([id], 'id');
    return this.queries.getBatch(key);
  }

  /** @inheritdoc */
  async getDependencies(id: string): Promise<JobDependencies> {
    const [key] = assertIds([id], 'id');
    return this.queries.getDependencies(key);
  }

  /** @inheritdoc */
  async getBatchResults(batchId: string, query?: BatchResultsQuery): Promise<BatchResultsPage> {
    const [key] = assertIds([batchId], 'batchId');
    return this.queries.getBatchResults(key, checked(assertBatchResultsQuery(query)));
  }

  /** @inheritdoc */
  async batchHotJobIds(id: string): Promise<string[]> {
    const [key] = assertIds([id], 'id');
    return this.queries.batchHotJobIds(key);
  }

  /** @inheritdoc */
  async listActive(query?: ListQuery<ActiveFilter>): Promise<ListPage> {
    return this.queries.listActive(checked(assertListQuery('hot', query)));
  }

  /** @inheritdoc */
  async listArchive(query?: ListQuery<HistoryFilter>): Promise<ListPage> {
    return this.queries.listArchive(checked(assertListQuery('archive', query)));
  }

  /** @inheritdoc */
  async listDlq(query?: ListQuery<DlqFilter>): Promise<ListPage> {
    return this.queries.listDlq(checked(assertListQuery('dlq', query)));
  }

  /** @inheritdoc */
  getSummary(): Promise<SummaryStats> {
    return this.queries.getSummary();
  }

  /** @inheritdoc */
  getQueueStats(): Promise<QueueStats[]> {
    return this.queries.getQueueStats();
  }

  /** @inheritdoc */
  replicationLagMs(): Promise<number | null> {
    return this.queries.replicationLagMs();
  }

  /** @inheritdoc */
  getQueueHealth(): Promise<QueueHealth[]> {
    return this.queries.getQueueHealth();
  }

  /** @inheritdoc */
  async getQueueOutcomes(query?: QueueOutcomesQuery): Promise<QueueOutcomes[]> {
    return this.queries.getQueueOutcomes(checked(assertQueueOutcomesQuery(query)));
  }

  /** @inheritdoc */
  async getThroughput(queue?: string): Promise<ThroughputStats> {
    return this.queries.getThroughput(queue === undefined ? undefined : assertQueueName(queue));
  }

  /** @inheritdoc */
  async getQueueGroups(queue: string, limit = 10): Promise<QueueGroupLoad[]> {
    return this.queries.getQueueGroups(assertQueueName(queue), assertGroupsLimit(limit));
  }

  /** @inheritdoc */
  async getThroughputSeries(query: ThroughputSeriesQuery): Promise<ThroughputPoint[]> {
    return this.queries.getThroughputSeries(checked(assertThroughputSeriesQuery(query)));
  }

  /** @inheritdoc */
  async getTopDlqErrors(limit: number, filter?: DlqFilter): Promise<DlqErrorFamily[]> {
    const top = assertNonNegativeInt(limit, 'limit', MAX_TOP_ERRORS);
    const valid = assertDlqFilter(filter);
    if (top === 0) return [];
    return this.queries.getTopDlqErrors(top, checked(valid));
  }

  /** @inheritdoc */
  async countExactly(query: CountQuery): Promise<number> {
    return this.queries.countExactly(checked(assertCountQuery(query)));
  }

  /** @inheritdoc */
  async previewDlqFilter(filter: DlqFilter, max: number): Promise<BulkPreview> {
    const valid = assertDlqFilter(filter);
    const limit = assertBulkMax(max);
    return this.queries.previewDlqFilter(checked(valid), limit);
  }

  /** @inheritdoc */
  async listWorkers(query?: WorkerQuery): Promise<WorkerInfo[]> {
    const valid = assertWorkerQuery(query, CHOKAQ_DEFAULTS.rescue.zombieTimeoutMs);
    return this.queries.listWorkers(checked(valid));
  }

  // ---------------------------------------------------------------- recurring jobs

  /** @inheritdoc */
  async upsertRecurringJob(
    definition: RecurringJobDefinition,
    audit?: AuditRequest,
  ): Promise<void> {
    const valid = assertRecurringDefinition(definition, this.config.payloadMaxBytes);
    const { name, cron, timeZone, queue, type, misfirePolicy, payload } = valid;
    const record = auditRecord(audit, name, {
      cron,
      timeZone,
      queue,
      type,
      misfirePolicy,
      ...payloadFingerprint(payload),
    });
    return this.store.upsertRecurringJob(checked(valid), optional(record));
  }

  /** @inheritdoc */
  getRecurringJobs(): Promise<RecurringJobRecord[]> {
    return this.store.getRecurringJobs();
  }

  /** @inheritdoc */
  async setRecurringJobPaused(
    name: string,
    paused: boolean,
    audit?: AuditRequest,
  ): Promise<boolean> {
    const key = assertRecurringName(name);
    const flag = assertBoolean(paused, 'paused');
    const record = auditRecord(audit, key);
    return this.store.setRecurringJobPaused(key, flag, optional(record));
  }

  /** @inheritdoc */
  async removeRecurringJob(name: string, audit?: AuditRequest): Promise<boolean> {
    const key = assertRecurringName(name);
    return this.store.removeRecurringJob(key, optional(auditRecord(audit, key)));
  }

  /** @inheritdoc */
  async triggerRecurringJob(
    name: string,
    job: NewJob,
    audit?: AuditRequest,
  ): Promise<EnqueueResult | null> {
    const key = assertRecurringName(name);
    const valid = validateNewJob(job, this.config.payloadMaxBytes);
    const record = auditRecord(audit, key, { jobId: valid.id });
    return this.store.triggerRecurringJob(key, checked(valid), optional(record));
  }

  /** @inheritdoc */
  async claimRecurringSlot(
    name: string,
    slotUtc: Date,
    nextSlotUtc: Date,
    job: NewJob | null,
  ): Promise<EnqueueResult | null> {
    const key = assertRecurringName(name);
    const slot = assertDate(slotUtc, 'slotUtc');
    const next = assertDate(nextSlotUtc, 'nextSlotUtc');
    const valid = job === null ? null : checked(validateNewJob(job, this.config.payloadMaxBytes));
    return this.store.claimRecurringSlot(key, slot, next, valid);
  }
}
