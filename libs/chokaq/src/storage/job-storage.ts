import { FailureReason, JobStatus } from './job-status';

/**
 * The storage contract of ChokaQ: every state change of a job is one of these operations, and
 * each dialect (SQLite, PostgreSQL, SQL Server) implements all of them in SQL. Nothing above this
 * interface knows SQL, and nothing below it runs user code.
 *
 * Rules every implementation follows (SPEC §3):
 * - **Fencing token.** A worker owns a hot row only while `Id`, `WorkerId` and `LeaseId` all match.
 *   Every worker-owned operation takes a {@link JobLease} and changes nothing when it does not match.
 * - **Zero rows means "not applied".** Operations report what they changed (counts or ids); the caller
 *   treats "nothing changed" as a lost lease or a lost race, never as success.
 * - **Database clock.** Relative inputs (`delayMs`, backoff, timeouts) are milliseconds added in SQL;
 *   every comparison uses the database's own clock.
 * - **Atomic moves.** Hot → Archive, Hot → DLQ and DLQ → Hot each run in one short transaction that
 *   deletes the exact source rows first, inserts what was deleted, and updates `StatsSummary` and
 *   `MetricBuckets`; any error rolls all of it back.
 * - **Transient errors** (deadlocks, serialization failures, busy files, dropped connections) are
 *   retried with bounded, jittered backoff inside the storage; what still fails surfaces as
 *   `ChokaQStorageUnavailableError`.
 *
 * @publicApi
 */
export interface JobStorage {
  /** The dialect this storage speaks. */
  readonly dialect: StorageDialect;

  /**
   * Applies per-connection settings (SQLite: WAL, `busy_timeout`) and checks the `DataSource` is
   * usable. Called once by `createJobStorage` before any other operation.
   */
  prepare(): Promise<void>;

  /**
   * Creates or migrates the schema idempotently under a database lock (PostgreSQL advisory lock,
   * SQL Server `sp_getapplock`, SQLite `BEGIN IMMEDIATE`), so several processes may call it at once.
   */
  ensureSchema(): Promise<void>;

  /** Releases what this storage opened itself (a `DataSource` it created). A borrowed one is left open. */
  close(): Promise<void>;

  /** The database clock, as used for every stored time. */
  now(): Promise<Date>;

  /**
   * Calls `listener` with the queue name whenever any process enqueues (PostgreSQL `LISTEN/NOTIFY`,
   * where enabled), and with no queue when notifications may have been missed (a lost channel was
   * re-established). Resolves to an unsubscribe function, or `null` where the dialect has no such
   * channel (then same-process wake-ups and polling remain).
   *
   * With `onCancelRequested`, the same subscription also reports the ids of Processing jobs whose
   * cancellation any process requested (`cancel`), at its commit, so their owner can abort them at
   * once. Ids of jobs that do not run in this process arrive too and are the caller's to ignore.
   * Only PostgreSQL has such a channel; SQLite and SQL Server never call it, and there (as for a
   * notification lost with its session) the owner learns of the request on its next `keepAlive`.
   */
  subscribe(
    listener: (queue?: string) => void,
    onCancelRequested?: (ids: string[]) => void,
  ): Promise<(() => Promise<void>) | null>;

  // ---------------------------------------------------------------- producer

  /**
   * Validates and inserts one Pending job; ensures its `Queues` and `StatsSummary` rows exist.
   * With an idempotency key that an active (hot) job already holds, inserts nothing and returns that
   * job's id with `created: false`. A retried insert with the same `id` never duplicates.
   */
  enqueue(job: NewJob, options?: EnqueueOptions): Promise<EnqueueResult>;

  /**
   * Validates every item first (one bad item fails the call with its index and inserts nothing),
   * then inserts in chunks, each one statement or transaction. Results are in input order.
   * At most {@link MAX_ENQUEUE_MANY} items.
   */
  enqueueMany(jobs: readonly NewJob[], options?: EnqueueOptions): Promise<EnqueueResult[]>;

  // ---------------------------------------------------------------- worker-owned transitions

  /**
   * Claims up to `limit` due Pending rows of unpaused, active queues that the caller can run, in one
   * statement: sets Status 1 (Fetched), `WorkerId`, `LeaseId`, `LastUpdatedUtc`, and returns them;
   * the first `request.start` rows are started at once instead (Status 2, as `markAsProcessing`).
   * Respects each queue's `MaxWorkers` budget across all workers. Order: priority desc, then due time.
   */
  fetchNextBatch(request: FetchRequest): Promise<HotJob[]>;

