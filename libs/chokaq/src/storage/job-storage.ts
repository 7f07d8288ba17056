import type { EntityManager, QueryRunner } from 'typeorm';
import type { AuditLogPage, AuditLogQuery, AuditRequest } from '../interfaces/audit.interface';
import type {
  BatchEnqueued,
  BatchResultsPage,
  BatchResultsQuery,
  BatchView,
  NewBatch,
} from '../interfaces/batch.interface';
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

/**
 * The storage contract of ChokaQ: every state change of a job is one of these operations, and
 * each dialect (SQLite, PostgreSQL, SQL Server) implements all of them in SQL. Nothing above this
 * interface knows SQL, and nothing below it runs user code.
 *
 * Rules every implementation follows (SPEC §3):
 * - **Audit.** A method given an `AuditRequest` (its last argument) writes one `AuditLog` row in
 *   the same transaction as the change; a method that runs in several batches writes the row with
 *   its first batch and adds each later batch's rows to it in that batch's transaction. Without
 *   one, nothing is recorded.
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
 * A new operation touches these files, in this order (`<d>` = `sqlite`, `postgres`, `mssql`):
 * 1. `interfaces/`: the types it takes and returns, when they are new;
 * 2. `validation/`: the rule of its input (`validate-args.ts`, `validate-reads.ts`, …);
 * 3. this file: its place and its contract in `JobStore` (writes) or `JobQueries` (reads);
 * 4. `dialect-job-storage.ts`: the checked signature a dialect implements;
 * 5. `validated-job-storage.ts`: the edge, which checks the input and calls `this.store.x` or
 *    `this.queries.x` by name;
 * 6. `<d>/sql/<section>.ts` in each dialect: the statement (on PostgreSQL with its binder);
 * 7. `<d>/<d>-job-store.ts` (what the worker runs), `<d>/<d>-admin-store.ts` (operator writes) or
 *    `<d>/<d>-job-queries.ts` (reads) in each dialect: the method;
 * 8. the tests: `test/contract/` (written once, run on every dialect), the T-SQL catalogue
 *    `test/mssql/support/statements.ts`, and the golden files when it is a claim or a move.
 *
 * @publicApi
 */
export type JobStorage = JobStore & JobQueries;

/**
 * The answer of {@link JobStore.handlerTransactions}.
 *
 * @publicApi
 */
export type HandlerTransactionSupport =
  { supported: true; poolSize?: number } | { supported: false; reason: string };

/**
 * The open transaction of one run of a transactional handler
 * ({@link JobStore.beginHandlerTransaction}). It ends exactly once, by whichever of `archive`,
 * `rollback` and `abandon` comes first; the others then do nothing. Each releases the connection.
 *
 * @publicApi
 */
export interface HandlerTransaction {
  /** The transaction's `QueryRunner`: its connection, in the open transaction. */
  readonly queryRunner: QueryRunner;
  /** An `EntityManager` bound to {@link queryRunner}. */
  readonly manager: EntityManager;
  /**
   * Moves the job Hot → Archive inside this transaction, fenced as `archiveSucceeded` is (Id,
   * WorkerId, LeaseId, Status 1 or 2), then COMMITs: true. When the fence refuses (the lease no
   * longer matches), ROLLBACK instead: false, and none of the handler's writes land. Rejects when
   * the move or the COMMIT fails; the transaction is then rolled back, or its outcome unknown (a
   * connection lost during COMMIT): either way the job stayed with its lease or was archived with
   * the writes, never one without the other.
   */
  archive(completed: CompletedJob): Promise<boolean>;
  /** ROLLBACK, for a run whose handler has settled (threw). Never rejects. */
  rollback(): Promise<void>;
  /**
   * Ends the transaction without waiting for the handler, which may still be running (timeout,
   * cancel, lost heartbeat, end of the shutdown grace period): the runner refuses further
   * statements and nothing of the transaction can commit any more. PostgreSQL closes the
   * connection, so the server rolls back once any statement in flight ends (bounded by
   * `statement_timeout`). Never rejects.
   */
  abandon(): Promise<void>;
}

/**
 * The write half of {@link JobStorage}: produce, claim, worker-owned transitions, moves, rescue,
 * queues, retention and recurring slots — everything the runtime calls, and only that (the runtime
 * is typed against this interface, never against the reads).
 *
 * The lifecycle (`prepare`, `ensureSchema`, `subscribe`, `now`, `close`) sits here too: the worker
 * is what opens, migrates, listens on and closes a storage, and asks its clock; the reads need none
 * of it beyond a connection the store already holds, so a read half never owns a lifecycle of its own.
 *
 * @publicApi
 */
