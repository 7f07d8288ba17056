import { ChokaQWorkerDisabledError } from './errors';
import { JobOutcome } from './interfaces/job-outcome.interface';
import { ChokaQWorker } from './runtime/chokaq-worker';

/**
 * This process's worker as `JobClient`, `ChokaQAdmin` and `ChokaQTesting` see it (the split of
 * `@nestjs/schedule`, whose orchestrator writes into `SchedulerRegistry` and whose users read only
 * the registry). `ChokaQOrchestrator` owns every worker and every lifecycle hook; it writes here and
 * nothing else does, so the producer side never depends on the lifecycle owner.
 *
 * What the orchestrator writes, and when:
 *
 * | when | call |
 * |---|---|
 * | `onModuleInit`, after discovery | {@link setDrainWorkerFactory}: how to build a worker for `drain()` when none runs |
 * | `onApplicationBootstrap` (worker enabled) | {@link setWorker}: the worker it starts |
 * | `onModuleDestroy`, or a direct `stop()` | {@link close}: no drain may start from now on |
 * | `beforeApplicationShutdown`, once the workers stopped | {@link clear}: forget them |
 *
 * Between `close()` and `clear()` the stopping worker is no longer local (it runs nothing new), but
 * a drain worker still running a `drain()` stays reachable by {@link cancelLocal}, so a job
 * cancelled then lands in the DLQ as Cancelled rather than being released by the shutdown.
 *
 * Provided by `ChokaQModule` only, one per application (no static state). A plain class (Nest
 * builds it without a decorator, since it takes nothing), so the CLI loads no Nest for it.
 *
 * @internal Not part of the public API; read `ChokaQAdmin.workerStats()` instead.
 */
export class WorkerRegistry {
  private worker: ChokaQWorker | undefined;
  private buildDrainWorker: (() => ChokaQWorker) | undefined;
  /** Built by the factory on the first drain without a worker, and never started. */
  private drainWorker: ChokaQWorker | undefined;
  private closed = false;

  // ------------------------------------------------------------------ written by the orchestrator

  /** Records the worker the orchestrator starts at bootstrap. */
  setWorker(worker: ChokaQWorker): void {
    this.worker = worker;
  }

  /**
   * Records how to build a worker for {@link drain} when none was started (producer-only mode, or
   * a drain before bootstrap). The factory is called at most once; the orchestrator keeps what it
   * builds and stops it at shutdown.
   */
  setDrainWorkerFactory(build: () => ChokaQWorker): void {
    this.buildDrainWorker = build;
  }

  /** Shutdown has begun: {@link drain} refuses from now on. Idempotent. */
  close(): void {
    this.closed = true;
  }

  /** Shutdown is over: every worker is forgotten and every read sees none. Idempotent. */
  clear(): void {
    this.closed = true;
    this.worker = undefined;
    this.drainWorker = undefined;
    this.buildDrainWorker = undefined;
  }

  // ------------------------------------------------------------------ read by the producer side

  /** The running local worker, if any (none in producer-only mode or once shutdown began). */
  get localWorker(): ChokaQWorker | undefined {
    return this.worker?.running ? this.worker : undefined;
  }

  /**
   * The worker the orchestrator started, in whatever state it is now (starting, running, draining,
   * stopped), until shutdown is over ({@link clear}); none in producer-only mode. What a health
   * check reads: unlike {@link localWorker}, a draining worker is still seen.
   */
  get startedWorker(): ChokaQWorker | undefined {
    return this.worker;
  }

  /** Wakes the local fetcher (after a local enqueue); a no-op without a running worker. */
  nudge(queue?: string): void {
    this.localWorker?.nudge(queue);
  }

  /**
   * Aborts at once the local runs of jobs whose cancellation was just requested (instead of waiting
   * for the next heartbeat); jobs running in other processes see it on their owner's heartbeat. A
   * no-op when nothing runs here.
   */
  cancelLocal(ids: readonly string[]): void {
    const worker = this.localWorker ?? this.drainWorker;
    if (worker) for (const id of ids) worker.cancelLocal(id);
  }

  /** Resizes the local worker's concurrency. Throws `ChokaQWorkerDisabledError` when none runs here. */
  setConcurrency(concurrency: number): void {
    const worker = this.localWorker;
    if (!worker) throw new ChokaQWorkerDisabledError('set the concurrency');
    worker.setConcurrency(concurrency);
  }

  /**
   * Runs every due job of `queues` (all handled queues when omitted) to completion and returns the
   * outcomes. Uses the started worker, or else a worker built for drains and never started (so no
   * loop runs between calls). Throws `ChokaQWorkerDisabledError` once shutdown began, or before the
   * application is initialised (no handler is known yet).
   */
  async drain(queues?: string[], options?: { timeoutMs?: number }): Promise<JobOutcome[]> {
    if (this.closed) throw new ChokaQWorkerDisabledError('drain jobs');
    const worker = this.worker ?? (this.drainWorker ??= this.buildDrainWorker?.());
    if (!worker) throw new ChokaQWorkerDisabledError('drain jobs');
    return worker.drain(queues, options);
  }
}
