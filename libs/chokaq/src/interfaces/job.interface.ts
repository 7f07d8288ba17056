import type { FailureReason, JobStatus } from './job-status.enum';

/*
 * The job vocabulary: what producers hand over, what workers hold, and what the storage operations
 * of `JobStorage` take and return. Types only; the rules that check them live in `validation/`.
 */

/** The SQL dialects ChokaQ speaks. @publicApi */
export type StorageDialect = 'sqlite' | 'postgres' | 'mssql';

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
  /**
   * A key with a window (throttle, debounce, or unique across chosen states), decided inside the
   * enqueue's transaction, so concurrent enqueues of one key from any number of processes make
   * one job and get one answer. Cannot be combined with `idempotencyKey`: dedupe keys are a
   * namespace of their own, held in a table of their own rather than by the hot row. See
   * {@link DedupeOption}.
   */
  dedupe?: DedupeOption;
  /**
   * The job's group (a tenant, a customer): 1–255 characters, no trailing blanks, compared byte
   * for byte. In a queue with group limits ({@link QueueInfo.groupConcurrency},
   * {@link QueueInfo.groupRateLimit}) the claim enforces them per group, cluster-wide, and takes
   * turns across the groups that have due jobs, so one group's backlog does not starve another;
   * in other queues the group is only recorded. Kept through every move (a resurrected job keeps
   * it).
   */
  group?: string;
  /** Up to 20 tags of 1–100 chars, without commas. */
  tags?: readonly string[];
  /** Who enqueued it, ≤ 100 chars. */
  createdBy?: string;
  /**
   * The trace context of the enqueuing code, as an OpenTelemetry propagator writes it into a
   * carrier (`traceparent`, `tracestate`, and `baggage` if the propagator includes it): printable
   * ASCII strings, at most 2,048 characters as JSON. Stored with the job and kept through every
   * move (a resurrected job keeps it), so each run's span joins the producer's trace. `JobClient`
   * sets it from the active context when tracing is on; leave it unset otherwise.
   */
  traceContext?: Readonly<Record<string, string>>;
  /**
   * The version of the payload's shape: the `version` of the job definition it was made for
   * (`defineJob(…, { version })`), an integer from 1 to 2^31-1. Default 1. `JobClient` sets it from
   * the definition; the claim runs a job only in a process whose handler can run this version.
   */
  payloadVersion?: number;
  /**
   * The jobs this one waits on (continuations): their ids, or `{ jobId, onFailure }` to choose what
   * a failed dependency does (default `block`). At most 10,000. The job is enqueued Waiting
   * (`JobStatus.Waiting`, in the hot table, never claimed) and becomes Pending in the transaction
   * of the move that settles its last dependency. A dependency already in the Archive counts as
   * succeeded, one in the DLQ as failed; an id in no table is refused
   * (`ChokaQDependencyNotFoundError`). Cannot be combined with `dedupe`. See
   * {@link DependencyPolicy}.
   */
  dependsOn?: readonly (string | JobDependency)[];
}

/**
 * What a waiting job does when one of its dependencies fails (reaches the DLQ: failed, cancelled
 * or zombied), chosen per dependency:
 * - `block` (default): it stays Waiting while the dependency is in the DLQ. A resurrect of the
 *   dependency that then succeeds releases it; a purge (or retention) of the dependency sends it
 *   to the DLQ as `DependencyFailed`, naming the dependency.
 * - `ignore`: the failed dependency counts as settled, as a success would.
 * - `cancel`: it goes to the DLQ as `DependencyFailed` without running (by the next maintenance
 *   pass, or at once after an enqueue that finds the dependency failed already; it is never
 *   released meanwhile), and so, by their own policies, do the jobs waiting on it.
 *
 * @publicApi
 */
export type DependencyPolicy = 'block' | 'ignore' | 'cancel';

/** One dependency of a job ({@link NewJob.dependsOn}). @publicApi */
export interface JobDependency {
  jobId: string;
  /** Default `block`. */
  onFailure?: DependencyPolicy;
}

/**
 * Where one dependency of a job stands ({@link DependencyView.state}):
 * - `waiting`: not settled yet (its dependency is hot, or in the DLQ under `block`: `blocked`
 *   says so);
 * - `succeeded`: its dependency reached the Archive;
 * - `ignored`: its dependency failed under `ignore`;
 * - `failed`: its dependency failed under `cancel`: the dependent goes (or went) to the DLQ;
 * - `removed`: its dependency was purged from the DLQ while the dependent was blocked on it.
 *
 * @publicApi
 */
export type DependencyState = 'waiting' | 'succeeded' | 'ignored' | 'failed' | 'removed';