export interface JobStore {
  /** The dialect this storage speaks. */
  readonly dialect: StorageDialect;

  /**
   * True when `fetchNextBatch` sets `rateLimitWaitMs` whenever a rate limit held back rows of a
   * handled queue; the fetcher then trusts its absence. Otherwise (undefined, or SQL Server's
   * one-batch claim) a short claim of a rate-limited queue is retried at its emission interval.
   */
  readonly reportsRateLimitWait?: boolean;

  /**
   * True when `fetchNextBatch` honours `FetchRequest.ahead` (claims that start rows ahead of the
   * caller's free slots take them only from queues with neither budget nor rate limit). Only then
   * does the worker start ahead (`worker.startAhead`); a storage without it is never asked to.
   */
  readonly startsAhead?: boolean;

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

  /**
   * Where the schema stands against this release: the newest version the migration ledger
   * records, the versions {@link ensureSchema} would apply and the SQL it would run for them. A
   * read without a lock and without DDL, for operators (`chokaq migrate --dry-run`) and start-up
   * checks of code that does not migrate.
   */
  schemaStatus(): Promise<SchemaStatus>;

  /**
   * `chokaq migrate --binary-keys`: converts key columns of an install created by an earlier
   * release to the byte-wise collation a new install has. SQL Server: the key columns (queue, job
   * type, idempotency key, queue and recurring job names), from the database's collation to a
   * binary one, so keys that differ only by case are different keys, as on the other dialects.
   * PostgreSQL: the columns that hold job ids, to `COLLATE "C"` (schema version 23 gives a new
   * install that), which changes no comparison's result, only its cost under a locale's collation.
   * Absent on SQLite, whose keys always compare byte for byte. True when it converted them, false
   * when they already were byte-wise. PostgreSQL rewrites the tables that hold those columns, SQL
   * Server the Archive's and the DLQ's indexes that name them: run it with the workers stopped.
   * Never run at startup.
   */
  convertKeysToBinary?(): Promise<boolean>;

  /** Releases what this storage opened itself (a `DataSource` or, on PostgreSQL, a `pg` pool it created). A borrowed `DataSource` is left open. */
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
   * At most `MAX_ENQUEUE_MANY` items.
   */
  enqueueMany(jobs: readonly NewJob[], options?: EnqueueOptions): Promise<EnqueueResult[]>;

  /**
   * Validates the batch first (1 to `MAX_ENQUEUE_MANY` jobs, none with an id or a key; its
   * callbacks), then writes the batch record, its callbacks and its jobs in one transaction (the
   * caller's, when `options.transaction` is given). The batch's counts and callbacks are then kept
   * by the moves of its jobs: see `BatchCallbacks`.
   */
  enqueueBatch(batch: NewBatch, options?: EnqueueOptions): Promise<BatchEnqueued>;

  // ---------------------------------------------------------------- worker-owned transitions

  /**
   * Claims up to `limit` due Pending rows of unpaused, active queues that the caller can run, in one
   * statement: sets Status 1 (Fetched), `WorkerId`, `LeaseId`, `LastUpdatedUtc`, and returns them;
   * the first `request.start` rows are started at once instead (Status 2, as `markAsProcessing`).
   * Respects each queue's `MaxWorkers` budget and rate limit across all workers (a rate-limited
   * queue only when every row claimed starts: see `FetchRequest.start`). Order: priority desc, then
   * due time. May say, in `rateLimitWaitMs`, when a rate limit that held rows back frees up.
   */
  fetchNextBatch(request: FetchRequest): Promise<ClaimedJobs>;

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
   * Processing → Pending for owned rows (`Status = 2`, lease matches) whose handler the caller
   * never ran: rows a claim started ahead that are handed back (shutdown, a paused queue, an open
   * circuit). `AttemptCount − 1` (the claim counted an attempt that did not happen),
   * `StartedAtUtc` and `HeartbeatUtc` cleared, `WorkerId`/`LeaseId` cleared; with `delayMs`,
   * `ScheduledAtUtc = now + delayMs` and `RetriedTotal + n`, as {@link release}. No attempt row is
   * written. Returns the number of rows handed back.
   */
  unstart(leases: readonly JobLease[], delayMs?: number): Promise<number>;

