import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { CHOKAQ_STORAGE } from '../chokaq.constants';
import { toError } from '../common/error-text';
import { logEvent } from '../common/log-events';
import { JobDefinition, isJobDefinition } from '../decorators/job-definition';
import { ChokaQPayloadValidationError, ChokaQValidationError, ValidationIssue } from '../errors';
import type {
  BatchCallbacks,
  BatchEnqueued,
  BatchResultsPage,
  BatchResultsQuery,
  BatchView,
} from '../interfaces/batch.interface';
import { JobView } from '../interfaces/job-view.interface';
import type { StandardSchemaV1 } from '../interfaces/standard-schema.interface';
import {
  CancelResult,
  JobDependencies,
  JobDependency,
  NewJob,
  PendingEdits,
} from '../interfaces/job.interface';
import { uuidv7 } from '../common/uuid';
import { ChokaQMetrics } from '../observability/chokaq-metrics';
import { ChokaQTracing } from '../observability/chokaq-tracing';
import { JobEvents } from '../runtime/job-events';
import { announceCancelled } from '../runtime/lifecycle-events';
import { JobStorage } from '../storage/job-storage';
import { MAX_ENQUEUE_MANY } from '../validation/limits';
import { fitTraceContext } from '../validation/trace-context';
import { assertPendingUpdated } from '../validation/validate-job';
import {
  STANDARD_SCHEMA_RULE,
  checkPayload,
  isStandardSchema,
  storedForm,
} from '../validation/validate-payload';
import { WorkerRegistry } from '../worker.registry';
import type { BatchEntry, EnqueueBatchOptions } from './batch-job';
import type { EnqueueFlowOptions, FlowEnqueued, FlowStep } from './flow-step';

/**
 * Per-job options of `enqueue` and friends (SPEC §1): the fields of the storage's `NewJob` that a
 * caller sets beside the queue, type and payload, with the same documentation and limits. Every
 * string is checked against the SPEC §6 limits before anything is written; a violation is a
 * `ChokaQValidationError` naming the field.
 *
 * @publicApi
 */
export type JobOptions = Pick<
  NewJob,
  | 'priority'
  | 'delayMs'
  | 'runAt'
  | 'idempotencyKey'
  | 'dedupe'
  | 'group'
  | 'tags'
  | 'createdBy'
  | 'id'
  | 'dependsOn'
>;

/** Options of a plain-queue enqueue: `type` is free (default: the queue name). @publicApi */
export interface EnqueueJobOptions extends JobOptions, TransactionOption {
  /** Stable type key, ≤ 255 chars. Default: the queue name. */
  type?: string;
}

/** Options of a definition enqueue: the definition fixes the type. @publicApi */
export type TypedEnqueueJobOptions = JobOptions & TransactionOption;

/**
 * {@link PendingEdits} through a definition: the payload is the definition's input type. @publicApi
 */
export type TypedPendingEdits<TInput> = Omit<PendingEdits, 'payload'> & { payload?: TInput };

/** @publicApi */
export interface TransactionOption {
  /**
   * Your open transaction, on ChokaQ's database: the job then commits or rolls back with your
   * data. A TypeORM `QueryRunner` of the `DataSource` ChokaQ uses, a `pg` client after `BEGIN`, a
   * better-sqlite3 `Database` in a transaction, an `mssql` `Transaction`, or the transaction a
   * Knex, Kysely, Drizzle or Prisma callback receives (library README, "Enqueue in your own
   * transaction"). Anything else, or one not in a transaction, is refused with
   * `ChokaQTransactionError`.
   */
  transaction?: unknown;
}

/** One item of `enqueueMany` with a definition. @publicApi */
export type TypedEnqueueItem<T> = JobOptions & { payload: T };

/** One item of `enqueueMany` on a plain queue. @publicApi */
export type EnqueueItem = JobOptions & { payload?: unknown; type?: string };

/**
 * The producer API: enqueue, schedule, cancel and look up jobs. Works in every process, including
 * producer-only ones (`worker: { enabled: false }`). After a local enqueue of a due job the local
 * worker, if one runs, is woken at once instead of waiting for its poll interval. With tracing on,
 * the trace context active at the call is stored with each job it enqueues.
 *
 * ```ts
 * constructor(private readonly jobs: JobClient) {}
 * await this.jobs.enqueue(WelcomeEmail, { to }, { idempotencyKey: `welcome:${userId}` });
 * ```
 *
 * @publicApi
 */