/** One edge of the dependency graph, as `JobClient.getDependencies` shows it. @publicApi */
export interface DependencyView {
  /** The job that waits. */
  jobId: string;
  /** The job it waits on. */
  dependsOn: string;
  onFailure: DependencyPolicy;
  state: DependencyState;
  /**
   * Where the dependency is now: `hot` (Pending, Fetched, Processing or Waiting), `archive`,
   * `dlq`, or `removed` (in no table: purged, or removed by retention).
   */
  dependencyPillar: 'hot' | 'archive' | 'dlq' | 'removed';
  /** True while the edge waits on a dependency in the DLQ (`block`). */
  blocked: boolean;
}

/** What one run of the dependency check did (`JobStore.checkDependencies`). @publicApi */
export interface DependencyCheckResult {
  /**
   * Open edges it re-read (PostgreSQL only: a continuation's edge to a dependency that was hot at
   * enqueue, whose move may not have seen it); those whose dependency had left the hot table are
   * settled by the re-read as that move would have settled them.
   */
  settled: number;
  /** Waiting jobs it sent to the DLQ as `DependencyFailed`. */
  cancelled: string[];
}

/** A job's place in the dependency graph (`JobClient.getDependencies`). @publicApi */
export interface JobDependencies {
  /** The jobs it waits (or waited) on. */
  dependsOn: DependencyView[];
  /** The jobs that wait (or waited) on it, at most 1,000 (`truncated` says when there are more). */
  dependents: DependencyView[];
  truncated: boolean;
}

/**
 * The states of a holder that keep a `unique` dedupe key taken: `pending` (Pending, scheduled or
 * due), `running` (Fetched or Processing), `finished` (archived, succeeded, within `windowMs` of
 * its finish). A holder in the DLQ never holds a unique key. @publicApi
 */
export type DedupeState = 'pending' | 'running' | 'finished';

/**
 * A dedupe key and its window (`NewJob.dedupe`). `key`: 1–255 characters, no trailing blanks,
 * compared byte for byte; one namespace across queues. `windowMs`: an integer from 1 to 10 years.
 * - `throttle`: at most one job per key per window, the window counted from the enqueue that made
 *   the holder; while it lasts every enqueue returns the holder's id, whatever state the holder is
 *   in (finished and dead-lettered included). After it, the next enqueue makes a new holder.
 * - `debounce`: the job runs `windowMs` after the last enqueue of its key. An enqueue within the
 *   window replaces the payload of a holder that is still Pending and moves its run time to now +
 *   `windowMs`; if the holder was claimed meanwhile (Fetched, started ahead or running) or has
 *   finished, a new job is made and holds the key. Exclusive with `delayMs` and `runAt`.
 * - `unique`: while the holder is in one of `states`, every enqueue returns its id; `windowMs`
 *   (required with `finished`, and only then) is how long a succeeded holder keeps the key.
 * @publicApi
 */
export type DedupeOption =
  | { key: string; mode: 'throttle' | 'debounce'; windowMs: number }
  | { key: string; mode: 'unique'; states: readonly DedupeState[]; windowMs?: number };

/** The dedupe key a job holds (`getJob`). Times are the database clock's. @publicApi */
export interface JobDedupe {
  key: string;
  mode: DedupeOption['mode'];
  /** `unique` only: the states that keep the key taken; null for the other modes. */
  states: DedupeState[] | null;
  /** The window's length; null for `unique` without `finished`. */
  windowMs: number | null;
  /** When the holder took the key (throttle), or the last enqueue that moved it (debounce). */
  windowStartedUtc: Date;
  /** When the window ends (throttle, debounce); null for `unique`, whose end follows its holder. */
  windowEndsUtc: Date | null;
}

/** Options of `enqueue`/`enqueueMany`. @publicApi */
export interface EnqueueOptions {
  /**
   * Run inside the caller's open transaction (see `TransactionOption.transaction`: a TypeORM
   * `QueryRunner` of ChokaQ's `DataSource`, a `pg` client, a better-sqlite3 `Database`, an `mssql`
   * transaction, or a Knex, Kysely, Drizzle or Prisma transaction); the jobs then commit or roll
   * back with the caller's data. Anything else is rejected with `ChokaQTransactionError`.
   */
  transaction?: unknown;
}