  /**
   * Writes `Progress` (0–100) and `ProgressNote` (at most 500 characters; none clears it) on an
   * owned Processing row. Best effort, for operators' eyes only. Returns rows changed (0 or 1).
   */
  reportProgress(lease: JobLease, percent: number, note?: string | null): Promise<number>;

  /**
   * Processing → Pending after a retryable failure (`Status = 2`, lease matches), and the run's
   * `JobAttempts` row (outcome `retried`) in the same transaction. Returns rows changed (0 or 1).
   */
  rescheduleForRetry(lease: JobLease, delayMs: number, error: string): Promise<number>;

  /**
   * Atomic move of owned rows (Status 1 or 2, lease matches) Hot → Archive with their durations;
   * `SucceededTotal + n` and a metric-bucket upsert in the same transaction. Returns the runs that
   * were archived, as `(id, leaseId)`: two completions of one id under different leases (a stale run
   * and its successor) may share a batch, and only the one whose lease matches is archived.
   */
  archiveSucceeded(items: readonly CompletedJob[]): Promise<RunRef[]>;

  /**
   * Whether handlers may run inside a transaction of this storage (`@JobHandler(…, {
   * transactional: true })`), and if so the size of the connection pool their transactions draw
   * from (undefined when the driver does not say). PostgreSQL and SQL Server on a borrowed
   * `DataSource` may; a `DataSource` ChokaQ opened itself and SQLite may not, with the reason.
   */
  handlerTransactions(): HandlerTransactionSupport;

  /**
   * Opens a READ COMMITTED transaction on a connection of its own, for one run of a transactional
   * handler. On PostgreSQL each statement in it is limited to `statementTimeoutMs` (`SET LOCAL
   * statement_timeout`), so a handler stuck in a statement does not hold the connection past its
   * execution timeout. Throws `ChokaQTransactionalHandlerError` where {@link handlerTransactions}
   * says no.
   */
  beginHandlerTransaction(statementTimeoutMs?: number): Promise<HandlerTransaction>;

  /**
   * Atomic move Hot → DLQ with `reason`. With a {@link JobLease} the row must be owned (Status 1 or 2);
   * with `{ id }` (admin and rescue paths) any hot row moves. `FailedTotal + 1`, or `CancelledTotal + 1`
   * for `FailureReason.Cancelled`, and a metric bucket, in the same transaction. A row that was
   * Processing (a run had started) also gets its run's `JobAttempts` row there (outcome `timeout`,
   * `cancelled`, `zombie` or `failed` by the reason); a Pending or Fetched one none. Returns rows moved.
   */
  moveToDlq(target: JobLease | { id: string }, move: DlqMove): Promise<number>;

  /**
   * Pending/Fetched rows move to DLQ as Cancelled at once; Processing rows get `CancelRequestedUtc`
   * so their owner aborts them (and then moves them to DLQ as Cancelled).
   */
  cancel(ids: readonly string[], actor?: string, audit?: AuditRequest): Promise<CancelResult>;

  /**
   * Edits a job that is still Pending: its payload (stored under `payloadVersion` when given, else
   * the job's own), tags, priority, or when it becomes eligible (`runAt`; `'now'` makes it due at
   * once). One guarded UPDATE (`status = Pending`, and `expect`'s queue and type), with its audit
   * row, in one transaction: a job a worker has claimed meanwhile (Fetched, or started ahead) is
   * never changed. Resolves `{ updated: false }` with the job's status (null: no such job) when it
   * was refused; a refused edit writes nothing.
   */
  updatePending(
    id: string,
    edits: PendingUpdate,
    actor?: string,
    audit?: AuditRequest,
  ): Promise<PendingUpdateResult>;

  // ---------------------------------------------------------------- DLQ → hot

  /**
   * Atomic move DLQ → Hot as Pending: attempts 0, `EnqueuedAtUtc = now`, optional edits, no
   * idempotency key, `ResurrectedTotal + 1`. Deletes from the DLQ first, so two operators resurrecting
   * one job re-insert it once. Returns rows moved (0 or 1).
   */
  resurrect(
    id: string,
    edits?: ResurrectEdits,
    actor?: string,
    audit?: AuditRequest,
  ): Promise<number>;

