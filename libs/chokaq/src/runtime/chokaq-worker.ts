import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { StreamLogger } from '../common/stream-logger';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { toError } from '../common/error-text';
import { logEvent } from '../common/log-events';
import { newLeaseId } from '../common/uuid';
import { libraryVersion } from '../common/version';
import { ChokaQDrainTimeoutError, ChokaQError } from '../errors';
import type { HandlerLookup } from '../interfaces/handler.interface';
import type { JobOutcome } from '../interfaces/job-outcome.interface';
import type { HandledJobs } from '../interfaces/job.interface';
import type { ChokaQMiddleware } from '../interfaces/middleware.interface';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import type { RecurringJobSpec } from '../interfaces/recurring-job.interface';
import type { LocalWorkerHealth } from '../interfaces/worker.interface';
import { ChokaQMetrics } from '../observability/chokaq-metrics';
import type { ChokaQTracing } from '../observability/chokaq-tracing';
import type { JobStore } from '../storage/job-storage';
import { CircuitBreakers, circuitJob, type CircuitState } from './circuit-breaker';
import { CompletionBatcher, type CompletionBatcherOptions } from './completion-batcher';
import { FetcherLoop } from './fetcher.loop';
import { HeartbeatLoop } from './heartbeat.loop';
import type { JobEventSink } from './job-events';
import { JobExecutor } from './job-executor';
import { JobProcessor } from './job-processor';
import { MaintenanceLoop } from './maintenance.loop';
import { QueueControls } from './queue-controls';
import { RecurringLoop, type RecurringTimerRegistry } from './recurring.loop';
import { RescueLoop } from './rescue.loop';
import { WorkerPresence } from './worker-presence';

/**
 * What a {@link ChokaQWorker} is built from. The Nest layer resolves these (storage, discovered
 * handlers, options, DI-resolved middleware) and constructs the worker; nothing here is Nest-aware.
 *
 * @publicApi
 */
export interface ChokaQWorkerDeps {
  storage: JobStore;
  handlers: HandlerLookup;
  options: ResolvedChokaQOptions;
  /** Already resolved instances, outermost first. */
  middleware?: ChokaQMiddleware[];
  recurring?: RecurringJobSpec[];
  /** Where recurring jobs' timers are listed (a Nest app's `SchedulerRegistry`). Default: nowhere. */
  recurringTimers?: RecurringTimerRegistry;
  /** Default `new StreamLogger('ChokaQ')`. */
  logger?: ChokaQLogger;
  /** The schema (SQLite: the table prefix) the storage works in, named in the startup line. */
  schema?: string;
  /** Where lifecycle events go (the application's `JobEvents`). Default: nowhere. */
  events?: JobEventSink;
  /** Internal tuning of the completion batch (tests). */
  completionBatch?: CompletionBatcherOptions;
  /** Where the worker's metrics are recorded (the module's `ChokaQMetrics`). Default: nowhere. */
  metrics?: ChokaQMetrics;
  /** Where the spans of its runs are started (the module's `ChokaQTracing`). Default: nowhere. */
  tracing?: ChokaQTracing;
}

/** Counters of a worker, for health checks and tests. */
export interface ChokaQWorkerStats {
  /** Claimed, not started. */
  buffered: number;
  /** Started ahead by a claim (Processing, attempt counted), waiting here for a slot. */
  startedAhead: number;
  /** Handlers running now. */
  running: number;
  /** Current concurrency limit. */
  concurrency: number;
  /** Finished runs whose storage write is in progress (or waits for its completion batch). */
  finalising: number;
  /** Transitions the storage refused (zero rows): SPEC `state_transition_conflicts`. */
  conflicts: number;
  /** Handler results that arrived after the run was decided (timeout, cancel, shutdown). */
  lateResults: number;
  /** Consecutive failed heartbeats. */
  heartbeatFailures: number;
  /** Circuits that are not closed, by `queue/type`. */
  circuits: Record<string, CircuitState>;
}