  /**
   * Fetched → Processing for each owned lease (`Status = 1` and lease matches): `AttemptCount + 1`,
   * `StartedAtUtc`, `HeartbeatUtc`. Returns the ids that were started; the caller must not run
   * the handler of any other id. Idempotent for one lease: a row already Processing under the same
   * lease (a retry after an ambiguous commit) is returned again, its attempt counted once.
   */
  markAsProcessing(leases: readonly JobLease[]): Promise<string[]>;

  /**
   * One statement per process: `HeartbeatUtc = now` for its Processing rows and
   * `LastUpdatedUtc = now` for its Fetched rows among `leases`. Returns how many rows were touched
   * and the ids whose `CancelRequestedUtc` is set.
   */
  keepAlive(workerId: string, leases: readonly JobLease[]): Promise<KeepAliveResult>;

  /**
   * Fetched → Pending for owned rows (`Status = 1`), clearing `WorkerId`/`LeaseId`; with `delayMs`,
   * `ScheduledAtUtc = now + delayMs` and `RetriedTotal + n` (an open circuit: no attempt spent).
   * Returns the number of rows released.
   */
  release(leases: readonly JobLease[], delayMs?: number): Promise<number>;

  /**
   * Writes `Progress` (0–100) on an owned Processing row. Best effort, for operators' eyes only.
   * Returns rows changed (0 or 1).
   */
  reportProgress(lease: JobLease, percent: number): Promise<number>;

  /** Processing → Pending after a retryable failure (`Status = 2`, lease matches). Returns rows changed (0 or 1). */
  rescheduleForRetry(lease: JobLease, delayMs: number, error: string): Promise<number>;

  /**
   * Atomic move of owned rows (Status 1 or 2, lease matches) Hot → Archive with their durations;
   * `SucceededTotal + n` and a metric-bucket upsert in the same transaction. Returns the runs that
   * were archived, as `(id, leaseId)`: two completions of one id under different leases (a stale run
   * and its successor) may share a batch, and only the one whose lease matches is archived.
   */
  archiveSucceeded(items: readonly CompletedJob[]): Promise<RunRef[]>;

  /**
   * Atomic move Hot → DLQ with `reason`. With a {@link JobLease} the row must be owned (Status 1 or 2);
   * with `{ id }` (admin and rescue paths) any hot row moves. `FailedTotal + 1`, or `CancelledTotal + 1`
   * for `FailureReason.Cancelled`, and a metric bucket, in the same transaction. Returns rows moved.
   */
  moveToDlq(target: JobLease | { id: string }, move: DlqMove): Promise<number>;

  /**
   * Pending/Fetched rows move to DLQ as Cancelled at once; Processing rows get `CancelRequestedUtc`
   * so their owner aborts them (and then moves them to DLQ as Cancelled).
   */
  cancel(ids: readonly string[], actor?: string): Promise<CancelResult>;

  // ---------------------------------------------------------------- DLQ → hot

  /**
   * Atomic move DLQ → Hot as Pending: attempts 0, `EnqueuedAtUtc = now`, optional edits, no
   * idempotency key, `ResurrectedTotal + 1`. Deletes from the DLQ first, so two operators resurrecting
   * one job re-insert it once. Returns rows moved (0 or 1).
   */
  resurrect(id: string, edits?: ResurrectEdits, actor?: string): Promise<number>;

  /** {@link resurrect} for many ids without edits; returns the ids that moved. */
  resurrectMany(ids: readonly string[], actor?: string): Promise<string[]>;

  /** Resurrects at most `max` DLQ jobs matching `filter` (oldest failure first); returns the ids that moved. */
  resurrectByFilter(filter: DlqFilter, max: number, actor?: string): Promise<string[]>;

  // ---------------------------------------------------------------- rescue

  /** Fetched rows whose `LastUpdatedUtc` is older than `fetchedTimeoutMs` → Pending. At most `limit` rows. */
  recoverAbandoned(fetchedTimeoutMs: number, limit?: number): Promise<number>;

  /**
   * Processing rows whose `HeartbeatUtc` is older than their queue's `ZombieTimeoutSeconds` (or
   * `defaultZombieTimeoutMs`) → DLQ as Zombie, or → Pending with `LastError` (attempt kept) where
   * the queue has `RetryZombies` or `retryRules` resolve the row's `(queue, type)` to a handler that
   * opts in. At most `limit` rows (default 1,000).
   */
  archiveZombies(
    defaultZombieTimeoutMs: number,
    limit?: number,
    retryRules?: readonly ZombieRetryRule[],
  ): Promise<ZombieRescueResult>;