@Injectable()
export class JobClient {
  private readonly logger = new Logger('JobClient');

  /** Nest builds it: inject `JobClient` instead. @internal */
  constructor(
    @Inject(CHOKAQ_STORAGE) private readonly storage: JobStorage,
    private readonly workers: WorkerRegistry,
    @Optional() private readonly events?: JobEvents,
    @Optional() private readonly metrics: ChokaQMetrics = ChokaQMetrics.disabled(),
    @Optional() private readonly tracing: ChokaQTracing = ChokaQTracing.disabled(),
  ) {}

  /**
   * Enqueues one job and resolves to its id — or, when an active job holds the same
   * `idempotencyKey`, to that job's id (nothing is inserted then). A definition with a schema
   * validates the payload first: a refusal is a `ChokaQPayloadValidationError` and writes nothing.
   */
  enqueue<T, TInput>(
    definition: JobDefinition<T, TInput>,
    payload: NoInfer<TInput>,
    options?: TypedEnqueueJobOptions,
  ): Promise<string>;
  enqueue(queue: string, payload?: unknown, options?: EnqueueJobOptions): Promise<string>;
  async enqueue(
    target: string | JobDefinition<unknown, unknown>,
    payload?: unknown,
    options: EnqueueJobOptions = {},
  ): Promise<string> {
    const checked = checkedDefinition(target);
    if (checked) await checkPayloads(checked, [payload], () => 'payload');
    const { transaction, ...job } = options;
    const newJob = this.toNewJob(target, { ...job, payload }, this.traceContext());
    const result = await this.storage.enqueue(newJob, { transaction });
    if (result.created) {
      this.metrics.enqueued(newJob.queue, newJob.type ?? newJob.queue);
      this.wake(target, job);
    }
    return result.id;
  }

  /**
   * Enqueues up to 10,000 jobs of one queue (or definition). Every item is validated first (its
   * payload by the definition's schema, if any, then its fields by the limits): one bad item fails
   * the whole call, names its index (`items[12].priority`, `items[3].payload.to`) and inserts
   * nothing. Resolves to the ids in input order.
   */
  enqueueMany<T, TInput>(
    definition: JobDefinition<T, TInput>,
    items: ReadonlyArray<TypedEnqueueItem<NoInfer<TInput>>>,
    options?: TransactionOption,
  ): Promise<string[]>;
  enqueueMany(
    queue: string,
    items: readonly EnqueueItem[],
    options?: TransactionOption,
  ): Promise<string[]>;
  async enqueueMany(
    target: string | JobDefinition<unknown, unknown>,
    items: readonly EnqueueItem[],
    options: TransactionOption = {},
  ): Promise<string[]> {
    const checked = checkedDefinition(target);
    if (checked && Array.isArray(items)) {
      // Items that are not objects are left to the storage edge, which names them.
      const payloads = items.map((item: unknown) =>
        typeof item === 'object' && item !== null ? (item as EnqueueItem).payload : SKIP,
      );
      await checkPayloads(checked, payloads, (i) => `items[${i}].payload`);
    }
    const traceContext = this.traceContext();
    const jobs = Array.isArray(items)
      ? items.map((item) => this.toNewJob(target, item, traceContext))
      : (items as never);
    const results = await this.storage.enqueueMany(jobs, { transaction: options.transaction });
    if (this.metrics.enabled) countCreated(this.metrics, jobs, results);
    if (results.some((r) => r.created)) this.wake(target, {});
    return results.map((r) => r.id);
  }

