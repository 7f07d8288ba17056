import type { JobContext } from './job-context.interface';
import type { HandledJobs, ZombieRetryRule } from './job.interface';
import type { StandardSchemaV1 } from './standard-schema.interface';

/**
 * One step of a payload upgrade chain (`defineJob(…, { upgrade: { [v]: step } })`): the payload of
 * version v to that of version v + 1. It may return a promise. A step that throws sends the job to
 * the DLQ at once as `FatalError`. @publicApi
 */
// `any` in, so a step can be written for the earlier shape it upgrades (`(p: { name: string }) => …`).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type PayloadUpgradeStep = (payload: any) => unknown;

/**
 * A handler's own retry delays (`@JobHandler(…, { backoff })`): a list of waits in ms, the n-th
 * for the retry after failed attempt n (the last repeated beyond the list), or a function of the
 * failed attempt (1-based) and what the handler threw, returning the wait in ms. @publicApi
 */
export type HandlerBackoff = readonly number[] | ((attempt: number, error: unknown) => number);

/**
 * A batch handler's batching (`@JobHandler(…, { batch })`): up to `size` jobs of the handler's type
 * per call, waiting at most `waitMs` after the first for more. @publicApi
 */
export interface JobBatchOptions {
  /** Most jobs per call, 1–1,000. A batch never holds more jobs than the worker has free slots. */
  size: number;
  /** Longest wait for more jobs after the first, 0–60,000 ms. Default 20. */
  waitMs?: number;
}

/** One job of a batch, as a batch handler receives it. @publicApi */
export interface JobBatchItem<T = unknown> {
  /** The payload, checked and upgraded as a single handler's is. */
  payload: T;
  /** The job's own context: its id, attempt, signal (cancel, timeout), logger, progress. */
  ctx: JobContext;
}

/**
 * What became of one job of a batch, at its index: `succeeded` (with the value stored when the
 * handler records results), `failed` (with its error, which the retry policy then treats as a
 * single handler's throw: retried, or the DLQ), or `retry` (again after `delayMs`, as
 * `ChokaQThrottledError` would: the attempt counts). A batch handler that returns nothing
 * succeeded for every job; one that throws failed every job with that error. @publicApi
 */
export type JobBatchOutcome =
  | { status: 'succeeded'; result?: unknown }
  | { status: 'failed'; error: unknown }
  | { status: 'retry'; delayMs: number };

/** Per-handler options of `@JobHandler`. @publicApi */
export interface JobHandlerOptions {
  /** Handle only this type of the queue; without it the handler takes every type of the queue. */
  type?: string;
  /** Execution timeout of this handler; wins over the queue's and the global one. */
  timeoutMs?: number;
  /** Attempts in all for this handler's jobs; wins over `retry.maxAttempts`. */
  maxAttempts?: number;
  /**
   * A zombie of this handler (its heartbeat expired while it ran) returns to Pending keeping its
   * attempt, instead of going to the DLQ as `Zombie`; only for idempotent work. Default false.
   * Honoured by the rescue of every process that registers this handler; a process without it (one
   * that runs other queues only) sends such a zombie to the DLQ if it finds it first. For a
   * guarantee across the whole fleet, set the queue's `RetryZombies` (`ChokaQAdmin.setRetryZombies`).
   */
  retryZombies?: boolean;
  /**
   * Runs the handler inside a READ COMMITTED transaction of the storage's `DataSource`, given as
   * `ctx.transaction`, and archives the job in that same transaction (fenced by the run's lease)
   * before one COMMIT: the handler's database writes land exactly once, with the job's success.
   * A run that throws, times out, is cancelled or lost its lease rolls them back. Holds one pooled
   * connection for the whole run. PostgreSQL and SQL Server through the application's own
   * `DataSource` only; any other storage refuses it at startup (`ChokaQTransactionalHandlerError`).
   * Default false.
   */
  transactional?: boolean;
  /**
   * Stores the handler's return value with the job's archive row, as JSON under the payload size
   * cap (`payload.maxBytes`); `getJob` returns it as `result`. A value that cannot be stored
   * (not JSON-serialisable, or over the cap) fails the run with `ChokaQResultError` (fatal: DLQ at
   * once) rather than being cut. Middleware must return `next()`'s value for it to arrive.
   * Default false: nothing is stored and nothing is serialised.
   */
  recordResult?: boolean;
  /**
   * This handler's retry delays, instead of the global `retry` policy's (`baseDelayMs`,
   * `multiplier`, `maxDelayMs`, `jitterMs`; no jitter is added): `[1_000, 10_000, 60_000]` waits 1
   * s after the first failed attempt, 10 s after the second and 60 s after every later one; a
   * function `(attempt, error) => ms` decides per failure. `ChokaQThrottledError(ms)` still wins,
   * and attempts and `maxJobAgeMs` still bound the retries. A list is checked at startup (1 to 100
   * integers from 0 to 2³¹ − 1); a function that throws or returns anything but a number from 0 to
   * 2³¹ − 1 gets the global policy's delay for that retry, and the retry's stored error says why.
   */
  backoff?: HandlerBackoff;
  /**
   * Makes this a batch handler: the method is called as `method(items: JobBatchItem[])` with up
   * to `size` jobs of its type at once and returns one {@link JobBatchOutcome} per item, in order
   * (or nothing, for all succeeded). Each job keeps its own attempts, retries, DLQ move, timeout,
   * cancel and attempt history; rate limits and budgets count each job. Middleware does not run
   * around a batch call. Not with `transactional`.
   */
  batch?: JobBatchOptions;
}