/** Extra margin beyond `shutdownGracePeriodMs` for the final writes (release, archive flush). */
const SHUTDOWN_MARGIN_MS = 5_000;
/** Default bound of {@link ChokaQWorker.drain}. */
const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/**
 * The worker of one process (SPEC §4): fetch, process, heartbeat, rescue, maintenance and
 * recurring loops over one {@link JobStore}. A plain class — no Nest decorators, no lifecycle
 * hooks, no signal handlers — so it runs in unit tests with fake timers; the Nest orchestrator
 * calls `start()` at bootstrap and `beginStop()`/`stop()` at shutdown.
 *
 * @publicApi
 */
export class ChokaQWorker {
  /** This process's worker id, written with every claim. */
  readonly workerId: string;
  private readonly logger: ChokaQLogger;
  private readonly storage: JobStore;
  private readonly handlers: HandlerLookup;
  private readonly options: ResolvedChokaQOptions;
  private readonly controls: QueueControls;
  private readonly breakers: CircuitBreakers;
  private readonly executor: JobExecutor;
  private readonly batcher: CompletionBatcher;
  private readonly processor: JobProcessor;
  private readonly fetcher: FetcherLoop;
  private readonly heartbeat: HeartbeatLoop;
  private readonly rescue: RescueLoop;
  private readonly maintenance: MaintenanceLoop;
  private readonly recurringLoop: RecurringLoop;
  private readonly presence: WorkerPresence;
  private readonly recurring: readonly RecurringJobSpec[];
  private readonly recurringTimers: RecurringTimerRegistry | undefined;
  private readonly schema: string | undefined;
  /** `worker.startAhead` as it applies to this storage (0 where the dialect does not start ahead). */
  private readonly startAhead: number;
  private readonly listeners = new Set<(outcome: JobOutcome) => void>();
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private unsubscribe: (() => Promise<void>) | null = null;
  private isRunning = false;
  /** Its loops were started (and have not been stopped: see {@link stopped}). */
  private loopsStarted = false;
  /** Its graceful stop is over. */
  private stopped = false;

