import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { logEvent } from '../common/log-events';
import {
  ChokaQJobAbortedError,
  ChokaQJobTimeoutError,
  ChokaQPayloadValidationError,
  ChokaQPayloadVersionError,
  ChokaQThrottledError,
  type JobAbortCause,
} from '../errors';
import type { HandlerDefinition, JobBatchItem } from '../interfaces/handler.interface';
import type { JobContext } from '../interfaces/job-context.interface';
import { JobStatus } from '../interfaces/job-status.enum';
import type { HotJob, JobLease } from '../interfaces/job.interface';
import type { ChokaQMiddleware } from '../interfaces/middleware.interface';
import { ChokaQTracing, type RunSpan, type RunSpanResult } from '../observability/chokaq-tracing';
import { LIMITS, MAX_TIMER_MS } from '../validation/limits';
import { checkPayload } from '../validation/validate-payload';
import { DEFAULT_PAYLOAD_MAX_BYTES, serializeResult } from '../validation/validate-job';
import type { HandlerTransaction } from '../storage/job-storage';
import { JobBatches } from './job-batches';
import { JobLogger } from './job-logger';

/** How one run ended, as far as the worker is concerned. */
export type RunResult =
  /**
   * The handler returned. A transactional handler's run carries its still-open `transaction`: the
   * finaliser archives the job in it and commits.
   */
  | {
      kind: 'succeeded';
      durationMs: number;
      transaction?: HandlerTransaction;
      /** The return value as JSON text, when the handler records its result. */
      result?: string;
    }
  /** The handler threw. `abortedBy` is set when the worker had aborted its signal before. */
  | { kind: 'failed'; error: unknown; durationMs: number; abortedBy?: JobAbortCause }
  /** The execution timeout fired; the handler may still be running, its late result is ignored. */
  | { kind: 'timeout'; timeoutMs: number; durationMs: number }
  /** Cancelled or heartbeat-failure abort: decided at once, without waiting for the handler. */
  | { kind: 'aborted'; cause: 'cancelled' | 'heartbeat-failure'; durationMs: number }
  /** Given up at the end of the shutdown grace period; no storage write, rescue takes the row. */
  | { kind: 'abandoned'; durationMs: number };

/** A run in progress. */
export interface Execution {
  readonly job: HotJob;
  readonly lease: JobLease;
  readonly attempt: number;
  readonly signal: AbortSignal;
  /** Settles exactly once, never rejects. */
  readonly result: Promise<RunResult>;
  /** True once `result` has settled. */
  readonly settled: boolean;
  /**
   * Aborts the signal. `cancelled` and `heartbeat-failure` settle the result at once (the slot is
   * freed even if the handler ignores the signal); `shutdown` waits for the handler to settle.
   */
  abort(cause: JobAbortCause): void;
  /** Settles as `abandoned` now (end of the shutdown grace period) and clears the timer. */
  abandon(): void;
}

/** What the executor needs to start one run. */
export interface ExecutionRequest {
  job: HotJob;
  lease: JobLease;
  handler: HandlerDefinition;
  timeoutMs: number;
  /** Best-effort progress writer; errors are swallowed. */
  reportProgress?: (percent: number, note?: string) => Promise<void>;
  /**
   * Opens the run's transaction, for a handler with `transactional: true`: it is opened before the
   * payload check and the middleware, and handed to them as `ctx.transaction`.
   */
  openTransaction?: () => Promise<HandlerTransaction>;
}

/**
 * A progress note as stored and emitted: a string cut to `LIMITS.progressNote`, with NUL
 * characters (which PostgreSQL text rejects) and lone surrogates (a cut may split a pair) replaced
 * by U+FFFD, so the storage edge accepts it; else none.
 */
function progressNote(note: unknown): string | undefined {
  if (typeof note !== 'string') return undefined;
  const cut = note.slice(0, LIMITS.progressNote);
  // eslint-disable-next-line no-control-regex
  return cut.replace(/\u0000/g, '\uFFFD').toWellFormed();
}