/** What `enqueue` did. @publicApi */
export interface EnqueueResult {
  /** The job id: the new one, or that of the active job holding the same idempotency key. */
  id: string;
  /**
   * False when an existing job was returned instead: the same id, the same active idempotency key,
   * or the holder of a dedupe key within its window.
   */
  created: boolean;
  /** True when a `debounce` enqueue replaced its Pending holder's payload and run time. */
  replaced?: boolean;
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
  /**
   * Exact `(queue, type)` pairs, for queues without a queue-wide handler, each with the payload
   * versions its handler can run: `minVersion` to `maxVersion`, integers from 1 to 2^31-1 (both 1
   * when absent, an unversioned handler). The claim takes a job of the pair only when its
   * `payloadVersion` is in that range; queue-wide handlers take every version.
   */
  types: ReadonlyArray<{ queue: string; type: string; minVersion?: number; maxVersion?: number }>;
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
   * A queue with a rate limit is claimed only by a claim that starts every row it takes
   * (`start >= limit`): its rows are never buffered Fetched, so a start is the claim that counted it.
   */
  start?: number;
  /**
   * Queues the caller believes have a `MaxWorkers` budget or a rate limit (from a recent
   * `getQueues`). When it is given and no handled queue is in it, a dialect may claim without
   * serialising on budgets (on PostgreSQL: one autocommit statement instead of a transaction with a
   * lock step); such a claim skips every queue that has a budget or a rate limit at that moment,
   * so a stale hint only delays a newly limited queue until the caller's next refresh, and never
   * overspends a budget or a rate.
   */
  budgetedQueues?: readonly string[];
  /**
   * This claim starts rows ahead of the caller's free slots (`worker.startAhead`): they wait in
   * the caller's process for a slot, already Processing. Such a claim must start every row it
   * takes (`start === limit`) and take rows only from queues with neither a `MaxWorkers` budget nor
   * a rate limit at that moment, so a budget is never held by rows waiting for a slot and a rate is
   * never spent before its runs begin. Only for a storage whose `startsAhead` is true.
   */
  ahead?: boolean;
}

/**
 * What `fetchNextBatch` returns: the claimed rows, in claim order. When a queue's rate limit
 * ({@link QueueInfo.rateLimit}) held back rows the caller could have started, a dialect may add
 * `rateLimitWaitMs`: how long until the first such queue may start a job again (database clock),
 * so the caller can claim again then rather than after a full poll interval. An array with an
 * optional property, so a storage that returns a plain `HotJob[]` still fits. @publicApi
 */
export type ClaimedJobs = HotJob[] & { rateLimitWaitMs?: number };