  // ---------------------------------------------------------------- queues

  /** Lists the `Queues` rows. */
  getQueues(): Promise<QueueInfo[]>;

  /** Upserts the queue row and applies the given controls (fields left undefined are unchanged). */
  updateQueue(name: string, patch: QueuePatch): Promise<QueueInfo>;

  // ---------------------------------------------------------------- purge and retention

  /** Deletes DLQ rows by id; counters untouched. Returns rows deleted. */
  purgeDlq(ids: readonly string[]): Promise<number>;

  /** Deletes at most `max` DLQ rows matching `filter`; returns rows deleted. */
  purgeDlqByFilter(filter: DlqFilter, max: number): Promise<number>;

  /**
   * Retention: deletes archive rows finished before now − `archiveMs`, DLQ rows failed before
   * now − `dlqMs`, metric buckets older than now − `metricsMs`, in batches of `batchSize`, each batch
   * its own short transaction. Counters are lifetime and never change here.
   */
  applyRetention(policy: RetentionPolicy): Promise<RetentionResult>;

  // ---------------------------------------------------------------- reads

  /** One job wherever it is: hot, archive or DLQ. */
  getJob(id: string): Promise<JobView | null>;

  /** A page of hot jobs, filtered and sorted. */
  listActive(query: PageQuery<ActiveFilter>): Promise<Page<JobView>>;

  /** A page of the archive. */
  getArchivePage(query: PageQuery<HistoryFilter>): Promise<Page<JobView>>;

  /** A page of the DLQ. */
  getDlqPage(query: PageQuery<DlqFilter>): Promise<Page<JobView>>;

  /** Lifetime counters summed over queues, plus the current row counts per pillar. */
  getSummary(): Promise<SummaryStats>;

  /** Per-queue counters, current counts by status, and queue controls. */
  getQueueStats(): Promise<QueueStats[]>;

  /** Per-queue lag and saturation. */
  getQueueHealth(): Promise<QueueHealth[]>;

  /** Completions per second over the last 1 and 5 minutes, from metric buckets. */
  getThroughput(queue?: string): Promise<ThroughputStats>;

  /** The most frequent DLQ error families (first line of the error), most frequent first. */
  getTopDlqErrors(limit: number, filter?: DlqFilter): Promise<DlqErrorFamily[]>;

  /** What a bulk DLQ action on `filter` would touch: matched count, will-affect (≤ max), sample ids. */
  previewDlqFilter(filter: DlqFilter, max: number): Promise<BulkPreview>;

  // ---------------------------------------------------------------- recurring jobs

  /** Creates or updates a recurring definition; keeps `LastSlotUtc`, resets `NextSlotUtc` only if the cron or zone changed. */
  upsertRecurringJob(definition: RecurringJobDefinition): Promise<void>;

  /** Lists recurring definitions. */
  getRecurringJobs(): Promise<RecurringJobRecord[]>;

  /**
   * Enqueues `job` for the slot `slotUtc` of recurring job `name` only if `NextSlotUtc` still equals
   * `slotUtc` (compare-and-set), advancing it to `nextSlotUtc` in the same transaction. Returns the
   * enqueue result, or `null` when another process already took the slot.
   */
  claimRecurringSlot(
    name: string,
    slotUtc: Date,
    nextSlotUtc: Date,
    job: NewJob | null,
  ): Promise<EnqueueResult | null>;
}

/** The SQL dialects ChokaQ speaks. @publicApi */
export type StorageDialect = 'sqlite' | 'postgres' | 'mssql';

/** At most this many items per `enqueueMany` call. @publicApi */
export const MAX_ENQUEUE_MANY = 10_000;

/** At most this many rows per page of a read. @publicApi */
export const MAX_PAGE_SIZE = 1_000;