/**
 * The attempt a run of `job` is: a row started by its claim already counts it (Processing); a
 * buffered row is counted by the `markAsProcessing` that starts it.
 */
export function attemptOf(job: HotJob): number {
  return job.status === JobStatus.Processing ? job.attemptCount : job.attemptCount + 1;
}

/**
 * Runs handlers: builds the {@link JobContext}, runs the middleware pipeline (first = outermost)
 * around the handler, and enforces the execution timeout. With tracing on, each run is a span
 * (`ChokaQTracing.startRun`) that is active while the middleware and the handler run and ends when
 * the run is decided, with the run's result.
 *
 * The result is a race between the handler and the worker's own verdicts (timeout, cancel,
 * heartbeat failure). Whichever comes first wins; a handler that settles later is a *late result*:
 * it is counted and logged, never written, because the worker has already finalised (or given up)
 * the row — and the fencing lease would refuse the write anyway.
 */
export class JobExecutor {
  private late = 0;
  /** The runs of batch handlers waiting for their batch to fill. */
  private readonly batches = new JobBatches<BatchMember>((handler, members) =>
    this.runBatch(handler, members),
  );

  constructor(
    private readonly middleware: readonly ChokaQMiddleware[],
    private readonly logger: ChokaQLogger,
    private readonly clock: () => number = Date.now,
    private readonly tracing: ChokaQTracing = ChokaQTracing.disabled(),
    /** The cap of a recorded result's JSON (`payload.maxBytes`). */
    private readonly resultMaxBytes: number = DEFAULT_PAYLOAD_MAX_BYTES,
  ) {}

  /** Handler results that arrived after the run had been decided (timeout, cancel, abandon). */
  get lateResults(): number {
    return this.late;
  }

  /** Starts one run now. */
  start(request: ExecutionRequest): Execution {
    const { job, lease, timeoutMs } = request;
    const attempt = attemptOf(job);
    // One check per run when tracing is off: no span, no closure.
    const span = this.tracing.enabled ? this.tracing.startRun(job, attempt) : undefined;
    const run = new Run(job, lease, attempt, this.clock, span);
    const ctx = new RunContext(run, request, this.logger);
    if (Number.isFinite(timeoutMs) && timeoutMs > 0) run.armTimeout(timeoutMs);
    if (request.handler.batch !== undefined) {
      this.joinBatch(run, request.handler, ctx);
      return run;
    }
    const handled = span
      ? span.run(() => this.invoke(run, request, ctx))
      : this.invoke(run, request, ctx);
    handled.then(
      (value: unknown) => this.handlerReturned(run, value, request.handler),
      (error: unknown) => this.handlerThrew(run, error),
    );
    return run;
  }

  /**
   * Puts `run` in the open batch of its batch handler. Its timeout counts from now, so the wait
   * for the batch to fill is part of it; a run stopped at shutdown sends its batch at once.
   */
  private joinBatch(run: Run, handler: HandlerDefinition, ctx: JobContext): void {
    run.onShutdown = () => this.batches.flush(handler);
    this.batches.add(handler, { run, ctx });
  }

