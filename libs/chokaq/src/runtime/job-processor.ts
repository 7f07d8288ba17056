import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { toError } from '../common/error-text';
import { logEvent } from '../common/log-events';
import { STORED_TEXT } from '../common/stored-text';
import type { JobAbortCause } from '../errors';
import type { HandlerDefinition, HandlerLookup } from '../interfaces/handler.interface';
import type { JobOutcome } from '../interfaces/job-outcome.interface';
import { FailureReason, JobStatus } from '../interfaces/job-status.enum';
import type { HotJob, JobLease } from '../interfaces/job.interface';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import { ChokaQMetrics } from '../observability/chokaq-metrics';
import { MAX_TIMER_MS } from '../validation/limits';
import type { JobStore } from '../storage/job-storage';
import { circuitKey, type CircuitBreakers } from './circuit-breaker';
import type { CompletionBatcher } from './completion-batcher';
import { ConcurrencyLimiter } from './concurrency-limiter';
import { DbClock } from './db-clock';
import type { Execution, JobExecutor, RunResult } from './job-executor';
import type { JobEventSink } from './job-events';
import { JobFinaliser, runOutcome, type ClaimedJob, type EmitOutcome } from './job-finaliser';
import { outcomeEvents, progressEvent, startedEvent } from './lifecycle-events';
import type { QueueControls } from './queue-controls';
import { triage, type Triage, type TriageView } from './run-triage';
import { StartedAhead } from './started-ahead';

/** What the processor is built from (the worker facade wires it). */
export interface JobProcessorDeps {
  storage: JobStore;
  handlers: HandlerLookup;
  options: ResolvedChokaQOptions;
  workerId: string;
  executor: JobExecutor;
  batcher: CompletionBatcher;
  breakers: CircuitBreakers;
  controls: QueueControls;
  logger: ChokaQLogger;
  /** Every outcome, as it happens. */
  onOutcome?: (outcome: JobOutcome) => void;
  /** Where lifecycle events go (`started`, `progress`, and those of applied outcomes). */
  events?: JobEventSink;
  /** A slot or buffer space was freed: the fetcher may claim more. */
  onCapacity?: () => void;
  /** Where runs, outcomes and conflicts are counted. Default: nowhere. */
  metrics?: ChokaQMetrics;
  /**
   * Most rows a claim may start ahead of the free slots (`worker.startAhead` as it applies to this
   * storage: 0 where the dialect does not start ahead). Default 0.
   */
  startAhead?: number;
  /** The monotonic clock the started-ahead rows are timed by. Default `performance.now`. */
  monotonic?: () => number;
}

/** A buffered run triage let through, with the handler that runs it. */
interface StartItem {
  claimed: ClaimedJob;
  handler: HandlerDefinition;
  /** The run is a half-open circuit's probe. */
  probe: boolean;
}

/** Backoff of a failed `markAsProcessing` before buffered jobs are tried again. */
const START_RETRY_MS = { base: 200, max: 5_000 };

/**
 * The processor of SPEC §4: holds the prefetch buffer, starts buffered jobs as concurrency slots
 * free up (one batched `markAsProcessing` per dispatch), runs them through the executor, and hands
 * each result to its {@link JobFinaliser}, which applies the failure policy and writes the verdict.
 * It knows every lease this process still owns — buffered, starting, running, and
 * finished-but-not-yet-written — which is exactly what the heartbeat must cover; the finaliser
 * tells it when a run's write is over (`onSettled`), and only then is the lease dropped.
 */