/** What `@JobHandler` stores on the method. */
export interface JobHandlerMetadata extends JobHandlerOptions {
  queue: string;
  /** The schema of the job definition the handler was declared with, if it has one. */
  schema?: StandardSchemaV1;
  /** The payload version of that definition, if it has one (see `defineJob`). */
  version?: number;
  /** Its upgrade chain, if it has one. */
  upgrade?: Readonly<Record<number, PayloadUpgradeStep>>;
}

/** A discovered handler, bound to its provider instance. */
export interface HandlerDefinition {
  queue: string;
  /** Undefined for a queue-wide handler. */
  type?: string;
  /** `ClassName.methodName`, for logs and errors. */
  name: string;
  timeoutMs?: number;
  maxAttempts?: number;
  retryZombies?: boolean;
  /** The run works in a transaction of the storage, committed with the job's archive move. */
  transactional?: boolean;
  /** The handler's return value is stored with the archive row (see `JobHandlerOptions`). */
  recordResult?: boolean;
  /** The handler's own retry delays (see `JobHandlerOptions`). */
  backoff?: HandlerBackoff;
  /**
   * Validates each stored payload before the middleware and the handler run; they receive the
   * schema's output. A payload it refuses goes to the DLQ at once as `FatalError`.
   */
  schema?: StandardSchemaV1;
  /**
   * The payload version the handler expects (default 1). With {@link HandlerDefinition.upgrade} it
   * decides the stored versions this process claims for the handler's `(queue, type)`.
   */
  version?: number;
  /**
   * `upgrade[v]` turns a version v payload into a version v + 1 payload; a stored payload older
   * than `version` runs the chain (on a copy) before the schema check and the handler.
   */
  upgrade?: Readonly<Record<number, PayloadUpgradeStep>>;
  /** Calls the provider method. */
  invoke(payload: unknown, ctx: JobContext): Promise<unknown>;
  /** A batch handler's batching (see `JobHandlerOptions.batch`), `waitMs` resolved. */
  batch?: Required<JobBatchOptions>;
  /** Calls a batch handler's method with the items of one batch. */
  invokeBatch?(items: JobBatchItem[]): Promise<unknown>;
}

/** What the runtime needs to know about the handlers of this process. */
export interface HandlerLookup {
  /** The `(queue, type)` handler if there is one, else the queue-wide one, else undefined. */
  resolve(queue: string, type: string): HandlerDefinition | undefined;
  /** The claim filter: queues with a queue-wide handler, and exact pairs for the others. */
  handled(): HandledJobs;
  /**
   * The rescue's `retryZombies` rules: for every queue where some handler opts in, one rule per
   * handler of that queue (the queue-wide one without a type), so a zombie resolves as a claim
   * would. Empty when no handler opts in.
   */
  zombieRetryRules(): ZombieRetryRule[];
}