  /** {@link resurrect} for many ids without edits; returns the ids that moved. */
  resurrectMany(ids: readonly string[], actor?: string, audit?: AuditRequest): Promise<string[]>;

  /** Resurrects at most `max` DLQ jobs matching `filter` (oldest failure first); returns the ids that moved. */
  resurrectByFilter(
    filter: DlqFilter,
    max: number,
    actor?: string,
    audit?: AuditRequest,
  ): Promise<string[]>;

  // ---------------------------------------------------------------- rescue

  /** Fetched rows whose `LastUpdatedUtc` is older than `fetchedTimeoutMs` → Pending. At most `limit` rows. */
  recoverAbandoned(fetchedTimeoutMs: number, limit?: number): Promise<number>;

  /**
   * The dependency check (the rescue loop runs it on every pass; an enqueue runs it once it
   * committed when it wrote edges that need it): sends to the DLQ, as `DependencyFailed`, the
   * waiting jobs whose dependency failed under `cancel` or was removed while they were blocked on
   * it, and through them, by their own edges, the jobs waiting on those; on PostgreSQL it also
   * settles an edge written while its dependency's move was in flight (that move could not see
   * it). Takes at most `limit` edges per step and a few steps per call.
   */
  checkDependencies(limit?: number): Promise<DependencyCheckResult>;

  /**
   * Processing rows whose `HeartbeatUtc` is older than their queue's `ZombieTimeoutSeconds` (or
   * `defaultZombieTimeoutMs`) → DLQ as Zombie, or → Pending with `LastError` (attempt kept) where
   * the queue has `RetryZombies` or `retryRules` resolve the row's `(queue, type)` to a handler that
   * opts in; either way the lost run's `JobAttempts` row (outcome `zombie`, naming the worker that
   * lost it) in the same transaction. At most `limit` rows (default 1,000). The result names each rescued job with the row
   * the rescue found (its queue, type, attempt and the worker that lost it), payload not read.
   */
  archiveZombies(
    defaultZombieTimeoutMs: number,
    limit?: number,
    retryRules?: readonly ZombieRetryRule[],
  ): Promise<ZombieRescueResult>;

  // ---------------------------------------------------------------- workers

  /**
   * Upserts the reporting process's row of the Workers table: every reported field, `LastSeenUtc`
   * = now, and with `starting` also `StartedAtUtc` = now and no stop. A report without `starting`
   * keeps `StartedAtUtc` and a recorded stop (a row that is missing is created either way). Each
   * worker process calls it with its heartbeat.
   */
  upsertWorker(report: WorkerHeartbeat): Promise<void>;

  /**
   * Records a clean stop of the worker: `StoppedAtUtc` = `LastSeenUtc` = now, running 0. Returns
   * rows changed (0 when the row is missing or already stopped).
   */
  markWorkerStopped(workerId: string): Promise<number>;

  // ---------------------------------------------------------------- queues

  /** Lists the `Queues` rows. */
  getQueues(): Promise<QueueInfo[]>;

  /** Upserts the queue row and applies the given controls (fields left undefined are unchanged). */
  updateQueue(name: string, patch: QueuePatch, audit?: AuditRequest): Promise<QueueInfo>;

  // ---------------------------------------------------------------- purge and retention

  /** Deletes DLQ rows by id, and their `JobAttempts` rows with them; counters untouched. Returns rows deleted. */
  purgeDlq(ids: readonly string[], audit?: AuditRequest): Promise<number>;

  /** Deletes at most `max` DLQ rows matching `filter` (and their `JobAttempts` rows); returns rows deleted. */
  purgeDlqByFilter(filter: DlqFilter, max: number, audit?: AuditRequest): Promise<number>;

  /**
   * Retention: deletes archive rows finished before now − `archiveMs`, DLQ rows failed before
   * now − `dlqMs`, metric buckets older than now − `metricsMs` and Workers rows last seen before
   * now − `workersMs`, in batches of `batchSize`, each batch its own short transaction (which also
   * deletes the `JobAttempts` rows of the archive and DLQ rows it deletes). Counters are lifetime
   * and never change here.
   */
  applyRetention(policy: RetentionPolicy, audit?: AuditRequest): Promise<RetentionResult>;

  // ---------------------------------------------------------------- audit log

  /**
   * The secret that signs confirmation tokens of bulk actions, kept in the database so that every
   * process signs and verifies with the same one: stores `candidate` (64 hex digits) when no
   * secret exists yet, and returns the stored secret either way. Concurrent first calls agree.
   */
  confirmationSecret(candidate: string): Promise<string>;