  /**
   * Enqueues a batch: its jobs (1 to 10,000, each made with {@link batchJob}, of any queues and
   * definitions) and its callbacks, in one transaction (yours with `transaction`). Each callback is
   * a job enqueued by the move that settles the batch's last job, in that move's transaction:
   * `onComplete` the first time the batch settles, `onSuccess` the first time it settles with no
   * job in the DLQ (which can be after its failed jobs were resurrected and succeeded),
   * `onFailure` the first time it settles with one there; each at most once. Payloads are checked
   * by their definitions' schemas first (`jobs[2].payload`, `onFailure.payload`); a refusal writes
   * nothing. A callback's handler finds the batch in `ctx.batchId` and reads its counts with
   * {@link getBatch}.
   */
  async enqueueBatch(
    jobs: readonly BatchEntry[],
    options: EnqueueBatchOptions = {},
  ): Promise<BatchEnqueued> {
    const { transaction, createdBy, ...callbackEntries } = options;
    const traceContext = this.traceContext();
    const toJob = async (entry: BatchEntry, path: string) => {
      // Anything but an entry is left to the storage edge, which names the problem.
      if (entry === null || typeof entry !== 'object') return entry as never;
      const checked = checkedDefinition(entry.target);
      if (checked) await checkPayloads(checked, [entry.payload], () => `${path}.payload`);
      return this.toNewJob(
        entry.target,
        { ...entry.options, payload: entry.payload },
        traceContext,
      );
    };
    const members = Array.isArray(jobs)
      ? await Promise.all(jobs.map((entry, i) => toJob(entry, `jobs[${i}]`)))
      : (jobs as never);
    const callbacks: BatchCallbacks = {};
    for (const [name, entry] of Object.entries(callbackEntries)) {
      if (entry !== undefined) {
        callbacks[name as keyof BatchCallbacks] = await toJob(entry as BatchEntry, name);
      }
    }
    const made = await this.storage.enqueueBatch(
      { jobs: members, callbacks, createdBy },
      { transaction },
    );
    if (this.metrics.enabled) {
      for (const job of members) this.metrics.enqueued(job.queue, job.type ?? job.queue);
    }
    for (const queue of new Set(members.map((job) => job.queue))) this.workers.nudge(queue);
    return made;
  }

  /**
   * Enqueues a flow: named steps (each made with {@link flowStep}, of any queues and definitions)
   * that wait on each other (`after`: a tree, a fan-out, a fan-in, any DAG) and on existing jobs
   * (`dependsOn`), all in one transaction (yours with `transaction`). A step with nothing to wait
   * on is Pending at once; the others are Waiting and each becomes Pending in the transaction of
   * the move that settles its last dependency. A cycle, a step named in `after` that the flow does
   * not have, or a `dependsOn` id in no table is refused before anything is written
   * (`ChokaQValidationError` with the step's path, `steps.total.after`;
   * `ChokaQDependencyNotFoundError`). A step takes no idempotency or dedupe key; give the steps
   * your own `id`s to make a retried call make none of them twice. Resolves to each step's job id
   * by name.
   */
  async enqueueFlow(
    steps: Readonly<Record<string, FlowStep>>,
    options: EnqueueFlowOptions = {},
  ): Promise<FlowEnqueued> {
    const names = steps !== null && typeof steps === 'object' ? Object.keys(steps) : [];
    if (names.length === 0 || names.length > MAX_ENQUEUE_MANY) {
      throw new ChokaQValidationError([
        {
          path: 'steps',
          message: `must be an object of 1 to ${MAX_ENQUEUE_MANY} steps`,
          value: steps,
        },
      ]);
    }
    const ids = new Map<string, string>();
    for (const name of names) {
      const step = steps[name];
      const given = step !== null && typeof step === 'object' ? step.options?.id : undefined;
      ids.set(name, given ?? uuidv7());
    }
    const issues: ValidationIssue[] = [];
    const traceContext = this.traceContext();
    const jobs: (NewJob & { queue: string })[] = [];
    for (const name of names) {
      const step = steps[name];
      if (step === null || typeof step !== 'object') {
        issues.push({ path: `steps.${name}`, message: 'must be made with flowStep', value: step });
        continue;
      }
      const checked = checkedDefinition(step.target);
      if (checked) await checkPayloads(checked, [step.payload], () => `steps.${name}.payload`);
      const { after = [], dependsOn = [], ...rest } = step.options ?? {};
      for (const key of ['idempotencyKey', 'dedupe'] as const) {
        const value = (rest as Record<string, unknown>)[key];
        if (value !== undefined) {
          issues.push({
            path: `steps.${name}.${key}`,
            message: 'is not allowed on a flow step',
            value,
          });
        }
      }
      const waits: (string | JobDependency)[] = [...dependsOn];
      (Array.isArray(after) ? after : [after]).forEach((ref: unknown, i) => {
        const stepName =
          typeof ref === 'object' && ref !== null ? (ref as { step?: unknown }).step : ref;
        const id = typeof stepName === 'string' ? ids.get(stepName) : undefined;
        if (id === undefined) {
          issues.push({
            path: `steps.${name}.after[${i}]`,
            message: 'must name a step of this flow',
            value: ref,
          });
          return;
        }
        const onFailure =
          typeof ref === 'object' ? (ref as { onFailure?: unknown }).onFailure : undefined;
        waits.push({
          jobId: id,
          ...(onFailure === undefined ? {} : { onFailure }),
        } as JobDependency);
      });
      jobs.push(
        this.toNewJob(
          step.target,
          {
            ...rest,
            id: ids.get(name),
            payload: step.payload,
            ...(waits.length > 0 ? { dependsOn: waits } : {}),
          },
          traceContext,
        ),
      );
    }
    if (issues.length > 0) throw new ChokaQValidationError(issues);
    let results;
    try {
      results = await this.storage.enqueueMany(jobs, { transaction: options.transaction });
    } catch (error) {
      throw error instanceof ChokaQValidationError &&
        !(error instanceof ChokaQPayloadValidationError)
        ? new ChokaQValidationError(
            error.issues.map((issue) => ({
              ...issue,
              path: issue.path.replace(
                /^items\[(\d+)\]/,
                (_, i: string) => `steps.${names[Number(i)]}`,
              ),
            })),
          )
        : error;
    }
    if (this.metrics.enabled) countCreated(this.metrics, jobs, results);
    for (const queue of new Set(jobs.map((job) => job.queue))) this.workers.nudge(queue);
    return { jobIds: Object.fromEntries(names.map((name) => [name, ids.get(name)!])) };
  }