  constructor(deps: ChokaQWorkerDeps) {
    this.logger = deps.logger ?? new StreamLogger('ChokaQ');
    this.storage = deps.storage;
    this.handlers = deps.handlers;
    this.options = deps.options;
    this.recurring = deps.recurring ?? [];
    this.recurringTimers = deps.recurringTimers;
    this.schema = deps.schema;
    this.workerId =
      deps.options.worker.workerId ||
      `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.controls = new QueueControls(deps.storage);
    // Only a storage that honours `FetchRequest.ahead` is asked to start ahead (PostgreSQL).
    this.startAhead = deps.storage.startsAhead === true ? deps.options.worker.startAhead : 0;
    const metrics = deps.metrics ?? ChokaQMetrics.disabled();
    this.breakers = new CircuitBreakers(deps.options.circuitBreaker, Date.now, (key, event) => {
      const { queue, type } = circuitJob(key);
      metrics.circuit(queue, type, event);
    });
    this.executor = new JobExecutor(
      deps.middleware ?? [],
      this.logger,
      Date.now,
      deps.tracing,
      this.options.payload.maxBytes,
    );
    this.batcher = new CompletionBatcher(deps.storage, this.logger, deps.completionBatch);
    this.processor = new JobProcessor({
      storage: deps.storage,
      handlers: deps.handlers,
      options: deps.options,
      workerId: this.workerId,
      executor: this.executor,
      batcher: this.batcher,
      breakers: this.breakers,
      controls: this.controls,
      logger: this.logger,
      onOutcome: (outcome) => this.emit(outcome),
      events: deps.events,
      onCapacity: () => this.fetcher.onCapacity(),
      metrics,
      startAhead: this.startAhead,
    });
    this.fetcher = new FetcherLoop({
      storage: deps.storage,
      handlers: deps.handlers,
      options: deps.options,
      workerId: this.workerId,
      processor: this.processor,
      controls: this.controls,
      logger: this.logger,
      // One full batcher write, and never less than the prefetch buffer.
      maxUnwritten: Math.max(deps.options.worker.prefetch, this.batcher.writeLimit),
    });
    const host = hostname();
    const version = libraryVersion();
    this.presence = new WorkerPresence({
      storage: deps.storage,
      report: () => ({
        workerId: this.workerId,
        host,
        pid: process.pid,
        libraryVersion: version,
        concurrency: this.processor.limiter.capacity,
        running: this.processor.runningCount,
        handled: this.handlers.handled(),
        circuits: this.breakers.snapshot(),
        draining: this.stopping !== undefined,
      }),
      logger: this.logger,
    });
    this.heartbeat = new HeartbeatLoop({
      storage: deps.storage,
      options: deps.options,
      workerId: this.workerId,
      // The processor owns a run's lease until the finaliser settles it, which for a success is
      // after its batched archive returns: its list already covers every completion still waiting.
      leases: () => this.processor.leases(),
      onCancelRequested: (ids) => this.processor.cancel(ids),
      onThresholdReached: () => {
        if (this.options.heartbeat.cancelOnHeartbeatFailure)
          this.processor.abortAll('heartbeat-failure');
      },
      logger: this.logger,
      presence: this.presence,
      metrics,
    });
    this.rescue = new RescueLoop(
      deps.storage,
      deps.options,
      this.logger,
      deps.handlers,
      deps.events,
      metrics,
    );
    this.maintenance = new MaintenanceLoop(deps.storage, deps.options, this.logger);
    // Re-read once per poll interval, like queue controls: a change made elsewhere is followed soon.
    this.recurringLoop = new RecurringLoop(deps.storage, deps.recurring ?? [], this.logger, {
      syncIntervalMs: deps.options.worker.pollIntervalMs,
      timers: deps.recurringTimers,
      handlers: deps.handlers,
      metrics,
    });
  }

  /** True between `start()` and the beginning of `stop()`. */
  get running(): boolean {
    return this.isRunning;
  }

  /**
   * Starts every loop: fetch (which feeds the processor), heartbeat, rescue, maintenance and
   * recurring. Subscribes once to the storage's enqueue and cancel notifications. Idempotent; a
   * stopped worker cannot be started again (construct a new one).
   */
  start(): Promise<void> {
    if (this.stopping) {
      return Promise.reject(
        new ChokaQError('This ChokaQ worker was stopped; construct a new one to start again.'),
      );
    }
    this.starting ??= this.doStart();
    return this.starting;
  }

  /** Stops the worker gracefully (SPEC §4) and resolves when nothing of it is left running. Idempotent. */
  stop(): Promise<void> {
    this.beginStop();
    return this.stopping!;
  }

  /**
   * Starts the graceful drain without awaiting it (called from `onModuleDestroy`, so the drain runs
   * while other modules are destroyed); a later `stop()` awaits the same drain.
   */
  beginStop(): void {
    if (this.stopping) return;
    this.isRunning = false;
    this.stopping = this.doStop();
    // beginStop() has no caller awaiting it; stop() reports the error.
    this.stopping.catch(() => undefined);
  }

  /** Wakes the fetcher now (a same-process enqueue). Ignored for queues this process does not handle. */
  nudge(queue?: string): void {
    if (!this.isRunning) return;
    if (queue !== undefined && !handles(this.handlers.handled(), queue)) return;
    this.fetcher.nudge();
  }

  /** Changes the number of handlers run at once (an integer ≥ 1); takes effect at once. */
  setConcurrency(n: number): void {
    this.processor.limiter.resize(n);
  }

  /**
   * Aborts the signal of a job running in this process whose cancellation was just requested
   * (`storage.cancel` returned it in `cancelRequested`), instead of waiting for the next heartbeat.
   * Returns true when the job was running here.
   */
  cancelLocal(id: string): boolean {
    return this.processor.cancel([id]) > 0;
  }

  /** Calls `listener` with every job outcome of this worker (loops and `drain()`); returns an unsubscribe. */
  onOutcome(listener: (outcome: JobOutcome) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Buffer, running and concurrency numbers (plus health counters). */
  stats(): ChokaQWorkerStats {
    return {
      buffered: this.processor.bufferedCount,
      startedAhead: this.processor.startedAheadCount,
      running: this.processor.runningCount,
      concurrency: this.processor.limiter.capacity,
      // A success stays finalising in the processor until its batched archive returns.
      finalising: this.processor.finalisingCount,
      // A refused archive is counted by the finaliser, which hears it from the batcher.
      conflicts: this.processor.conflicts,
      lateResults: this.executor.lateResults,
      heartbeatFailures: this.heartbeat.consecutiveFailures,
      circuits: this.breakers.snapshot(),
    };
  }

  /**
   * Its state, heartbeat age and load, from memory: what a health check reads
   * (`ChokaQAdmin.localWorkerHealth`).
   */
  health(): LocalWorkerHealth {
    const age = this.heartbeat.ageMs();
    return {
      workerId: this.workerId,
      state: this.stopped
        ? 'stopped'
        : this.stopping
          ? 'draining'
          : this.loopsStarted
            ? 'running'
            : 'starting',
      heartbeatAgeMs: age ?? null,
      heartbeatIntervalMs: this.options.heartbeat.intervalMs,
      heartbeatFailures: this.heartbeat.consecutiveFailures,
      buffered: this.processor.bufferedCount,
      running: this.processor.runningCount,
      concurrency: this.processor.limiter.capacity,
    };
  }

  /**
   * Testing helper core: claims and runs due jobs of `queues` (default: every queue this process
   * handles) until none is due, and returns their outcomes in completion order. Retries scheduled
   * for later are not waited for (their outcome is `retried`); a retry due at once runs again.
   * Meant for a worker whose loops are not started (producer-only apps, tests); with the loops
   * running, the fetcher competes for the same rows. Rejects with `ChokaQDrainTimeoutError` after
   * `timeoutMs` (default 30 s).
   */
  async drain(queues?: string[], options: { timeoutMs?: number } = {}): Promise<JobOutcome[]> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    const handled = filterHandled(this.handlers.handled(), queues);
    const outcomes: JobOutcome[] = [];
    if (handled.queues.length === 0 && handled.types.length === 0) return outcomes;
    await this.controls.refresh();
    for (;;) {
      if (Date.now() >= deadline) throw new ChokaQDrainTimeoutError(timeoutMs, outcomes);
      const leaseId = newLeaseId();
      const limit = Math.min(this.options.worker.batchSize, this.processor.limiter.capacity);
      const jobs = await this.storage.fetchNextBatch({
        workerId: this.workerId,
        leaseId,
        limit,
        handled,
      });
      if (jobs.length === 0) break;
      // Register the leases (heartbeat coverage when the loops run) without the buffer's pump.
      const run = this.processor.runBatch(
        jobs.map((job) => ({ job, lease: { id: job.id, workerId: this.workerId, leaseId } })),
      );
      const result = await raceDeadline(run, deadline);
      if (!result) throw new ChokaQDrainTimeoutError(timeoutMs, outcomes);
      outcomes.push(...result);
    }
    await this.batcher.flush();
    return outcomes;
  }

  // ------------------------------------------------------------------ lifecycle

  private async doStart(): Promise<void> {
    this.isRunning = true;
    try {
      // Cancel requests from other processes abort the run here at once (PostgreSQL); elsewhere,
      // or when a notification is lost, the next heartbeat's keepAlive still reports them.
      this.unsubscribe = await this.storage.subscribe(
        (queue) => this.nudge(queue),
        (ids) => this.processor.cancel(ids),
      );
    } catch (error) {
      const message = toError(error).message;
      logEvent(
        this.logger,
        'NotificationsUnavailable',
        `Notifications unavailable (${message}); polling for jobs, ` +
          'and cancel requests reach running jobs on the next heartbeat.',
        { workerId: this.workerId, error: message },
      );
    }
    if (!this.isRunning) return; // stopped while subscribing
    // The Workers row exists before the worker claims anything (listWorkers shows it at once).
    await this.presence.beat();
    if (!this.isRunning) return; // stopped meanwhile
    this.fetcher.start();
    this.heartbeat.start();
    this.rescue.start();
    this.maintenance.start();
    this.recurringLoop.start();
    this.loopsStarted = true;
    this.logStarted();
  }

  /** The startup banner: where the worker runs, what it found to run, and how much at once. */
  private logStarted(): void {
    const handled = this.handlers.handled();
    const types = handled.types.map((t) => `${t.queue}/${t.type}`);
    const recurring = this.recurring.map((r) => r.name);
    const dialect = this.storage.dialect;
    const where = this.schema === undefined ? dialect : `${dialect} (schema ${this.schema})`;
    const concurrency = this.processor.limiter.capacity;
    const { prefetch, pollIntervalMs } = this.options.worker;
    const startAhead = this.startAhead;
    logEvent(
      this.logger,
      'WorkerStarted',
      `Worker ${this.workerId} started on ${where}: ` +
        `${handled.queues.length} queue-wide and ${types.length} typed handler(s), ` +
        `${recurring.length} recurring job(s)${this.recurringListing()}, ` +
        `concurrency ${concurrency}, prefetch ${prefetch}, start ahead ${startAhead}, ` +
        `poll ${pollIntervalMs} ms`,
      {
        workerId: this.workerId,
        dialect,
        schema: this.schema,
        queues: handled.queues,
        types,
        recurring,
        concurrency,
        prefetch,
        startAhead,
        pollIntervalMs,
      },
    );
  }

  /** Where the startup line says recurring timers are listed. */
  private recurringListing(): string {
    if (this.recurring.length === 0) return '';
    return this.recurringTimers
      ? ' (in SchedulerRegistry as chokaq:<name>)'
      : ' (import ScheduleModule.forRoot() to list them in SchedulerRegistry)';
  }

  /**
   * The graceful drain, in the order SPEC §4 prescribes. Why this order: claiming stops first so
   * nothing new arrives; buffered rows go back before anything else because no user code ran for
   * them (another process can take them right away); running handlers get their grace period; and
   * the heartbeat stops last, because until a row is written back or finalised it is still ours and
   * a missed heartbeat would let the rescue loop declare it a zombie.
   */
  private async doStop(): Promise<void> {
    const errors: Error[] = [];
    const grace = this.options.worker.shutdownGracePeriodMs;
    const hardDeadline = Date.now() + grace + SHUTDOWN_MARGIN_MS;
    await this.starting?.catch(() => undefined);

    // 1. Stop claiming (and the loops that do not own jobs); a claim in flight lands in the buffer.
    await this.stopClaiming(errors);
    // 2. Buffered rows back to Pending, and rows started ahead too, their attempt refunded.
    await this.stopStep(errors, 'release buffered jobs', () =>
      withDeadline(this.processor.releaseBuffered(), hardDeadline),
    );
    // 3. Abort running handlers and give them the grace period to settle and be finalised.
    await this.stopRunning(grace, hardDeadline);
    // 4. Completions still waiting for their batch.
    await this.stopStep(errors, 'flush completions', () => this.batcher.close(hardDeadline));
    // 5. Heartbeat last: everything above was still covered by it.
    await this.stopStep(errors, 'stop heartbeat', () => this.heartbeat.stop());
    // 6. The Workers row says stopped (a worker that never started has none); never fails the stop.
    await this.presence.stopped();
    this.stopped = true;
    logEvent(this.logger, 'WorkerStopped', `Worker ${this.workerId} stopped`, {
      workerId: this.workerId,
    });
    if (errors.length > 0)
      throw new AggregateError(
        errors,
        `ChokaQ worker ${this.workerId} stopped with ${errors.length} error(s)`,
      );
  }

  /**
   * One step of the graceful stop: a step that fails is logged and its error collected in
   * `errors`, and the stop goes on (the stop rejects with all of them at its end).
   */
  private async stopStep(
    errors: Error[],
    name: string,
    action: () => Promise<unknown>,
  ): Promise<void> {
    try {
      await action();
    } catch (error) {
      const wrapped = toError(error);
      logEvent(
        this.logger,
        'ShutdownStepFailed',
        `Shutdown step '${name}' failed: ${wrapped.message}`,
        { workerId: this.workerId, step: name, error: wrapped.message },
      );
      errors.push(wrapped);
    }
  }

  /** Stop step 1: nothing more is claimed or started, the loops that own no job stop. */
  private async stopClaiming(errors: Error[]): Promise<void> {
    this.processor.close();
    // The Workers row says draining at the next beat; beat now so operators see it at once.
    this.heartbeat.nudge();
    await this.stopStep(errors, 'stop loops', () =>
      Promise.all([
        this.fetcher.stop(),
        this.rescue.stop(),
        this.maintenance.stop(),
        this.recurringLoop.stop(),
      ]),
    );
    await this.stopStep(errors, 'unsubscribe', async () => {
      const unsubscribe = this.unsubscribe;
      this.unsubscribe = null;
      await unsubscribe?.();
    });
  }

  /**
   * Stop step 3: aborts the running handlers and waits `grace` ms for them to be finalised; those
   * still running then are given up to the rescue loop, and their finalising waits at most until
   * `hardDeadline` (epoch ms).
   */
  private async stopRunning(grace: number, hardDeadline: number): Promise<void> {
    const aborted = this.processor.abortAll('shutdown');
    if (aborted > 0) {
      logEvent(
        this.logger,
        'ShutdownWaiting',
        `Waiting up to ${grace} ms for ${aborted} running job(s) to stop`,
        { workerId: this.workerId, running: aborted, gracePeriodMs: grace },
      );
    }
    if (await this.processor.waitIdle(Date.now() + grace)) return;
    const left = this.processor.abandonRunning();
    if (left.length > 0) {
      logEvent(
        this.logger,
        'ShutdownJobsLeft',
        `${left.length} job(s) still running after ${grace} ms are left to the rescue loop: ${left.join(', ')}`,
        { workerId: this.workerId, jobIds: left, gracePeriodMs: grace },
      );
    }
    await this.processor.waitIdle(hardDeadline);
  }

  private emit(outcome: JobOutcome): void {
    for (const listener of this.listeners) {
      try {
        listener(outcome);
      } catch (error) {
        const message = toError(error).message;
        logEvent(this.logger, 'OutcomeListenerFailed', `Outcome listener threw: ${message}`, {
          error: message,
        });
      }
    }
  }
}

function handles(handled: HandledJobs, queue: string): boolean {
  return handled.queues.includes(queue) || handled.types.some((t) => t.queue === queue);
}

function filterHandled(handled: HandledJobs, queues: string[] | undefined): HandledJobs {
  if (!queues) return handled;
  const wanted = new Set(queues);
  return {
    queues: handled.queues.filter((q) => wanted.has(q)),
    types: handled.types.filter((t) => wanted.has(t.queue)),
  };
}

/** Resolves with `promise`'s value, or undefined at `deadline` (epoch ms); the timer is always cleared. */
async function raceDeadline<T>(promise: Promise<T>, deadline: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Like {@link raceDeadline} but rejects at the deadline (a shutdown step that hung). */
async function withDeadline<T>(promise: Promise<T>, deadline: number): Promise<T> {
  const result = await raceDeadline(
    promise.then((value) => ({ value })),
    deadline,
  );
  if (!result) throw new Error('did not finish before the shutdown deadline');
  return result.value;
}