  // ---------------------------------------------------------------- recurring jobs

  /** Creates or updates a recurring definition; keeps `LastSlotUtc`, resets `NextSlotUtc` only if the cron or zone changed. */
  upsertRecurringJob(definition: RecurringJobDefinition, audit?: AuditRequest): Promise<void>;

  /** Lists recurring definitions. */
  getRecurringJobs(): Promise<RecurringJobRecord[]>;

  /**
   * Pauses (`true`) or resumes (`false`) recurring job `name`: a paused job's slots are not
   * enqueued (they are missed slots when it resumes). False when no job has that name.
   */
  setRecurringJobPaused(name: string, paused: boolean, audit?: AuditRequest): Promise<boolean>;

  /** Deletes recurring job `name`; jobs it already enqueued stay. False when no job has that name. */
  removeRecurringJob(name: string, audit?: AuditRequest): Promise<boolean>;

  /**
   * Enqueues `job` as one run of recurring job `name` outside its schedule, and records it as the
   * job's last run, in one transaction; `NextSlotUtc` does not move. Null (nothing enqueued) when no
   * job has that name.
   */
  triggerRecurringJob(
    name: string,
    job: NewJob,
    audit?: AuditRequest,
  ): Promise<EnqueueResult | null>;

  /**
   * Enqueues `job` for the slot `slotUtc` of recurring job `name` only if `NextSlotUtc` still equals
   * `slotUtc` (compare-and-set), advancing it to `nextSlotUtc` and recording the enqueued job as
   * `LastJobId`, in the same transaction. Returns the enqueue result, or `null` when another process
   * already took the slot (or `job` is null: the slot advanced and nothing was enqueued).
   */
  claimRecurringSlot(
    name: string,
    slotUtc: Date,
    nextSlotUtc: Date,
    job: NewJob | null,
  ): Promise<EnqueueResult | null>;
}

/**
 * The read half of {@link JobStorage}: one job, lists, stats, health, throughput, top errors,
 * bulk previews and the workers — what operators and dashboards ask. Nothing here changes a row, and the runtime
 * never calls it.
 *
 * @publicApi
 */
export interface JobQueries {
  /**
   * One job wherever it is: hot, archive or DLQ. With `{ attempts: true }` also its attempts that
   * did not end in the archive (`JobView.attempts`, oldest first: one more primary-key range read);
   * without it nothing more is read.
   */
  getJob(id: string, options?: GetJobOptions): Promise<JobView | null>;

  /** A batch's counts and callbacks (one primary-key read of each table), or null when none has that id. */
  getBatch(id: string): Promise<BatchView | null>;

  /**
   * A job's edges in the dependency graph: those it waits (or waited) on and, at most 1,000,
   * those that wait (or waited) on it, each with its state and where the job waited on is now.
   * Empty lists for a job with none (or an unknown id).
   */
  getDependencies(id: string): Promise<JobDependencies>;

  /**
   * A page of a batch's results: its jobs in the Archive (its callbacks excluded) with their
   * stored results, in id order (enqueue order: the ids are UUIDv7), from after `query.after` (the
   * previous page's `nextCursor`, exclusive), at most `query.limit` (1 to `MAX_PAGE_SIZE`, default
   * 100) per page: one range of the Archive's batch index. Jobs in the hot table or the DLQ are not
   * listed; an unknown batch is an empty page. `ChokaQValidationError` for an id or cursor that is
   * not a UUID, or a bad limit.
   */
  getBatchResults(batchId: string, query?: BatchResultsQuery): Promise<BatchResultsPage>;

  /**
   * The ids of a batch's jobs still in the hot table (Pending, Fetched or Processing; not its
   * callbacks): what a cancel of the batch cancels. Empty for an unknown batch.
   */
  batchHotJobIds(id: string): Promise<string[]>;

  /**
   * A page of the hot table (Pending, Fetched, Processing), newest enqueue first unless
   * `order: 'oldest'`: keyset pagination on `(EnqueuedAtUtc, Id)`, continued with the page's
   * `nextCursor`. Items carry no payload and no full error text (see `getJob`).
   */
  listActive(query?: ListQuery<ActiveFilter>): Promise<ListPage>;