/** A job as a producer hands it over. Validated before anything is written (SPEC §6). @publicApi */
export interface NewJob {
  /** A UUIDv7 string; generated when absent. Reusing an id makes a retried insert idempotent. */
  id?: string;
  /** Queue name, 1–255 chars of `[A-Za-z0-9._:-]`. Default `default`. */
  queue?: string;
  /** Stable job type key, ≤ 255 chars. Default: the queue name. */
  type?: string;
  /** JSON-serialisable payload, at most `payload.maxBytes` UTF-8 bytes once serialised. */
  payload?: unknown;
  /** Higher runs first; an integer within ±1,000,000. Default 10. */
  priority?: number;
  /** Not eligible before now + `delayMs` (database clock). An integer from 0 to 10 years. */
  delayMs?: number;
  /** Not eligible before this instant. Exclusive with `delayMs`. */
  runAt?: Date;
  /** While a hot job holds this key, enqueueing it again returns that job's id. ≤ 255 chars. */
  idempotencyKey?: string;
  /** Up to 20 tags of 1–100 chars, without commas. */
  tags?: readonly string[];
  /** Who enqueued it, ≤ 100 chars. */
  createdBy?: string;
}

/** Options of `enqueue`/`enqueueMany`. @publicApi */
export interface EnqueueOptions {
  /**
   * Run inside the caller's open transaction (a TypeORM `QueryRunner` of the same `DataSource` that
   * ChokaQ uses); the jobs then commit or roll back with the caller's data. A runner of another
   * `DataSource` is rejected with `ChokaQTransactionError`.
   */
  transaction?: unknown;
}

/** What `enqueue` did. @publicApi */
export interface EnqueueResult {
  /** The job id: the new one, or that of the active job holding the same idempotency key. */
  id: string;
  /** False when an existing job (same id or same active idempotency key) was returned instead. */
  created: boolean;
}

/** The ownership token of a hot row (SPEC §3 "Ownership is a fencing token"). @publicApi */
export interface JobLease {
  id: string;
  workerId: string;
  leaseId: string;
}

/** What a worker can run: queue-wide handlers and exact `(queue, type)` handlers. @publicApi */
export interface HandledJobs {
  /** Queues for which any type can run. */
  queues: readonly string[];
  /** Exact `(queue, type)` pairs, for queues without a queue-wide handler. */
  types: ReadonlyArray<{ queue: string; type: string }>;
}

/** Arguments of `fetchNextBatch`. @publicApi */
export interface FetchRequest {
  workerId: string;
  /** A fresh random UUID per claim call, shared by the rows it claims. */
  leaseId: string;
  /** At most this many rows; 0 claims nothing. */
  limit: number;
  handled: HandledJobs;
  /**
   * Start the first `start` claimed rows at once (claim order: priority desc, due, id): they come
   * back Processing with `AttemptCount + 1`, `StartedAtUtc` and `HeartbeatUtc` set, exactly as
   * `markAsProcessing` would leave them, so no second statement is needed before their handlers
   * run. The rest come back Fetched. Default 0; at most `limit`. The caller must have a free
   * concurrency slot for each started row: nothing guards a started row from going stale.
   */
  start?: number;
  /**
   * Queues the caller believes have a `MaxWorkers` budget (from a recent `getQueues`). When it is
   * given and no handled queue is in it, a dialect may claim without serialising on budgets (on
   * PostgreSQL: one autocommit statement instead of a transaction with a lock step); such a claim
   * skips every queue that has a budget at that moment, so a stale hint only delays a newly
   * budgeted queue until the caller's next refresh, and never overspends a budget.
   */
  budgetedQueues?: readonly string[];
}

/** A claimed or active row of the hot table. @publicApi */
export interface HotJob {
  id: string;
  queue: string;
  type: string;
  /** The parsed payload. */
  payload: unknown;
  tags: string[];
  idempotencyKey: string | null;
  priority: number;
  status: JobStatus.Pending | JobStatus.Fetched | JobStatus.Processing;
  attemptCount: number;
  workerId: string | null;
  leaseId: string | null;
  heartbeatUtc: Date | null;
  scheduledAtUtc: Date | null;
  createdAtUtc: Date;
  enqueuedAtUtc: Date;
  startedAtUtc: Date | null;
  lastUpdatedUtc: Date;
  createdBy: string | null;
  lastModifiedBy: string | null;
  lastError: string | null;
  cancelRequestedUtc: Date | null;
  progress: number | null;
}

/** Result of `keepAlive`. @publicApi */
export interface KeepAliveResult {
  /** Rows whose heartbeat or `LastUpdatedUtc` was refreshed. */
  touched: number;
  /** Ids among the leases whose cancellation was requested. */
  cancelRequested: string[];
}

/** An owned job that finished successfully. @publicApi */
export interface CompletedJob extends JobLease {
  durationMs: number;
}