  /**
   * Calls a batch handler with the runs of one batch that are still undecided (a run cancelled or
   * timed out while it waited is not sent), each payload upgraded and checked as a single run's
   * is: an item that fails its check fails alone. Each run is then decided by its own outcome.
   */
  private async runBatch(handler: HandlerDefinition, members: BatchMember[]): Promise<void> {
    const runs: Run[] = [];
    const items: JobBatchItem[] = [];
    for (const { run, ctx } of members) {
      if (run.settled) continue;
      try {
        // As a single run: a payload with no schema and no upgrade is the stored one, no await.
        const plain = handler.schema === undefined && !needsUpgrade(handler, run.job);
        items.push({
          payload: plain ? run.job.payload : await this.payloadFor(handler, run.job),
          ctx,
        });
        runs.push(run);
      } catch (error) {
        await this.handlerThrew(run, error);
      }
    }
    if (runs.length === 0) return;
    let outcomes: unknown;
    try {
      outcomes = await handler.invokeBatch!(items);
    } catch (error) {
      await Promise.all(runs.map((run) => this.handlerThrew(run, error)));
      return;
    }
    if (outcomes === undefined) {
      await Promise.all(runs.map((run) => this.handlerReturned(run, undefined, handler)));
      return;
    }
    if (!Array.isArray(outcomes) || outcomes.length !== runs.length) {
      const error = new TypeError(
        `Batch handler ${handler.name} returned ${describeOutcomes(outcomes)} for a batch of ${runs.length} job(s); ` +
          `it must return one outcome per item, in order, or nothing`,
      );
      await Promise.all(runs.map((run) => this.handlerThrew(run, error)));
      return;
    }
    await Promise.all(runs.map((run, i) => this.decideItem(run, outcomes[i], handler)));
  }

  /** Decides one run of a batch by the outcome its handler reported for it. */
  private decideItem(run: Run, outcome: unknown, handler: HandlerDefinition): void | Promise<void> {
    const o = outcome as Partial<{
      status: unknown;
      result: unknown;
      error: unknown;
      delayMs: unknown;
    }>;
    switch (o?.status) {
      case 'succeeded':
        return this.handlerReturned(run, o.result, handler);
      case 'failed':
        return this.handlerThrew(run, o.error);
      case 'retry':
        return this.handlerThrew(run, new ChokaQThrottledError(Number(o.delayMs)));
      default:
        return this.handlerThrew(
          run,
          new TypeError(
            `Batch handler ${handler.name} reported no outcome for job ${run.job.id}: expected ` +
              `{ status: 'succeeded' | 'failed' | 'retry', … }, got ${describeOutcomes(outcome)}`,
          ),
        );
    }
  }

  /** The handler's side of `run`: its transaction opened first when it has one, then the pipeline. */
  private invoke(run: Run, request: ExecutionRequest, ctx: JobContext): Promise<unknown> {
    const open = request.openTransaction;
    if (open) return this.runInTransaction(run, open, request.handler, ctx);
    return this.run(request.handler, run.job, ctx);
  }

  /** Opens `run`'s transaction, then runs the handler in it unless the run was decided meanwhile. */
  private async runInTransaction(
    run: Run,
    open: () => Promise<HandlerTransaction>,
    handler: HandlerDefinition,
    ctx: JobContext,
  ): Promise<unknown> {
    const opened = await open();
    if (run.settled) {
      // Decided (a timeout, a cancel) while its transaction was opening: the handler never ran, so
      // there is no late result to report.
      run.neverRan = true;
      await opened.abandon();
      return;
    }
    run.transaction = opened;
    return this.run(handler, run.job, ctx);
  }

  /**
   * The handler of `run` returned `value`: `succeeded` (with the value as JSON when the handler
   * records its result), unless the run was decided before (a late result). A result that cannot
   * be stored fails the run as a throw of `ChokaQResultError` would.
   */
  private handlerReturned(
    run: Run,
    value: unknown,
    handler: HandlerDefinition,
  ): void | Promise<void> {
    if (run.neverRan) return;
    if (run.settled) return this.lateResult(run.job, 'resolved');
    let result: string | undefined;
    if (handler.recordResult === true) {
      try {
        result = serializeResult(run.job.queue, run.job.type, value, this.resultMaxBytes);
      } catch (error) {
        return this.handlerThrew(run, error);
      }
    }
    const { transaction } = run;
    const durationMs = run.elapsed();
    // Two literals rather than a spread: most runs record nothing, and this is once per job.
    run.settle(
      result === undefined
        ? { kind: 'succeeded', durationMs, transaction }
        : { kind: 'succeeded', durationMs, transaction, result },
    );
  }