export class JobProcessor {
  /** Concurrency slots; resizable at run time. */
  readonly limiter: ConcurrencyLimiter;
  private buffer: ClaimedJob[] = [];
  /**
   * Runs, not jobs: each run's lease is one object, made when its claim is accepted and passed
   * along with the run to its end, and both collections are keyed by that object. A process can
   * hold a stale run of a job and the run that replaced it at once (its event loop stalled past the
   * zombie timeout, the job was rescued and this very worker claimed it again): two lease objects,
   * so finishing the stale run never drops the new run's lease from the heartbeat. (Keyed by
   * object, no key string is built and hashed per run.)
   */
  private readonly owned = new Set<JobLease>();
  private readonly running = new Map<JobLease, { id: string; execution: Execution }>();
  /** Dispatched work not yet settled ({@link track}): runs, and the writes that end them. */
  private tasks = 0;
  /** Who waits for {@link tasks} to reach 0 ({@link waitIdle}). */
  private idleWaiters: Array<() => void> = [];
  /** One settle callback for every tracked task (no closure per job). */
  private readonly untrack = (): void => {
    if (--this.tasks > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  };
  /** A tracked task rejected (none should): counted off, and the rejection still surfaces. */
  private readonly untrackFailed = (error: unknown): never => {
    this.untrack();
    throw error;
  };
  /** Where every outcome goes, outside a {@link runBatch} (one function, not one per job or call). */
  private readonly emit: EmitOutcome = (outcome, job) => this.emitOutcome(outcome, job);
  /** Frees the slot a run took (one function, not one per job). */
  private readonly releaseSlot = (): void => this.limiter.release(1);
  private readonly clock = new DbClock();
  private readonly finaliser: JobFinaliser;
  private closing = false;
  private startFailures = 0;
  private startRetryTimer: NodeJS.Timeout | undefined;
  /** Conflicts met before a run reaches the finaliser (start refused, buffered run superseded). */
  private conflictCount = 0;
  private finalising = 0;
  private pumpScheduled = false;
  private readonly metrics: ChokaQMetrics;
  /** Rows started by a claim beyond its free slots, waiting here for a slot (`worker.startAhead`). */
  private readonly ahead: StartedAhead;
  private readonly monotonic: () => number;
  private readonly triageView: TriageView;

  constructor(private readonly deps: JobProcessorDeps) {
    this.metrics = deps.metrics ?? ChokaQMetrics.disabled();
    this.ahead = new StartedAhead(deps.startAhead ?? 0);
    this.monotonic = deps.monotonic ?? (() => performance.now());
    this.triageView = {
      resolve: (queue, type) => deps.handlers.resolve(queue, type),
      isHeld: (queue) => deps.controls.isHeld(queue),
      tryAcquire: (key) => deps.breakers.tryAcquire(key),
      ageMs: (since) => this.clock.ageMs(since),
      maxJobAgeMs: deps.options.retry.maxJobAgeMs,
    };
    this.limiter = new ConcurrencyLimiter(deps.options.worker.concurrency, () => {
      this.schedulePump();
      this.deps.onCapacity?.();
    });
    this.finaliser = new JobFinaliser({
      storage: deps.storage,
      batcher: deps.batcher,
      breakers: deps.breakers,
      retry: deps.options.retry,
      clock: this.clock,
      logger: deps.logger,
      metrics: this.metrics,
      // Keyed by run: settling a stale run must leave the lease of the run that replaced it owned.
      onSettled: (lease) => this.owned.delete(lease),
    });
  }

  /**
   * Slots usually free one at a time, as handlers finish. Pumping once per event-loop turn instead
   * of once per freed slot starts every job that found a slot in that turn with one batched
   * `markAsProcessing`, rather than one statement per job.
   */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /** Jobs claimed but not started. */
  get bufferedCount(): number {
    return this.buffer.length;
  }

  /** Jobs a claim started ahead of the free slots that wait here for a slot (not entered yet). */
  get startedAheadCount(): number {
    return this.ahead.size;
  }

  /** Claimed rows held in memory before their handler: the buffer and the started-ahead rows. */
  get waitingCount(): number {
    return this.buffer.length + this.ahead.size;
  }

  /** Handlers running now. */
  get runningCount(): number {
    return this.running.size;
  }

  /** Finished runs whose storage write is in progress (a success: until its batch is written). */
  get finalisingCount(): number {
    return this.finalising;
  }

  /**
   * Leases held beyond the buffer and the running handlers: jobs being started and finished runs
   * whose storage write (archive, retry, DLQ) is not done yet. The fetcher stops claiming while
   * there are too many (`FetcherDeps.maxUnwritten`), so when writes are slower than handlers the
   * process does not pile up unwritten completions without bound.
   */
  get unwrittenCount(): number {
    return Math.max(0, this.owned.size - this.waitingCount - this.running.size);
  }

  /** Transitions the storage refused (zero rows), SPEC `state_transition_conflicts`. */
  get conflicts(): number {
    return this.conflictCount + this.finaliser.conflicts;
  }

  /** Every lease this process still owns: what the heartbeat renews. */
  leases(): JobLease[] {
    return [...this.owned];
  }

  /** Ids of running jobs. */
  runningIds(): string[] {
    return [...this.running.values()].map((r) => r.id);
  }

  /** The database clock as estimated from the last claim (rows carry `LastUpdatedUtc` = DB now). */
  dbNow(): number {
    return this.clock.now();
  }

  /**
   * Reserves up to `max` concurrency slots for rows the next claim starts itself (`FetchRequest.start`),
   * or none: rows claimed earlier wait in the buffer (they go first), a start is being retried, the
   * processor is closing, or a circuit is not closed (its jobs must be asked for one by one). The
   * reservation is settled by {@link accept}.
   */
  reserveStartSlots(max: number): number {
    // Rows started ahead take freed slots first; a claim reserving one would make it wait.
    if (!this.mayStart() || this.ahead.size > 0) return 0;
    return this.limiter.acquire(max);
  }

  /**
   * True when claims start rows ahead of the free slots now: `worker.startAhead` is on, claims may
   * start rows at all (see {@link reserveStartSlots}), and no handled queue is `budgeted` (has a
   * `MaxWorkers` budget or a rate limit: such queues must weigh in at every free slot, which rows
   * started ahead would take first). Then the buffer of Fetched rows is not used.
   */
  startsAhead(budgeted: boolean): boolean {
    return this.ahead.enabled && !budgeted && this.mayStart();
  }

  /**
   * How many rows the next claim should start beyond the `reserved` slots, at most `max` (see
   * {@link StartedAhead.room}); only meaningful when {@link startsAhead}.
   */
  aheadRoom(reserved: number, max: number): number {
    return Math.max(0, Math.min(max, this.ahead.room(reserved)));
  }

  /** A claim sent at `sentAt` (this processor's monotonic clock) just returned. */
  noteClaim(sentAt: number): void {
    this.ahead.noteClaim(sentAt, this.monotonic());
  }

  /** The monotonic clock the fetcher times its claims by. */
  now(): number {
    return this.monotonic();
  }

  /** Claims may start rows: not closing, no start being retried, nothing buffered, every circuit closed. */
  private mayStart(): boolean {
    if (this.closing || this.startRetryTimer !== undefined || this.buffer.length > 0) return false;
    return this.deps.breakers.allClosed();
  }

  /**
   * Takes the rows of one claim: Processing rows (started by the claim) run at once in the slots
   * `reserved` for them, unused reserved slots are given back, and Fetched rows join the buffer and
   * start as slots allow. A started row runs even if shutdown began while its claim was in flight:
   * its attempt is already counted, and the shutdown grace period covers it like any running job.
   * `sentAt` is when the claim was sent: a started row of a claim that took longer than its
   * {@link renewAfterMs} to come back (this process stalled while it was in flight, and a rescue
   * may have taken the row meanwhile) waits as a row started ahead does, so it is renewed before it
   * runs ({@link enterAhead}).
   */
  accept(
    jobs: readonly HotJob[],
    lease: { workerId: string; leaseId: string },
    reserved = 0,
    sentAt = this.monotonic(),
  ): void {
    this.clock.observe(jobs);
    const started: ClaimedJob[] = [];
    const ahead: ClaimedJob[] = [];
    this.dropSuperseded(jobs, lease.leaseId);
    const waited = this.monotonic() - sentAt;
    for (const job of jobs) {
      const claimed: ClaimedJob = { job, lease: { id: job.id, ...lease } };
      this.owned.add(claimed.lease);
      if (job.status !== JobStatus.Processing) this.buffer.push(claimed);
      else if (started.length < reserved && waited < this.renewAfterMs(job.queue)) {
        started.push(claimed);
      }
      // Started beyond the reserved slots (the claim started it ahead), or by a claim that came
      // back late: it waits for a slot, and is renewed first when it waited too long.
      else ahead.push(claimed);
    }
    // Pushed before the reserved slots are given back, which pumps: those rows take them first.
    this.ahead.push(ahead, sentAt);
    if (reserved > started.length) this.limiter.release(reserved - started.length);
    if (started.length > 0) {
      const { emit, releaseSlot } = this;
      for (const claimed of started) {
        const handler = this.deps.handlers.resolve(claimed.job.queue, claimed.job.type);
        this.track(
          handler
            ? this.execute(claimed, handler, false, emit, releaseSlot)
            : this.noHandler(claimed, emit).then(releaseSlot),
        );
      }
    }
    this.pump();
  }

  /**
   * Fills free slots: rows started ahead first (already started, they run with no statement),
   * then buffered jobs (one batched `markAsProcessing`). Never starts anything once closing.
   */
  pump(): void {
    if (this.closing) return;
    const now = this.monotonic();
    for (;;) {
      if (this.limiter.available === 0) break;
      const next = this.ahead.shift(now, (c) => this.renewAfterMs(c.job.queue));
      if (!next) break;
      this.limiter.acquire(1);
      this.track(this.enterAhead(next.claimed, next.fresh, this.releaseSlot));
    }
    if (this.startRetryTimer !== undefined) return;
    while (this.buffer.length > 0 && this.limiter.available > 0) {
      const taken = this.limiter.acquire(this.buffer.length);
      const batch = this.buffer.splice(0, taken);
      this.track(this.runBatch(batch, this.releaseSlot));
    }
  }

  /**
   * Runs claimed jobs to a verdict and returns their outcomes (never rejects). `onJobDone` is called
   * once per job as soon as its slot may be reused (before its storage write completes).
   */
  async runBatch(
    batch: readonly ClaimedJob[],
    onJobDone: () => void = () => undefined,
  ): Promise<JobOutcome[]> {
    const outcomes: JobOutcome[] = [];
    const emit: EmitOutcome = (outcome, job) => {
      outcomes.push(outcome);
      this.emitOutcome(outcome, job);
    };
    const toStart: StartItem[] = [];
    const toRelease = new Map<number, ClaimedJob[]>();
    const settled: Array<Promise<void>> = [];

    for (const claimed of batch) {
      // drain() hands rows in directly: make sure the heartbeat covers them too.
      this.owned.add(claimed.lease);
      const verdict = triage(claimed.job, this.triageView);
      switch (verdict.kind) {
        case 'no-handler':
          settled.push(this.noHandler(claimed, emit).then(onJobDone));
          break;
        case 'held':
          pushTo(toRelease, 0, claimed);
          break;
        case 'circuit-open':
          pushTo(toRelease, verdict.delayMs, claimed);
          break;
        case 'circuit-expired':
          settled.push(this.circuitExpired(claimed, emit).then(onJobDone));
          break;
        case 'run':
          toStart.push({ claimed, handler: verdict.handler, probe: verdict.probe });
      }
    }

    for (const [delayMs, jobs] of toRelease) {
      settled.push(this.finaliser.release(jobs, delayMs, emit).then(() => jobs.forEach(onJobDone)));
    }

    if (toStart.length > 0) {
      settled.push(this.start(toStart, emit, onJobDone));
    }
    await Promise.all(settled);
    return outcomes;
  }

  /**
   * Hands the waiting rows of paused or retired queues back to Pending: buffered rows released,
   * rows started ahead unstarted (their attempt refunded: their handler never ran).
   */
  async releaseHeld(): Promise<number> {
    const isHeld = ({ job }: ClaimedJob) => this.deps.controls.isHeld(job.queue);
    const held = this.buffer.filter(isHeld);
    this.buffer = this.buffer.filter((c) => !isHeld(c));
    const heldAhead = this.ahead.take(isHeld);
    await this.handBack(held, heldAhead);
    return held.length + heldAhead.length;
  }

  /**
   * Aborts running jobs whose cancellation was requested, and moves rows started ahead for those
   * jobs to the DLQ as Cancelled without running them; returns how many runs it stopped.
   */
  cancel(ids: Iterable<string>): number {
    // A cancel names a job, so it reaches every run of that id here; a stale run among them is
    // refused by the storage anyway when it tries to finalise.
    const wanted = new Set(ids);
    let count = 0;
    for (const { id, execution } of this.running.values()) {
      if (wanted.has(id) && !execution.settled) {
        execution.abort('cancelled');
        count++;
      }
    }
    for (const claimed of this.ahead.take(({ job }) => wanted.has(job.id))) {
      this.track(this.finaliser.cancelledBeforeRun(claimed, this.emit));
      count++;
    }
    return count;
  }

  /** Aborts every running job's signal for `cause`. */
  abortAll(cause: JobAbortCause): number {
    for (const { execution } of this.running.values()) execution.abort(cause);
    return this.running.size;
  }

  // ------------------------------------------------------------------ shutdown steps

  /** Step 1 of shutdown: start nothing more. */
  close(): void {
    this.closing = true;
    if (this.startRetryTimer !== undefined) clearTimeout(this.startRetryTimer);
    this.startRetryTimer = undefined;
  }

  /**
   * Step 2: hands every waiting row back to Pending: buffered rows released, rows started ahead
   * unstarted with their attempt refunded (none of them ran).
   */
  async releaseBuffered(): Promise<number> {
    const buffered = this.buffer.splice(0);
    const ahead = this.ahead.takeAll();
    await this.handBack(buffered, ahead);
    return buffered.length + ahead.length;
  }

  /** Buffered rows released and rows started ahead unstarted, each group in one write. */
  private async handBack(buffered: ClaimedJob[], ahead: ClaimedJob[]): Promise<void> {
    const { emit } = this;
    await Promise.all([
      buffered.length > 0 ? this.finaliser.release(buffered, 0, emit) : undefined,
      ahead.length > 0 ? this.finaliser.release(ahead, 0, emit, true) : undefined,
    ]);
  }

  /** Waits until every dispatched job has been finalised, or `deadline` (epoch ms) passes. True when idle. */
  async waitIdle(deadline: number): Promise<boolean> {
    while (this.tasks > 0) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, remaining);
      });
      const idle = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      await Promise.race([idle, timeout]);
      clearTimeout(timer);
    }
    return true;
  }

  /**
   * End of the grace period: gives up on handlers still running. Nothing is written for them —
   * their rows stay Processing and, once the heartbeat stops, the rescue loop of any process moves
   * them to the DLQ as zombies (or back to Pending where the queue has `RetryZombies`).
   */
  abandonRunning(): string[] {
    this.finaliser.abandon();
    const ids = this.runningIds();
    for (const { execution } of this.running.values()) execution.abandon();
    return ids;
  }

  // ------------------------------------------------------------------ internals

  /**
   * Enters a row a claim started ahead into the slot just taken for it. Its start is written
   * already, so a run goes straight to its handler; what triage turns away goes back to Pending
   * with its attempt refunded (no user code ran). A row that waited longer than
   * {@link renewAfterMs} (this process stalled, or its handlers held every slot that long) has its
   * lease renewed first, since a rescue may have taken it meanwhile; if it did, the row is dropped
   * unrun and nothing is written.
   */
  private enterAhead(claimed: ClaimedJob, fresh: boolean, onJobDone: () => void): Promise<void> {
    if (!fresh) return this.enterRenewed(claimed, onJobDone);
    // The common case, a row entered soon after its claim, goes to its run with no async step of
    // its own (no promise that only forwards the run's).
    try {
      return this.enterOwned(claimed, onJobDone);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** {@link enterAhead} of a row that waited too long: its lease renewed first. */
  private async enterRenewed(claimed: ClaimedJob, onJobDone: () => void): Promise<void> {
    if (!(await this.stillOwned(claimed, this.emit))) {
      onJobDone();
      return;
    }
    return this.enterOwned(claimed, onJobDone);
  }

  /** A row started ahead and still owned: run it, unless triage turns it away. */
  private enterOwned(claimed: ClaimedJob, onJobDone: () => void): Promise<void> {
    const verdict = triage(claimed.job, this.triageView);
    if (verdict.kind === 'run') {
      return this.execute(claimed, verdict.handler, verdict.probe, this.emit, onJobDone);
    }
    return this.turnAway(claimed, verdict, onJobDone);
  }

  /** A row started ahead that triage turned away: DLQ, or back to Pending with its attempt refunded. */
  private async turnAway(
    claimed: ClaimedJob,
    verdict: Exclude<Triage, { kind: 'run' }>,
    onJobDone: () => void,
  ): Promise<void> {
    const { emit } = this;
    switch (verdict.kind) {
      case 'no-handler':
        await this.noHandler(claimed, emit);
        break;
      case 'circuit-expired':
        await this.circuitExpired(claimed, emit);
        break;
      case 'held':
      case 'circuit-open': {
        // The others of its queue (held) or its type (circuit) waiting ahead go back with it.
        const key = circuitKey(claimed.job);
        const same = this.ahead.take(({ job }) =>
          verdict.kind === 'held' ? job.queue === claimed.job.queue : circuitKey(job) === key,
        );
        onJobDone();
        const delayMs = verdict.kind === 'held' ? 0 : verdict.delayMs;
        await this.finaliser.release([claimed, ...same], delayMs, emit, true);
        return;
      }
    }
    onJobDone();
  }

  /**
   * Renews the lease of a row started ahead that waited too long to trust: true when it is still
   * this process's (and now safe for another zombie timeout). A lost row is a conflict, dropped
   * without a write; a row whose cancellation was requested meanwhile goes to the DLQ unrun. When
   * the renewal itself fails, the row is given up to the rescue loop (it never ran).
   */
  private async stillOwned(claimed: ClaimedJob, emit: EmitOutcome): Promise<boolean> {
    const { job, lease } = claimed;
    let touched: number;
    let cancelRequested: boolean;
    try {
      const result = await this.deps.storage.keepAlive(this.deps.workerId, [lease]);
      touched = result.touched;
      cancelRequested = result.cancelRequested.includes(job.id);
    } catch (error) {
      const message = toError(error).message;
      logEvent(
        this.deps.logger,
        'TransitionWriteFailed',
        `Renewing job ${job.id} before its handler failed: ${message}. The job is left to the ` +
          `rescue loop; its handler did not run.`,
        { operation: 'keepAlive', jobId: job.id, attempts: 1, error: message },
      );
      // Whether it is still ours is unknown: stop renewing it and never run it.
      this.owned.delete(lease);
      emit(runOutcome(claimed, 'released', { applied: false, error: message }), job);
      return false;
    }
    if (touched > 0 && cancelRequested) {
      await this.finaliser.cancelledBeforeRun(claimed, emit);
      return false;
    }
    if (touched > 0) return true;
    this.owned.delete(lease);
    this.conflictCount++;
    this.metrics.conflict(job, 'started');
    logEvent(
      this.deps.logger,
      'StateTransitionConflict',
      `Job ${job.id} was not run: it was started ahead and its lease no longer matches ` +
        `(state transition conflict)`,
      { operation: 'keepAlive', jobId: job.id },
    );
    emit(
      runOutcome(claimed, 'released', { applied: false, error: 'lease lost before start' }),
      job,
    );
    return false;
  }

  /**
   * How long a row started ahead may wait before its lease must be renewed before it runs: half the
   * zombie timeout of its queue. A rescue takes a row only once its heartbeat, written by the
   * database after the claim was sent, is a zombie timeout old; half leaves room for clocks that
   * run at slightly different rates.
   */
  private renewAfterMs(queue: string): number {
    const seconds = this.deps.controls.get(queue)?.zombieTimeoutSeconds;
    const timeoutMs =
      seconds != null && seconds > 0 ? seconds * 1_000 : this.deps.options.rescue.zombieTimeoutMs;
    return timeoutMs / 2;
  }

  /** A claimed job whose circuit stayed open past its age limit: DLQ `CircuitBreakerOpen`. */
  private circuitExpired(claimed: ClaimedJob, emit: EmitOutcome): Promise<void> {
    return this.finaliser.dlq(
      claimed,
      FailureReason.CircuitBreakerOpen,
      `Circuit of ${circuitKey(claimed.job)} still open when the job reached retry.maxJobAgeMs`,
      emit,
    );
  }

  /** A claimed job no handler of this process runs: straight to the DLQ as `NoHandler`. */
  private noHandler(claimed: ClaimedJob, emit: EmitOutcome): Promise<void> {
    const { job } = claimed;
    return this.finaliser.dlq(
      claimed,
      FailureReason.NoHandler,
      `No handler for ${job.queue}/${job.type} in worker ${this.deps.workerId}`,
      emit,
    );
  }

  private emitOutcome(outcome: JobOutcome, job: HotJob): void {
    this.metrics.outcome(outcome);
    try {
      this.deps.onOutcome?.(outcome);
    } catch (error) {
      const message = toError(error).message;
      logEvent(this.deps.logger, 'OutcomeListenerFailed', `Outcome listener threw: ${message}`, {
        error: message,
      });
    }
    const events = this.deps.events;
    // Nothing is built for an application that does not listen: the hot path pays one check.
    if (events?.listening && outcome.applied === true) {
      for (const event of outcomeEvents(outcome, job, new Date(this.clock.now()))) {
        events.emit(event);
      }
    }
  }

  /** Counts `task` until it settles, for {@link waitIdle} (a count: no set entry or closure per job). */
  private track(task: Promise<unknown>): void {
    this.tasks++;
    task.then(this.untrack, this.untrackFailed);
  }

  /**
   * Starts buffered runs with one batched `markAsProcessing`, then runs each the storage started;
   * those it refused, or that shutdown overtook, never reach their handler.
   */
  private async start(items: StartItem[], emit: EmitOutcome, onJobDone: () => void): Promise<void> {
    // The ids a start returns name runs unambiguously: the buffer never holds two runs of one id
    // (accept() drops a superseded buffered run), and only buffered runs are started.
    let started: Set<string>;
    try {
      started = new Set(
        await this.deps.storage.markAsProcessing(items.map((i) => i.claimed.lease)),
      );
      this.startRecovered();
    } catch (error) {
      this.startFailed(items, error, onJobDone);
      return;
    }
    const runs: Array<Promise<void>> = [];
    for (const { claimed, handler, probe } of items) {
      if (!started.has(claimed.job.id)) this.lostBeforeStart(claimed, emit, onJobDone);
      else if (this.closing) runs.push(this.releaseStarted(claimed, emit, onJobDone));
      else runs.push(this.execute(claimed, handler, probe, emit, onJobDone));
    }
    await Promise.all(runs);
  }

  /** A start succeeded: logs the recovery when starts had been failing. */
  private startRecovered(): void {
    if (this.startFailures === 0) return;
    logEvent(
      this.deps.logger,
      'JobStartRecovered',
      `Starting jobs recovered after ${this.startFailures} failed attempt(s)`,
      { failures: this.startFailures },
    );
    this.startFailures = 0;
  }

  /**
   * A start failed: nothing ran and the rows are still Fetched and ours, so they go back to the
   * front of the buffer and are tried again after a backoff. Only the first failure is logged.
   */
  private startFailed(items: StartItem[], error: unknown, onJobDone: () => void): void {
    this.startFailures++;
    if (this.startFailures === 1) {
      const message = toError(error).message;
      logEvent(
        this.deps.logger,
        'JobStartFailed',
        `markAsProcessing failed for ${items.length} job(s): ${message}. They stay buffered ` +
          `and are retried with backoff; further failures are counted, not logged.`,
        { count: items.length, error: message },
      );
    }
    for (const item of items) this.deps.breakers.releaseProbe(circuitKey(item.claimed.job));
    this.buffer.unshift(...items.map((i) => i.claimed));
    this.deferPump();
    items.forEach(onJobDone);
  }

  /**
   * The start of `claimed` changed no row: it was cancelled, rescued or re-claimed meanwhile. Its
   * handler must not run; the run is dropped as a state transition conflict.
   */
  private lostBeforeStart(claimed: ClaimedJob, emit: EmitOutcome, onJobDone: () => void): void {
    const { job } = claimed;
    this.conflictCount++;
    this.metrics.conflict(job, 'started');
    this.owned.delete(claimed.lease);
    this.deps.breakers.releaseProbe(circuitKey(job));
    logEvent(
      this.deps.logger,
      'StateTransitionConflict',
      `Job ${job.id} was not started: its lease no longer matches (state transition conflict)`,
      { operation: 'markAsProcessing', jobId: job.id },
    );
    emit(
      runOutcome(claimed, 'released', { applied: false, error: 'lease lost before start' }),
      job,
    );
    onJobDone();
  }

  /**
   * Shutdown began while the start of `claimed` was in flight: it goes back to Pending without
   * running user code, its attempt kept.
   */
  private releaseStarted(
    claimed: ClaimedJob,
    emit: EmitOutcome,
    onJobDone: () => void,
  ): Promise<void> {
    this.deps.breakers.releaseProbe(circuitKey(claimed.job));
    onJobDone();
    return this.finaliser.retry(
      claimed,
      { delayMs: 0, error: STORED_TEXT.shutdownBeforeStart, released: true },
      emit,
    );
  }

  /** Runs `claimed` through the executor, then hands its result to the finaliser. */
  private async execute(
    claimed: ClaimedJob,
    handler: HandlerDefinition,
    probe: boolean,
    emit: EmitOutcome,
    onJobDone: () => void,
  ): Promise<void> {
    const { job, lease } = claimed;
    const events = this.deps.events;
    const execution = this.launch(claimed, handler);
    if (events?.hasListeners('started')) {
      events.emit(startedEvent(job, execution.attempt, new Date(this.clock.now())));
    }
    this.metrics.runStarted(job, this.clock.now());
    this.ahead.noteEntered();
    this.running.set(lease, { id: job.id, execution });
    let result: RunResult;
    try {
      result = await execution.result;
    } finally {
      this.running.delete(lease);
      this.metrics.runEnded(job.queue);
      onJobDone();
    }
    this.finalising++;
    try {
      await this.finaliser.finalise(
        claimed,
        {
          result,
          attempt: execution.attempt,
          probe,
          maxAttempts: handler.maxAttempts,
          backoff: handler.backoff,
        },
        emit,
      );
    } finally {
      this.finalising--;
      // The write is done: the run no longer counts as unwritten, so the fetcher may claim again.
      this.deps.onCapacity?.();
    }
  }

  /**
   * Starts the handler of `claimed` in the executor, under the execution timeout that applies to
   * it (the handler's, its queue's, else the default), with its progress writer.
   */
  private launch(claimed: ClaimedJob, handler: HandlerDefinition): Execution {
    const { job, lease } = claimed;
    const events = this.deps.events;
    const timeoutMs =
      handler.timeoutMs ??
      this.deps.controls.executionTimeoutMs(job.queue) ??
      this.deps.options.execution.timeoutMs;
    const execution = this.deps.executor.start({
      job,
      lease,
      handler,
      timeoutMs,
      // Each statement of the run is bounded by what the whole run may take (PostgreSQL).
      openTransaction: handler.transactional
        ? () => this.deps.storage.beginHandlerTransaction(statementTimeout(timeoutMs))
        : undefined,
      reportProgress: async (percent, note) => {
        if (!Number.isFinite(percent)) return;
        const clamped = Math.min(100, Math.max(0, percent));
        job.progress = clamped;
        job.progressNote = note ?? null;
        const rows = await this.deps.storage.reportProgress(lease, clamped, note ?? null);
        if (rows > 0 && events?.hasListeners('progress')) {
          events.emit(progressEvent(job, execution.attempt, clamped, note));
        }
      },
    });
    return execution;
  }

  /**
   * A claim that returns a job this process still holds waiting (buffered, or started ahead) under
   * another lease proves that run stale (the row now carries the new lease): drop it without a
   * write, as a state transition conflict, so nothing here holds two runs of one id.
   */
  private dropSuperseded(jobs: readonly HotJob[], leaseId: string): void {
    if (this.waitingCount === 0) return;
    const claimed = new Set(jobs.map((j) => j.id));
    const stale = (c: ClaimedJob) => claimed.has(c.job.id) && c.lease.leaseId !== leaseId;
    const dropped = [...this.buffer.filter(stale), ...this.ahead.take(stale)];
    if (dropped.length === 0) return;
    this.buffer = this.buffer.filter((c) => !stale(c));
    for (const buffered of dropped) {
      this.conflictCount++;
      this.metrics.conflict(buffered.job, 'released');
      this.owned.delete(buffered.lease);
      this.emitOutcome(
        runOutcome(buffered, 'released', {
          applied: false,
          error: 'superseded by a newer claim of the same job',
        }),
        buffered.job,
      );
    }
  }

  private deferPump(): void {
    const wait = Math.min(START_RETRY_MS.max, START_RETRY_MS.base * 2 ** (this.startFailures - 1));
    if (this.startRetryTimer !== undefined || this.closing) return;
    this.startRetryTimer = setTimeout(() => {
      this.startRetryTimer = undefined;
      this.pump();
    }, wait);
    this.startRetryTimer.unref?.();
  }
}

/** A run's execution timeout as a statement timeout: none for a run without one. */
function statementTimeout(timeoutMs: number): number | undefined {
  return Number.isFinite(timeoutMs) && timeoutMs > 0
    ? Math.min(Math.ceil(timeoutMs), MAX_TIMER_MS)
    : undefined;
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