/**
 * One run of a job: its id and the lease it was claimed under. A job id alone does not name a run,
 * since the same process may hold a stale run and a newer run of one job at once. @publicApi
 */
export type RunRef = Pick<JobLease, 'id' | 'leaseId'>;

/** How a job lands in the DLQ. @publicApi */
export interface DlqMove {
  reason: FailureReason;
  /** Error text (sanitised and truncated before it is stored). */
  error: string;
  /** Who moved it (admin paths). */
  actor?: string;
  /** Run duration for the metric bucket, when the job ran. */
  durationMs?: number;
}

/** Result of `cancel`. @publicApi */
export interface CancelResult {
  /** Pending or Fetched jobs moved to DLQ as Cancelled. */
  cancelled: string[];
  /** Processing jobs whose owner was asked to abort. */
  cancelRequested: string[];
}

/** Edits applied by `resurrect`. @publicApi */
export interface ResurrectEdits {
  payload?: unknown;
  tags?: readonly string[];
  priority?: number;
}

/** Result of `archiveZombies`. @publicApi */
export interface ZombieRescueResult {
  /** Moved to DLQ as Zombie. */
  dlq: string[];
  /** Returned to Pending (queues with `RetryZombies`, or a handler rule that opts in). */
  retried: string[];
}

/**
 * One handler's `retryZombies` choice, as `archiveZombies` applies it. A zombie's `(queue, type)`
 * resolves like a claim does: the rule with its exact type wins, else the queue's rule without a
 * type (a queue-wide handler), else none. The rescuer passes the rules of the handlers it hosts, so
 * an opt-in is only known where that handler is registered. @publicApi
 */
export interface ZombieRetryRule {
  queue: string;
  /** The handler's type; undefined for a queue-wide handler. */
  type?: string;
  /** True: the zombie returns to Pending keeping its attempt; false: it goes to the DLQ. */
  retry: boolean;
}

/** A `Queues` row. @publicApi */
export interface QueueInfo {
  name: string;
  isPaused: boolean;
  isActive: boolean;
  maxWorkers: number | null;
  zombieTimeoutSeconds: number | null;
  executionTimeoutMs: number | null;
  retryZombies: boolean;
  lastUpdatedUtc: Date;
}

/** Queue controls to change; `undefined` leaves a field as it is, `null` clears a nullable one. @publicApi */
export interface QueuePatch {
  isPaused?: boolean;
  isActive?: boolean;
  maxWorkers?: number | null;
  zombieTimeoutSeconds?: number | null;
  executionTimeoutMs?: number | null;
  retryZombies?: boolean;
}

/** Retention windows in milliseconds; `batchSize` rows per delete transaction. @publicApi */
export interface RetentionPolicy {
  archiveMs: number;
  dlqMs: number;
  metricsMs: number;
  batchSize?: number;
}

/** Rows removed by `applyRetention`. @publicApi */
export interface RetentionResult {
  archive: number;
  dlq: number;
  metricBuckets: number;
}

/** Where a job is. @publicApi */
export type Pillar = 'hot' | 'archive' | 'dlq';

/** A job in any pillar. Fields that do not apply to a pillar are null. @publicApi */
export interface JobView {
  pillar: Pillar;
  id: string;
  queue: string;
  type: string;
  payload: unknown;
  tags: string[];
  idempotencyKey: string | null;
  priority: number;
  status: JobStatus;
  attemptCount: number;
  workerId: string | null;
  leaseId: string | null;
  heartbeatUtc: Date | null;
  scheduledAtUtc: Date | null;
  createdAtUtc: Date;
  enqueuedAtUtc: Date;
  startedAtUtc: Date | null;
  lastUpdatedUtc: Date | null;
  createdBy: string | null;
  lastModifiedBy: string | null;
  lastError: string | null;
  cancelRequestedUtc: Date | null;
  progress: number | null;
  /** Archive only. */
  finishedAtUtc: Date | null;
  /** Archive only. */
  durationMs: number | null;
  /** DLQ only. */
  failureReason: FailureReason | null;
  /** DLQ only. */
  errorDetails: string | null;
  /** DLQ only. */
  failedAtUtc: Date | null;
}

/** Filter of hot-table lists. @publicApi */
export interface ActiveFilter {
  queue?: string;
  type?: string;
  status?: JobStatus.Pending | JobStatus.Fetched | JobStatus.Processing;
  /** Exact tag match. */
  tag?: string;
  /** Substring of id, type or payload; `%`, `_` and `[` are matched literally. */
  search?: string;
}