  /**
   * The handler of `run` threw (or its transaction did not open): `failed`, after its transaction
   * rolled back, unless the run was decided before (a late result).
   */
  private async handlerThrew(run: Run, error: unknown): Promise<void> {
    if (run.settled) return this.lateResult(run.job, 'rejected');
    // The failure policy writes in a transaction of its own, after this one rolled back: a retry
    // never sees the writes of the attempt that failed.
    if (run.transaction !== undefined) {
      await run.transaction.rollback();
      if (run.settled) return;
    }
    run.settle(
      { kind: 'failed', error, durationMs: run.elapsed(), abortedBy: run.abortedBy },
      error,
    );
  }

  /**
   * The payload check of a handler with a schema, then the pipeline with the schema's output. The
   * check runs inside the run (under its timeout, its failure a `failed` result), so a payload the
   * schema refuses reaches the failure policy as `ChokaQPayloadValidationError`: DLQ `FatalError`
   * at once, before any middleware or handler code saw it.
   *
   * A typed handler meeting a payload stored as an older version first runs the definition's
   * upgrade chain on a copy (each step awaited), and the schema checks the result; a step that
   * throws, or a version the handler cannot run, is a `ChokaQPayloadVersionError` (a fatal error:
   * DLQ `FatalError` at once). The stored payload is never changed.
   */
  private run(handler: HandlerDefinition, job: HotJob, ctx: JobContext): Promise<unknown> {
    if (handler.schema === undefined && !needsUpgrade(handler, job)) {
      return this.pipeline(handler, job.payload, ctx);
    }
    return this.checkedRun(handler, job, ctx);
  }

  /** {@link run} of a payload to upgrade or check: the upgrade, the schema, then the pipeline. */
  private async checkedRun(
    handler: HandlerDefinition,
    job: HotJob,
    ctx: JobContext,
  ): Promise<unknown> {
    return this.pipeline(handler, await this.payloadFor(handler, job), ctx);
  }

  /** The payload `handler` receives for `job`: upgraded to its version, then its schema's output. */
  private async payloadFor(handler: HandlerDefinition, job: HotJob): Promise<unknown> {
    let payload = needsUpgrade(handler, job) ? await upgradePayload(handler, job) : job.payload;
    if (handler.schema !== undefined) {
      const check = await checkPayload(handler.schema, payload, 'payload');
      if (!check.ok) {
        throw new ChokaQPayloadValidationError(job.queue, job.type, check.issues, 'run');
      }
      payload = check.value;
    }
    return payload;
  }

  /** Middleware around the handler; `Promise.resolve().then` turns synchronous throws into rejections. */
  private pipeline(
    handler: HandlerDefinition,
    payload: unknown,
    ctx: JobContext,
  ): Promise<unknown> {
    const dispatch = (index: number): Promise<unknown> => {
      if (index >= this.middleware.length) {
        return Promise.resolve().then(() => handler.invoke(payload, ctx));
      }
      const middleware = this.middleware[index];
      let called = false;
      const next = () => {
        if (called) {
          return Promise.reject(new Error(`${middleware.constructor.name} called next() twice`));
        }
        called = true;
        return dispatch(index + 1);
      };
      return Promise.resolve().then(() => middleware.use(ctx, payload, next));
    };
    return dispatch(0);
  }

  private lateResult(job: HotJob, how: 'resolved' | 'rejected'): void {
    this.late++;
    logEvent(
      this.logger,
      'JobLateResult',
      `Job ${job.id} (${job.queue}/${job.type}) ${how} after its run was already decided ` +
        `(timeout, cancel or shutdown); the late result is ignored.`,
      { jobId: job.id, queue: job.queue, type: job.type, settled: how },
    );
  }
}

/**
 * One run in progress, as the processor holds it: its state in fields of one object, where a
 * closure per piece of state would be a dozen allocations per job.
 *
 * The result is a race between the handler and the worker's own verdicts (timeout, cancel,
 * heartbeat failure): {@link settle} decides once, and what comes after is ignored.
 */