  /**
   * A job's place in the dependency graph: the jobs it waits (or waited) on and, at most 1,000,
   * the jobs that wait (or waited) on it, each edge with its state and where the other job is.
   */
  getDependencies(id: string): Promise<JobDependencies> {
    return this.storage.getDependencies(id);
  }

  /**
   * The stored results of the jobs `id` waits (or waited) on, by dependency id: the result for a
   * dependency in the Archive (null when its handler records none), `undefined` for one that is
   * not (hot, in the DLQ, or removed). One read per dependency: a handler of a
   * released job calls it with `ctx.id`. For thousands of results, make the children a batch
   * and page them with {@link getBatchResults}. `R` types the results; it is not checked.
   */
  async getDependencyResults<R = unknown>(
    id: string,
  ): Promise<Record<string, R | null | undefined>> {
    const { dependsOn } = await this.storage.getDependencies(id);
    const out: Record<string, R | null | undefined> = {};
    for (const edge of dependsOn) {
      const job =
        edge.dependencyPillar === 'archive' ? await this.storage.getJob(edge.dependsOn) : null;
      out[edge.dependsOn] = job?.pillar === 'archive' ? (job.result as R | null) : undefined;
    }
    return out;
  }

  /** A batch's counts and callbacks, or null when no batch has that id (see {@link enqueueBatch}). */
  getBatch(id: string): Promise<BatchView | null> {
    return this.storage.getBatch(id);
  }

  /**
   * A page of a batch's results: its jobs in the Archive (its callbacks excluded) with the results
   * their handlers stored (`recordResult`; null for a handler that records none), in id order,
   * which is the order they were enqueued in. `query.limit`: 1 to 1,000 per page, default 100;
   * `query.after`: the previous page's `nextCursor` (which is null on the last page). Jobs still
   * hot or in the DLQ are not listed: read the page once the batch settled (a callback, with
   * `ctx.batchId`) to see every result. `R` types the results, e.g.
   * `getBatchResults<JobResult<typeof resizeImage>>(ctx.batchId!)` for a batch of one definition;
   * it is not checked against the jobs' types. An unknown batch is an empty page.
   */
  getBatchResults<R = unknown>(
    batchId: string,
    query?: BatchResultsQuery,
  ): Promise<BatchResultsPage<R>> {
    return this.storage.getBatchResults(batchId, query) as Promise<BatchResultsPage<R>>;
  }