/** Filter of archive pages. @publicApi */
export interface HistoryFilter {
  queue?: string;
  type?: string;
  tag?: string;
  search?: string;
  /** Finished (archive) or failed (DLQ) at or after this instant. */
  from?: Date;
  /** Finished (archive) or failed (DLQ) before this instant. */
  to?: Date;
}

/** Filter of DLQ pages and bulk DLQ actions. @publicApi */
export interface DlqFilter extends HistoryFilter {
  reason?: FailureReason;
  /** Explicit ids (bulk actions on a selection). */
  ids?: readonly string[];
}

/** Sort keys a page may be ordered by (whitelisted; an id tie-breaker is always added). @publicApi */
export type SortKey =
  | 'createdAt'
  | 'enqueuedAt'
  | 'scheduledAt'
  | 'finishedAt'
  | 'failedAt'
  | 'priority'
  | 'queue'
  | 'type'
  | 'attempts'
  | 'duration';

/** A page request. `page` is 1-based; `pageSize` 1–1,000 (default 50). @publicApi */
export interface PageQuery<F> {
  filter?: F;
  page?: number;
  pageSize?: number;
  sortBy?: SortKey;
  sortDir?: 'asc' | 'desc';
}

/** A page of results with the total matching count. @publicApi */
export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  pageSize: number;
}

/** Lifetime counters (never decremented) and current row counts. @publicApi */
export interface SummaryStats {
  succeededTotal: number;
  failedTotal: number;
  cancelledTotal: number;
  retriedTotal: number;
  resurrectedTotal: number;
  pending: number;
  fetched: number;
  processing: number;
  /**
   * Rows in the archive. On SQL Server an estimate: the row count the server keeps for the table
   * (`sys.partitions`), which equals the count on a quiet table, instead of a scan on every read.
   */
  archived: number;
  /** Rows in the DLQ; on SQL Server an estimate, as {@link SummaryStats.archived}. */
  dlq: number;
}

/** Per-queue counters, counts and controls. @publicApi */
export interface QueueStats {
  queue: string;
  pending: number;
  fetched: number;
  processing: number;
  archived: number;
  dlq: number;
  succeededTotal: number;
  failedTotal: number;
  cancelledTotal: number;
  retriedTotal: number;
  resurrectedTotal: number;
  lastActivityUtc: Date | null;
  isPaused: boolean;
  isActive: boolean;
  maxWorkers: number | null;
}

/** Lag and saturation of one queue. @publicApi */
export interface QueueHealth {
  queue: string;
  /** Pending rows that are due now. */
  duePending: number;
  /** Average wait of due pending rows, from `ScheduledAtUtc` or `EnqueuedAtUtc`, in ms. */
  avgLagMs: number;
  /** Longest wait of a due pending row, in ms. */
  maxLagMs: number;
  /** Fetched + Processing rows. */
  active: number;
  maxWorkers: number | null;
  /** active / maxWorkers, or null when unlimited. */
  saturation: number | null;
}

/** Completion rates from metric buckets. @publicApi */
export interface ThroughputStats {
  /** Completions (succeeded + failed + cancelled) per second over the last minute. */
  perSecond1m: number;
  /** … over the last five minutes. */
  perSecond5m: number;
  succeeded1m: number;
  failed1m: number;
  succeeded5m: number;
  failed5m: number;
}

/** One error family of the DLQ. @publicApi */
export interface DlqErrorFamily {
  /** The first line of the error text (at most 200 chars). */
  error: string;
  count: number;
  lastFailedAtUtc: Date;
}

/** What a bulk action would touch. @publicApi */
export interface BulkPreview {
  matched: number;
  willAffect: number;
  sampleIds: string[];
}

/** How missed slots are treated: `skip` runs the latest missed slot once, `none` runs none. @publicApi */
export type MisfirePolicy = 'skip' | 'none';

/** A recurring job definition as stored. @publicApi */
export interface RecurringJobDefinition {
  name: string;
  cron: string;
  timeZone: string;
  queue: string;
  type: string;
  payload: unknown;
  misfirePolicy: MisfirePolicy;
  /** The first slot to enqueue (computed by the caller from the cron expression). */
  nextSlotUtc: Date;
}

/** A `RecurringJobs` row. @publicApi */
export interface RecurringJobRecord extends RecurringJobDefinition {
  lastSlotUtc: Date | null;
  isPaused: boolean;
}