class Run implements Execution {
  readonly result: Promise<RunResult>;
  /** The cause the worker aborted the run's signal with first (a `failed` result reports it). */
  abortedBy: JobAbortCause | undefined;
  /**
   * The run's transaction (transactional handlers only). A run decided without the handler's own
   * result (timeout, cancel, heartbeat loss, abandon) drops it at once: the handler may still be
   * running, and nothing it wrote may land.
   */
  transaction: HandlerTransaction | undefined;
  /** Decided while its transaction was opening: the handler never ran. */
  neverRan = false;
  /** A batched run's: sends its waiting batch when shutdown stops the run. */
  onShutdown: (() => void) | undefined;
  private resolve!: (result: RunResult) => void;
  private isSettled = false;
  private controller: AbortController | undefined;
  private earlyReason: unknown;
  private timer: NodeJS.Timeout | undefined;
  private readonly startedAt: number;

  constructor(
    readonly job: HotJob,
    readonly lease: JobLease,
    readonly attempt: number,
    private readonly clock: () => number,
    private readonly span: RunSpan | undefined,
  ) {
    this.startedAt = clock();
    this.result = new Promise<RunResult>((resolve) => (this.resolve = resolve));
  }

  /** Made when first asked for (most handlers never ask), already aborted if the run was. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.earlyReason !== undefined) this.controller.abort(this.earlyReason);
    }
    return this.controller.signal;
  }

  get settled(): boolean {
    return this.isSettled;
  }

  /** Milliseconds since the run started (never negative). */
  elapsed(): number {
    return Math.max(0, this.clock() - this.startedAt);
  }

  /**
   * Fires the execution timeout after `timeoutMs`. Every edge caps a timeout at MAX_TIMER_MS, but a
   * queue row written before the cap may hold more; Node would fire such a timer after 1 ms, so it
   * waits the longest a timer can. The handler's own work keeps the process alive if it must; the
   * timer alone does not.
   */
  armTimeout(timeoutMs: number): void {
    this.timer = setTimeout(timedOut, Math.min(timeoutMs, MAX_TIMER_MS), this, timeoutMs);
    this.timer.unref?.();
  }

  /** Decides the run once: clears the timer, drops an undecided transaction, ends the span. */
  settle(value: RunResult, error?: unknown): void {
    if (this.isSettled) return;
    this.isSettled = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.transaction !== undefined && value.kind !== 'succeeded' && value.kind !== 'failed') {
      void this.transaction.abandon();
    }
    this.span?.end(spanResult(value), error);
    this.resolve(value);
  }

  /**
   * Aborts the signal (or remembers why, for a signal not yet made). The first reason stays: an
   * aborted signal ignores a second `abort`.
   */
  abortWith(reason: unknown): void {
    if (this.controller) this.controller.abort(reason);
    else this.earlyReason ??= reason;
  }

  abort(cause: JobAbortCause): void {
    if (this.isSettled) return;
    this.abortedBy ??= cause;
    const aborted = new ChokaQJobAbortedError(this.job.id, cause);
    this.abortWith(aborted);
    if (cause !== 'shutdown') {
      this.settle({ kind: 'aborted', cause, durationMs: this.elapsed() }, aborted);
    } else {
      this.onShutdown?.();
    }
  }

  abandon(): void {
    this.settle({ kind: 'abandoned', durationMs: this.elapsed() });
  }
}

/**
 * The handler's {@link JobContext} of one run: the job's facts as own fields, the rest as
 * accessors of the class, made when first asked for (most handlers use none of them).
 *
 * A class rather than an object literal: a literal with accessors gets a closure per accessor and
 * a property dictionary of its own on every run, which made the context the largest allocation
 * of a job (about 1.4 KB, sampled in a drain); an instance is one object of a shared shape.
 * `reportProgress` is a function of the context, so it may be called unbound
 * (`const { reportProgress } = ctx`).
 */