  /** A page of the archive, on `(FinishedAtUtc, Id)`; otherwise as {@link listActive}. */
  listArchive(query?: ListQuery<HistoryFilter>): Promise<ListPage>;

  /** A page of the DLQ, on `(FailedAtUtc, Id)`; otherwise as {@link listActive}. */
  listDlq(query?: ListQuery<DlqFilter>): Promise<ListPage>;

  /**
   * Lifetime counters summed over queues, the hot table's counts by status, and the rows the
   * archive and the DLQ retain: exact on SQLite (a count kept with every insert and delete),
   * estimates on PostgreSQL and SQL Server (`SummaryStats.estimated` says which). Never counts the
   * archive or the DLQ, so a dashboard may poll it at any size.
   */
  getSummary(): Promise<SummaryStats>;

  /** Per-queue counters, hot-table counts by status, and queue controls (no history scan). */
  getQueueStats(): Promise<QueueStats[]>;

  /**
   * How far this connection's reads trail the primary, in ms, when its server is a hot standby
   * (PostgreSQL: 0 while everything received has been replayed, else the age of the last
   * transaction replayed); null when it is not a standby (a primary, SQLite, SQL Server).
   */
  replicationLagMs(): Promise<number | null>;

  /**
   * Per-queue lag and saturation: due pending rows and the age of the oldest (live, from the hot
   * table, through an index led by the queue), and the start lag of recent runs (metric buckets).
   */
  getQueueHealth(): Promise<QueueHealth[]>;

  /**
   * How the runs of every queue (each `Queues` row, zeros included) ended over a recent window:
   * succeeded, failed, cancelled and retried, from metric buckets. The window is the current
   * minute so far plus `minutes` whole minutes before it (default 5, at most 1,440). One statement
   * for all queues, reading (minutes + 1) buckets per queue and outcome. Ordered by queue name.
   */
  getQueueOutcomes(query?: QueueOutcomesQuery): Promise<QueueOutcomes[]>;

  /** Completions per second over the last minute and the last five (metric buckets). */
  getThroughput(queue?: string): Promise<ThroughputStats>;

  /**
   * The busiest groups of `queue` (`NewJob.group`): their Pending and their Fetched or Processing
   * jobs, most running first, then most pending, then by group key; at most `limit` (default 10,
   * at most 100). Reads the queue's grouped hot rows (two partial indexes that hold only rows
   * with a group), so its cost follows the queue's grouped backlog.
   */
  getQueueGroups(queue: string, limit?: number): Promise<QueueGroupLoad[]>;

  /**
   * Counts per step of a time range, from metric buckets (one minute wide): succeeded, failed,
   * retried, cancelled, mean run time, runs started and their start lag. Every step of the range
   * has a point, zeros included. The step is a whole number of minutes; at most 10,000 points.
   */
  getThroughputSeries(query: ThroughputSeriesQuery): Promise<ThroughputPoint[]>;

  /**
   * The most frequent DLQ error families, most frequent first, over a bounded window: the newest
   * 10,000 matching rows that failed in the last 24 hours. A family is the first line of the error
   * with ids, numbers, UUIDs, hex, quoted values and timestamps replaced by placeholders.
   */
  getTopDlqErrors(limit: number, filter?: DlqFilter): Promise<DlqErrorFamily[]>;

  /**
   * The exact number of rows of one pillar matching a list filter. It counts (O(matching rows) on
   * the archive and the DLQ), so it is for the rare operator who needs the number, not for a
   * dashboard that polls: `getSummary` gives cheap totals.
   */
  countExactly(query: CountQuery): Promise<number>;

  /** What a bulk DLQ action on `filter` would touch: matched count, will-affect (≤ max), sample ids. */
  previewDlqFilter(filter: DlqFilter, max: number): Promise<BulkPreview>;

  /**
   * The Workers table, the most recently seen first, each row with its state: `stopped` when it
   * recorded a clean stop, else `lost` when not seen for longer than `lostAfterMs` (database
   * clock), else `draining` or `running`. Works from any process, a producer-only one included.
   */
  listWorkers(query?: WorkerQuery): Promise<WorkerInfo[]>;

  /**
   * A page of the audit log, newest first (keyset pagination on `(AtUtc, Id)`, continued with the
   * page's `nextCursor`), filtered by actor, action, exact target and time.
   */
  getAuditLog(query?: AuditLogQuery): Promise<AuditLogPage>;
}