/** A claimed or active row of the hot table. @publicApi */
export interface HotJob {
  id: string;
  queue: string;
  type: string;
  /** The parsed payload. */
  payload: unknown;
  tags: string[];
  idempotencyKey: string | null;
  /** The job's group ({@link NewJob.group}), or null. */
  group: string | null;
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
  /** The note reported with {@link HotJob.progress} (`ctx.reportProgress(percent, note)`), if any. */
  progressNote: string | null;
  /** The producer's trace context stored at enqueue ({@link NewJob.traceContext}), if any. */
  traceContext: Record<string, string> | null;
  /** The version of the stored payload ({@link NewJob.payloadVersion}); 1 for an unversioned job. */
  payloadVersion: number;
  /**
   * The batch the job belongs to (`enqueueBatch`), or of which it is a callback; null for a job
   * outside any batch.
   */
  batchId: string | null;
  /**
   * For a job enqueued with `dependsOn`: how many of its dependencies it still waits on (0 once
   * released; a dependency failed under `cancel` keeps counting until the job is cancelled). Null
   * for a job that never waited.
   */
  waitingOn: number | null;
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
  /**
   * The handler's return value as JSON text, when its handler records results (`recordResult`):
   * stored with the archive row. Absent for every other run.
   */
  result?: string;
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

/**
 * What `updatePending` changes on a job that is still Pending (any field left out is kept). At
 * least one must be given. @publicApi
 */
export interface PendingEdits {
  /** A new payload, validated as an enqueue's (size cap, JSON, and a schema where one is known). */
  payload?: unknown;
  /** New tags, replacing the old ones (`[]` clears them). */
  tags?: readonly string[];
  /** A new priority (higher runs first). */
  priority?: number;
  /**
   * When the job becomes eligible: a `Date`, or `'now'` to make it due at once ("run now": it
   * takes its place among the due jobs by its original enqueue time).
   */
  runAt?: Date | 'now';
}

/**
 * {@link PendingEdits} as the storage applies them: with the payload version a new payload is stored
 * under (its definition's, when the caller knows it; else the job keeps its own), and the
 * `(queue, type)` the job must have (a typed caller's definition), if any. @publicApi
 */
export interface PendingUpdate extends PendingEdits {
  /** The version a new payload is stored under (only with `payload`); absent keeps the job's own. */
  payloadVersion?: number;
  /** The queue and type the job must have; a job of others is not changed. */
  expect?: { queue: string; type: string };
}

/**
 * The answer of `JobStorage.updatePending`: `updated`, or the job's status when it was not (null:
 * no job has the id), with its queue and type. @publicApi
 */
export type PendingUpdateResult =
  { updated: true } | { updated: false; status: JobStatus | null; queue?: string; type?: string };

/**
 * One zombie that `archiveZombies` moved on: where it went, and its hot row as the rescue found it
 * (status Processing, the lost worker's `workerId` and `leaseId`, the expired `heartbeatUtc`).
 * The payload is not read (null): one sweep moves up to 1,000 rows, and their payloads may be
 * large. @publicApi
 */
export interface RescuedZombie {
  /** `dlq`: moved to the DLQ as Zombie; `hot`: returned to Pending, attempt kept. */
  pillar: 'dlq' | 'hot';
  /** The row before the move, `payload` null. `job.workerId` is the worker that lost it. */
  job: HotJob;
}

/** Result of `archiveZombies`. @publicApi */
export interface ZombieRescueResult {
  /** Moved to DLQ as Zombie. */
  dlq: string[];
  /** Returned to Pending (queues with `RetryZombies`, or a handler rule that opts in). */
  retried: string[];
  /** Every job of {@link dlq} and {@link retried}, with the row it had when rescued. */
  jobs: RescuedZombie[];
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
  /** The queue's cluster-wide start rate limit ({@link RateLimit}), or null when unlimited. */
  rateLimit: RateLimit | null;
  /**
   * At most this many of one group's jobs are Fetched or Processing at once, across every process
   * ({@link NewJob.group}); null when unlimited. Jobs without a group are not limited by it.
   */
  groupConcurrency: number | null;
  /** Each group's own start rate limit, with the guarantee of {@link RateLimit}; null when unlimited. */
  groupRateLimit: RateLimit | null;
  lastUpdatedUtc: Date;
}

/**
 * A cluster-wide start rate limit of one queue: in any window of `perMs` milliseconds (measured
 * by the database clock, on the jobs' `StartedAtUtc`), at most `max` of its jobs start, across
 * every process. Enforced inside the claim; see the library README, "Rate limits". @publicApi
 */
export interface RateLimit {
  /** Most starts in any window of `perMs`: an integer from 1 to 1,000,000. */
  max: number;
  /** The window in milliseconds: an integer from 1 to 86,400,000 (one day). */
  perMs: number;
}

/** Queue controls to change; `undefined` leaves a field as it is, `null` clears a nullable one. @publicApi */
export interface QueuePatch {
  isPaused?: boolean;
  isActive?: boolean;
  maxWorkers?: number | null;
  zombieTimeoutSeconds?: number | null;
  executionTimeoutMs?: number | null;
  retryZombies?: boolean;
  /** A start rate limit; null removes it. Changing it keeps the starts already counted. */
  rateLimit?: RateLimit | null;
  /** A per-group concurrency (an integer from 1 to 1,000,000); null removes it. */
  groupConcurrency?: number | null;
  /** A per-group start rate limit; null removes it and the groups' rate state. */
  groupRateLimit?: RateLimit | null;
}

/**
 * How busy one group of a queue is (`admin.getQueueGroups`): its jobs in the hot table. @publicApi
 */
export interface QueueGroupLoad {
  /** The group key; `''` for the jobs without a group of a queue with group limits (they share one). */
  group: string;
  /** Pending jobs of the group (due or scheduled). */
  pending: number;
  /** Fetched and Processing jobs of the group: what its concurrency limit counts. */
  running: number;
}

/** Retention windows in milliseconds; `batchSize` rows per delete transaction. @publicApi */
export interface RetentionPolicy {
  archiveMs: number;
  dlqMs: number;
  metricsMs: number;
  /**
   * Rows of the Workers table not seen for this long (stopped or lost workers) are removed.
   * Default 86,400,000 (1 day).
   */
  workersMs?: number;
  /**
   * Audit log entries older than this are removed. Default 7,776,000,000 (90 days): longer than
   * the DLQ's, so an entry outlives the rows it describes.
   */
  auditMs?: number;
  batchSize?: number;
}

/** Rows removed by `applyRetention`. @publicApi */
export interface RetentionResult {
  archive: number;
  dlq: number;
  metricBuckets: number;
  /** Rows of the Workers table (stopped or lost workers). */
  workers: number;
  /** Entries of the audit log. */
  audit: number;
  /**
   * Dedupe keys that no longer hold anything (`NewJob.dedupe`): a throttle or debounce window that
   * ended, a unique key whose holder left the states that keep it. Removed whatever the policy.
   */
  dedupeKeys: number;
  /**
   * Group rate windows that no longer count (`QueueInfo.groupRateLimit`): every start they hold is
   * older than the window, or the queue has no group rate limit any more. Removed whatever the
   * policy; a group's next start makes its row again.
   */
  groups: number;
  /**
   * Batches (`enqueueBatch`) settled longer ago than both `archiveMs` and `dlqMs`, whose jobs'
   * rows are gone or going, each with its callbacks' rows. A batch not settled is kept whatever
   * its age.
   */
  batches: number;
}