  /** Enqueues one job that is not eligible before `runAt` (a shorthand for `enqueue(…, { runAt })`). */
  schedule<T, TInput>(
    definition: JobDefinition<T, TInput>,
    payload: NoInfer<TInput>,
    runAt: Date,
    options?: Omit<TypedEnqueueJobOptions, 'runAt' | 'delayMs'>,
  ): Promise<string>;
  schedule(
    queue: string,
    payload: unknown,
    runAt: Date,
    options?: Omit<EnqueueJobOptions, 'runAt' | 'delayMs'>,
  ): Promise<string>;
  schedule(
    target: string | JobDefinition<unknown, unknown>,
    payload: unknown,
    runAt: Date,
    options: Omit<EnqueueJobOptions, 'runAt' | 'delayMs'> = {},
  ): Promise<string> {
    return this.enqueue(target as string, payload, { ...options, runAt });
  }

  /**
   * Cancels jobs: Pending and Fetched ones move to the DLQ as Cancelled at once; running ones are
   * asked to stop (their `ctx.signal` aborts, at once in this process or on the owner's next
   * heartbeat) and then land in the DLQ as Cancelled. Finished jobs are left as they are.
   */
  async cancel(idOrIds: string | readonly string[], actor?: string): Promise<CancelResult> {
    const ids = typeof idOrIds === 'string' ? [idOrIds] : idOrIds;
    const result = await this.storage.cancel(ids, actor);
    this.workers.cancelLocal(result.cancelRequested);
    announceCancelled(
      this.events,
      result.cancelled,
      (id) => this.storage.getJob(id),
      (error) => {
        const message = toError(error).message;
        logEvent(
          this.logger,
          'CancelEventsFailed',
          `Announcing cancelled jobs failed: ${message}`,
          {
            error: message,
          },
        );
      },
    );
    return result;
  }

  /** One job wherever it is (hot, archive or DLQ), or null. */
  getJob(id: string): Promise<JobView | null> {
    return this.storage.getJob(id);
  }

  /**
   * The stored result of a job of `definition` (whose handler records results, `recordResult`),
   * with the definition's result type: the handler's return value once the job is in the archive,
   * null for an archived job without one (its handler records none, or returned nothing), and
   * `undefined` while the job is not archived (pending, running, in the DLQ, or no such job).
   * A job of another queue or type than the definition's is a `ChokaQValidationError`.
   */
  async getResult<T, TInput, R>(
    definition: JobDefinition<T, TInput, R>,
    id: string,
  ): Promise<R | null | undefined> {
    const job = await this.storage.getJob(id);
    if (job === null || job.pillar !== 'archive') return undefined;
    if (job.queue !== definition.queue || job.type !== definition.type) {
      throw new ChokaQValidationError([
        {
          path: 'id',
          message: `names a job of ${job.queue}/${job.type}, not of the definition's ${definition.queue}/${definition.type}`,
          value: id,
        },
      ]);
    }
    return job.result as R | null;
  }

  /**
   * Edits a job of `definition` that is still Pending: payload, tags, priority, or when it runs
   * (`runAt`; `'now'` makes it due at once). A new payload is validated as `enqueue` validates it
   * (the definition's schema, size and JSON) and stored under the definition's payload version.
   * Refused with `ChokaQJobNotPendingError` (with the job's `status`; null: no such job) once a
   * worker has claimed it or it has finished, and with `ChokaQValidationError` when `id` names a
   * job of another queue or type; nothing is changed then. Operators: `ChokaQAdmin.updatePending`
   * (audited, any job).
   */
  async updatePending<T, TInput>(
    definition: JobDefinition<T, TInput>,
    id: string,
    edits: TypedPendingEdits<NoInfer<TInput>>,
  ): Promise<void> {
    const expect = { queue: definition.queue, type: definition.type };
    const payload = typeof edits === 'object' && edits !== null ? edits.payload : undefined;
    const checked = checkedDefinition(definition as JobDefinition<unknown, unknown>);
    if (checked && payload !== undefined)
      await checkPayloads(checked, [payload], () => 'edits.payload');
    const result = await this.storage.updatePending(id, {
      ...edits,
      ...(payload === undefined ? {} : { payloadVersion: definition.version ?? 1 }),
      expect,
    });
    assertPendingUpdated(id, result, expect);
  }