class RunContext implements JobContext {
  readonly id: string;
  readonly queue: string;
  readonly type: string;
  readonly attempt: number;
  readonly leaseId: string;
  readonly batchId: string | null;
  readonly #run: Run;
  readonly #request: ExecutionRequest;
  readonly #base: ChokaQLogger;
  #logger: JobLogger | undefined;
  #report: ((percent: number, note?: string) => Promise<void>) | undefined;

  constructor(run: Run, request: ExecutionRequest, base: ChokaQLogger) {
    const { job } = run;
    this.id = job.id;
    this.queue = job.queue;
    this.type = job.type;
    this.attempt = run.attempt;
    this.leaseId = run.lease.leaseId;
    this.batchId = job.batchId;
    this.#run = run;
    this.#request = request;
    this.#base = base;
  }

  get signal(): AbortSignal {
    return this.#run.signal;
  }

  get logger(): ChokaQLogger {
    this.#logger ??= new JobLogger(this.#base, `ChokaQ ${this.queue}/${this.type} ${this.id}`);
    return this.#logger;
  }

  get reportProgress(): (percent: number, note?: string) => Promise<void> {
    const request = this.#request;
    this.#report ??= async (percent: number, note?: string) => {
      try {
        await request.reportProgress?.(percent, progressNote(note));
      } catch {
        // Best effort by contract: progress must never fail a job.
      }
    };
    return this.#report;
  }

  get transaction(): JobContext['transaction'] {
    return this.#run.transaction?.manager;
  }

  get queryRunner(): JobContext['queryRunner'] {
    return this.#run.transaction?.queryRunner;
  }
}

/** A run waiting in a batch, with the context its handler receives. */
interface BatchMember {
  run: Run;
  ctx: JobContext;
}

/** What a batch handler returned, for an error message. */
function describeOutcomes(value: unknown): string {
  if (Array.isArray(value)) return `${value.length} outcome(s)`;
  if (value === null) return 'null';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** The execution timeout of `run` fired (a function of its own: no closure per run). */
function timedOut(run: Run, timeoutMs: number): void {
  if (run.settled) return;
  const timeout = new ChokaQJobTimeoutError(run.job.id, timeoutMs);
  run.abortWith(timeout);
  run.settle({ kind: 'timeout', timeoutMs, durationMs: run.elapsed() }, timeout);
}

/** A run's result as its span records it (`chokaq.run.result`). */
function spanResult(result: RunResult): RunSpanResult {
  switch (result.kind) {
    case 'aborted':
      return result.cause;
    default:
      return result.kind;
  }
}

/**
 * True when a typed handler meets a payload of another version than its own. A queue-wide handler
 * has no version and runs every payload as it is stored, as before versions existed.
 */
function needsUpgrade(handler: HandlerDefinition, job: HotJob): boolean {
  if (handler.type === undefined) return false;
  return (job.payloadVersion ?? 1) !== (handler.version ?? 1);
}

/**
 * The stored payload brought to the handler's version: a copy (the payload is JSON, so
 * `structuredClone` copies it whole) through `upgrade[v]`, `upgrade[v + 1]`, …, each step awaited.
 */
async function upgradePayload(handler: HandlerDefinition, job: HotJob): Promise<unknown> {
  const target = handler.version ?? 1;
  const stored = job.payloadVersion ?? 1;
  const refuse = (step: number | null, cause?: unknown) =>
    new ChokaQPayloadVersionError(
      job.queue,
      job.type,
      stored,
      target,
      step,
      cause === undefined ? undefined : { cause },
    );
  if (stored > target) throw refuse(null);
  let payload: unknown = structuredClone(job.payload);
  for (let v = stored; v < target; v++) {
    const step = handler.upgrade?.[v];
    if (typeof step !== 'function') throw refuse(null);
    try {
      payload = await step(payload);
    } catch (error) {
      throw refuse(v, error);
    }
  }
  return payload;
}