  private toNewJob(
    target: string | JobDefinition<unknown, unknown>,
    item: EnqueueItem,
    traceContext: NewJob['traceContext'],
  ): NewJob & { queue: string } {
    // Only what this call captured: a `traceContext` smuggled in through the options is dropped.
    // The payload version is the definition's (none: the storage stores 1), never the caller's.
    if (isJobDefinition(target)) {
      return {
        ...item,
        queue: target.queue,
        type: target.type,
        traceContext,
        payloadVersion: target.version,
      };
    }
    return { ...item, queue: target, traceContext, payloadVersion: undefined };
  }

  /** The active trace context to store with the jobs of one call, fitted to the column, if any. */
  private traceContext(): NewJob['traceContext'] {
    return this.tracing.enabled ? fitTraceContext(this.tracing.capture()) : undefined;
  }

  /** Nudges the local fetcher for due jobs; delayed jobs are found by the poll when they are due. */
  private wake(target: string | JobDefinition<unknown, unknown>, job: JobOptions): void {
    if (job.delayMs || job.runAt) return;
    this.workers.nudge(isJobDefinition(target) ? target.queue : target);
  }
}

/** A definition with a schema, checked to be one (a hand-made definition may lie). */
type CheckedDefinition = JobDefinition<unknown, unknown> & { schema: StandardSchemaV1 };

/** The target when it is a definition with a schema, else undefined. */
function checkedDefinition(
  target: string | JobDefinition<unknown, unknown>,
): CheckedDefinition | undefined {
  if (typeof target === 'string' || !isJobDefinition(target)) return undefined;
  const schema: unknown = target.schema;
  if (schema === undefined) return undefined;
  // Only a hand-made definition can fail this: defineJob checks its schema.
  if (!isStandardSchema(schema)) {
    throw new ChokaQValidationError([
      { path: 'definition.schema', message: STANDARD_SCHEMA_RULE, value: schema },
    ]);
  }
  return target as CheckedDefinition;
}

/**
 * Validates the payloads with the definition's schema before anything is written; throws one
 * `ChokaQPayloadValidationError` with the issues of every refused payload. The schema sees each
 * payload as it will be stored (after a JSON round trip); the caller's payload, not the schema's
 * output, is what gets stored, so the worker can validate it again with the same schema. A payload
 * that cannot be serialised is left to the storage edge, which refuses it with its own issue.
 */
async function checkPayloads(
  definition: CheckedDefinition,
  payloads: readonly unknown[],
  pathOf: (index: number) => string,
): Promise<void> {
  const checks = payloads.map((payload, i) => {
    if (payload === SKIP) return undefined;
    const stored = storedForm(payload);
    return stored === undefined
      ? undefined
      : checkPayload(definition.schema, stored.value, pathOf(i));
  });
  const issues: ValidationIssue[] = [];
  for (const check of await Promise.all(checks)) {
    if (check && !check.ok) issues.push(...check.issues);
  }
  if (issues.length > 0) {
    throw new ChokaQPayloadValidationError(definition.queue, definition.type, issues, 'enqueue');
  }
}

/** An `enqueueMany` item that is not an object: no payload to check. */
const SKIP: unique symbol = Symbol('not an item');

/** Counts the jobs `enqueueMany` or `enqueueFlow` created, by queue and type (a flow spans queues). */
function countCreated(
  metrics: ChokaQMetrics,
  jobs: ReadonlyArray<NewJob & { queue: string }>,
  results: ReadonlyArray<{ created: boolean }>,
): void {
  // Queue → type → count: no key is built per job (a call enqueues up to 10,000).
  const counts = new Map<string, Map<string, number>>();
  jobs.forEach((job, i) => {
    if (!results[i]?.created) return;
    const types = counts.get(job.queue) ?? new Map<string, number>();
    const type = job.type ?? job.queue;
    types.set(type, (types.get(type) ?? 0) + 1);
    counts.set(job.queue, types);
  });
  for (const [queue, types] of counts) {
    for (const [type, n] of types) metrics.enqueued(queue, type, n);
  }
}
