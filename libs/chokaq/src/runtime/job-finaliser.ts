import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { errorText, toError } from '../common/error-text';
import { logEvent } from '../common/log-events';
import { STORED_TEXT } from '../common/stored-text';
import type { JobOutcome } from '../interfaces/job-outcome.interface';
import { FailureReason } from '../interfaces/job-status.enum';
import type { HandlerBackoff } from '../interfaces/handler.interface';
import type { DlqMove, HotJob, JobLease } from '../interfaces/job.interface';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import type { ChokaQMetrics, ConflictOutcome } from '../observability/chokaq-metrics';
import type { HandlerTransaction, JobStore } from '../storage/job-storage';
import { circuitKey, type CircuitBreakers } from './circuit-breaker';
import type { CompletionBatcher } from './completion-batcher';
import type { DbClock } from './db-clock';
import { decideFailure } from './failure-policy';
import { attemptOf, type RunResult } from './job-executor';
import { completionOf } from '../validation/validate-args';

/** A claimed row with the lease it was claimed under: one run of a job. */
export interface ClaimedJob {
  job: HotJob;
  lease: JobLease;
}

/** How a run that reached its handler ended, with what the verdict depends on. */
export interface FinishedRun {
  result: RunResult;
  /** The attempt that ran (1-based). */
  attempt: number;
  /** The run was a half-open circuit's probe: the breaker must hear how it ended. */
  probe: boolean;
  /** The handler's own `maxAttempts`, when it sets one; else `retry.maxAttempts` applies. */
  maxAttempts?: number;
  /** The handler's own retry delays, when it sets them; else the `retry` policy's apply. */
  backoff?: HandlerBackoff;
}

/** A return to Pending of a run that did not end in a verdict of its own. */
export interface RetryRequest {
  /** Wait before the job is due again, in ms (0: at once). */
  delayMs: number;
  /** The text stored as the job's last error. */
  error: string;
  /**
   * The worker, not the job, is why it goes back (shutdown): the outcome is `released`, not
   * `retried`. The attempt is kept either way; only `markAsProcessing` counts attempts.
   */
  released?: boolean;
}

/** The result of a run that ended as `K`. */
type Ended<K extends RunResult['kind']> = Extract<RunResult, { kind: K }>;

/**
 * What a verdict needs of a finished run besides the result it judges (a failed commit is judged
 * as a `failed` result, not as the `succeeded` one the run ended with).
 */
type RunVerdictFacts = Omit<FinishedRun, 'result'>;

/** Facts of a run that reached its handler, copied into its outcome. */
export interface RunFacts {
  attempt?: number;
  durationMs?: number;
}

/**
 * Where a run's outcome goes, with the claimed row it is about: the caller decides (a drain also
 * collects them; the processor turns applied ones into lifecycle events).
 */
export type EmitOutcome = (outcome: JobOutcome, job: HotJob) => void;

/** What the finaliser is built from (the processor wires it). */
export interface JobFinaliserDeps {
  storage: Pick<JobStore, 'rescheduleForRetry' | 'moveToDlq' | 'release' | 'unstart'>;
  /** Successes go through the batcher: many archives in one short transaction. */
  batcher: Pick<CompletionBatcher, 'add'>;
  breakers: Pick<CircuitBreakers, 'recordSuccess' | 'recordFailure' | 'releaseProbe'>;
  retry: ResolvedChokaQOptions['retry'];
  /** Job ages are measured on the database clock, like the `EnqueuedAtUtc` they start from. */
  clock: Pick<DbClock, 'ageMs'>;
  logger: ChokaQLogger;
  /** Where refused transitions are counted (`chokaq.jobs.state_transition_conflicts`). */
  metrics?: Pick<ChokaQMetrics, 'conflict'>;
  /**
   * The finaliser is done with a run: its write was applied, refused or given up to the rescue
   * loop, or there was none to make (abandoned at shutdown). The owner of the run's lease stops
   * owning it, so the heartbeat stops renewing it. Called once per run, before its outcome is
   * emitted, so an outcome listener never sees a settled run's lease still owned.
   */
  onSettled: (lease: JobLease) => void;
}

/** Attempts of a finalising write (on top of the storage's own transient retry). */
const FINALISE_ATTEMPTS = 3;
/** First wait between attempts of a finalising write; it doubles after each. */
const FINALISE_RETRY_BASE_MS = 250;

/**
 * Settles runs in storage (SPEC §4): turns a run's result into its verdict with the failure
 * policy, writes it (archive through the batcher, retry, DLQ, release), tells the circuit breaker
 * how the run went, counts the transitions the storage refused, and emits the run's outcome.
 *
 * It holds no run: the processor owns leases and hears through `onSettled` when a run's write is
 * over. Kept apart from the processor so every verdict can be tested against a fake storage,
 * without slots, buffers or a database.
 */
export class JobFinaliser {
  private conflictCount = 0;
  private abandoned = false;

  constructor(private readonly deps: JobFinaliserDeps) {}

  /** Transitions the storage refused (zero rows) while settling runs: SPEC `state_transition_conflicts`. */
  get conflicts(): number {
    return this.conflictCount;
  }

  /**
   * End of the shutdown grace period: a finalising write that fails from now on is not tried
   * again. The process is about to exit, and the rescue loop settles what is left unwritten.
   */
  abandon(): void {
    this.abandoned = true;
  }

  /** Writes the verdict of a run that reached its handler, then emits its outcome. Never rejects. */
  finalise(claimed: ClaimedJob, run: FinishedRun, emit: EmitOutcome): Promise<void> {
    const { result } = run;
    switch (result.kind) {
      case 'succeeded':
        return this.succeeded(claimed, result, run, emit);
      case 'timeout':
        return this.timedOut(claimed, result, run, emit);
      case 'aborted':
        return this.aborted(claimed, result, run, emit);
      case 'abandoned':
        return this.abandonedAtShutdown(claimed, result, run, emit);
      case 'failed':
        return this.failed(claimed, result, run, emit);
    }
  }

  /**
   * A run whose handler returned: archived (in its own transaction when it has one, else through
   * the batcher), then `succeeded`. A transaction that does not commit is judged as a throw.
   */
  private async succeeded(
    claimed: ClaimedJob,
    result: Ended<'succeeded'>,
    run: RunVerdictFacts,
    emit: EmitOutcome,
  ): Promise<void> {
    const { job, lease } = claimed;
    const { durationMs } = result;
    const key = circuitKey(job);
    let archived: boolean;
    if (result.transaction !== undefined) {
      const commit = await this.commit(job, lease, durationMs, result.transaction, result.result);
      if ('error' in commit) {
        // Rolled back, or the COMMIT's fate is unknown: the failure policy decides, as for a
        // throw. Had an unknown COMMIT landed, the job is archived and the policy's write
        // finds no row (a conflict), so its effects still count once.
        const failed: Ended<'failed'> = { kind: 'failed', error: commit.error, durationMs };
        return this.failed(claimed, failed, run, emit);
      }
      archived = commit.archived;
    } else {
      archived = await this.deps.batcher.add(completionOf(lease, durationMs, result.result));
    }
    this.deps.breakers.recordSuccess(key, run.probe);
    if (!archived) {
      this.conflictCount++;
      this.deps.metrics?.conflict(job, 'succeeded');
    }
    this.deps.onSettled(lease);
    const { attempt } = run;
    emit(runOutcome(claimed, 'succeeded', { attempt, durationMs, applied: archived }), job);
  }

  /** A run its execution timeout decided: a failure for the breaker, DLQ `Timeout`, `failed`. */
  private async timedOut(
    claimed: ClaimedJob,
    result: Ended<'timeout'>,
    run: RunVerdictFacts,
    emit: EmitOutcome,
  ): Promise<void> {
    this.deps.breakers.recordFailure(circuitKey(claimed.job), run.probe);
    const error = `ChokaQJobTimeoutError: job exceeded its execution timeout of ${result.timeoutMs} ms`;
    await this.deadLetter(claimed, result, run, 'failed', FailureReason.Timeout, error, emit);
  }

  /**
   * A run aborted by a cancel (DLQ `Cancelled`, `cancelled`) or by the loss of its heartbeat (DLQ
   * `HeartbeatFailure`, `failed`). Neither says anything of the type's health: a probe is released.
   */
  private async aborted(
    claimed: ClaimedJob,
    result: Ended<'aborted'>,
    run: RunVerdictFacts,
    emit: EmitOutcome,
  ): Promise<void> {
    this.deps.breakers.releaseProbe(circuitKey(claimed.job));
    const cancelled = result.cause === 'cancelled';
    const reason = cancelled ? FailureReason.Cancelled : FailureReason.HeartbeatFailure;
    const error = cancelled ? STORED_TEXT.cancelledWhileRunning : STORED_TEXT.heartbeatLost;
    const outcome = cancelled ? 'cancelled' : 'failed';
    await this.deadLetter(claimed, result, run, outcome, reason, error, emit);
  }

  /**
   * A run still going at the end of the shutdown grace period: nothing is written (the rescue loop
   * takes the row), its lease is let go and `released` reports it unapplied.
   */
  private async abandonedAtShutdown(
    claimed: ClaimedJob,
    result: Ended<'abandoned'>,
    run: RunVerdictFacts,
    emit: EmitOutcome,
  ): Promise<void> {
    const { job, lease } = claimed;
    this.deps.breakers.releaseProbe(circuitKey(job));
    this.deps.onSettled(lease);
    logEvent(
      this.deps.logger,
      'JobAbandonedAtShutdown',
      `Job ${job.id} (${job.queue}/${job.type}) was still running at the end of the shutdown ` +
        `grace period; it is left to the rescue loop.`,
      { jobId: job.id, queue: job.queue, type: job.type },
    );
    emit(
      runOutcome(claimed, 'released', {
        attempt: run.attempt,
        durationMs: result.durationMs,
        applied: false,
        error: 'abandoned at shutdown',
      }),
      job,
    );
  }

  /**
   * A run whose handler threw (or whose transaction did not commit): back to Pending at once when
   * shutdown stopped it, else what the failure policy decides (a retry, or the DLQ).
   */
  private async failed(
    claimed: ClaimedJob,
    result: Ended<'failed'>,
    run: RunVerdictFacts,
    emit: EmitOutcome,
  ): Promise<void> {
    const { job } = claimed;
    const key = circuitKey(job);
    const base = { attempt: run.attempt, durationMs: result.durationMs };
    if (result.abortedBy === 'shutdown') {
      // A cooperative stop is not the job's fault: back to Pending at once, attempt kept.
      this.deps.breakers.releaseProbe(key);
      const error = STORED_TEXT.shutdownStopped(result.error);
      await this.retry(claimed, { delayMs: 0, error, released: true }, emit, base);
      return;
    }
    const decision = decideFailure({
      error: result.error,
      attempt: run.attempt,
      maxAttempts: run.maxAttempts ?? this.deps.retry.maxAttempts,
      jobAgeMs: this.deps.clock.ageMs(job.enqueuedAtUtc),
      retry: this.deps.retry,
      backoff: run.backoff,
    });
    const text =
      decision.action === 'retry' && decision.backoffRefused !== undefined
        ? `${errorText(result.error)} [${decision.backoffRefused}]`
        : errorText(result.error);
    if (decision.action === 'dlq' && decision.reason === FailureReason.FatalError) {
      // A bad payload says nothing about the health of the type's dependency.
      this.deps.breakers.releaseProbe(key);
    } else {
      this.deps.breakers.recordFailure(key, run.probe);
    }
    if (decision.action === 'retry') {
      await this.retry(claimed, { delayMs: decision.delayMs, error: text }, emit, base);
    } else {
      await this.deadLetter(claimed, result, run, 'failed', decision.reason, text, emit);
    }
  }

  /** Moves a finished run to the DLQ for `reason`, then emits `outcome` with the move's facts. */
  private async deadLetter(
    claimed: ClaimedJob,
    result: RunResult,
    run: RunVerdictFacts,
    outcome: 'failed' | 'cancelled',
    reason: FailureReason,
    error: string,
    emit: EmitOutcome,
  ): Promise<void> {
    const { attempt } = run;
    const { durationMs } = result;
    const applied = await this.move(claimed, { reason, error, durationMs }, attempt);
    emit(
      runOutcome(claimed, outcome, { attempt, durationMs, reason, error, applied }),
      claimed.job,
    );
  }

  /**
   * Back to Pending after `request.delayMs` (`rescheduleForRetry`), then emits `retried`, or
   * `released` when the worker is the reason. Never rejects.
   */
  async retry(
    claimed: ClaimedJob,
    request: RetryRequest,
    emit: EmitOutcome,
    base: RunFacts = {},
  ): Promise<void> {
    const { delayMs, error } = request;
    const { job } = claimed;
    const rows = await this.write('rescheduleForRetry', job.id, () =>
      this.deps.storage.rescheduleForRetry(claimed.lease, delayMs, error),
    );
    const outcome = request.released ? 'released' : 'retried';
    const applied = this.applied(rows, job, 'rescheduleForRetry', outcome);
    this.deps.onSettled(claimed.lease);
    const attempt = base.attempt ?? attemptOf(job);
    // A release (shutdown) is the worker's doing, not the job's: the shutdown lines cover it.
    if (applied && !request.released) {
      const headline = firstLine(error);
      logEvent(
        this.deps.logger,
        'JobRetryScheduled',
        `Job ${job.id} (${job.queue}/${job.type}) failed attempt ${attempt}; ` +
          `retry in ${delayMs} ms: ${headline}`,
        { jobId: job.id, queue: job.queue, type: job.type, attempt, delayMs, error: headline },
      );
    }
    emit(
      runOutcome(claimed, outcome, {
        attempt: attemptOf(claimed.job),
        ...base,
        error,
        applied,
        retryDelayMs: delayMs,
      }),
      claimed.job,
    );
  }

  /** Moves a run that never reached a handler to the DLQ, then emits `failed`. Never rejects. */
  async dlq(
    claimed: ClaimedJob,
    reason: FailureReason,
    error: string,
    emit: EmitOutcome,
  ): Promise<void> {
    const applied = await this.move(claimed, { reason, error }, attemptOf(claimed.job));
    emit(runOutcome(claimed, 'failed', { reason, error, applied }), claimed.job);
  }

  /**
   * Hands runs that did not reach their handler back to Pending in one write (a paused queue, an
   * open circuit, shutdown), due again after `delayMs` (0: at once); emits `released` for each.
   * Fetched rows are released; rows a claim started ahead (`started`) are unstarted, their attempt
   * refunded, since no user code ran. Never rejects.
   */
  async release(
    jobs: readonly ClaimedJob[],
    delayMs: number,
    emit: EmitOutcome,
    started = false,
  ): Promise<void> {
    const leases = jobs.map((c) => c.lease);
    const delay = delayMs > 0 ? delayMs : undefined;
    const rows = await this.write(started ? 'unstart' : 'release', undefined, () =>
      started ? this.deps.storage.unstart(leases, delay) : this.deps.storage.release(leases, delay),
    );
    // The count says how many were refused, not which: each outcome reports the write as a whole.
    if (rows !== undefined && rows < leases.length) {
      this.conflictCount += leases.length - rows;
      this.deps.metrics?.conflict(sameJob(jobs), 'released', leases.length - rows);
    }
    for (const { job, lease } of jobs) {
      this.deps.onSettled(lease);
      emit(
        runOutcome({ job, lease }, 'released', {
          applied: rows !== undefined,
          retryDelayMs: delayMs,
          error: delayMs > 0 ? `circuit of ${circuitKey(job)} is open` : undefined,
        }),
        job,
      );
    }
  }

  /**
   * Moves a run that was started ahead and cancelled before it got a slot to the DLQ as
   * `Cancelled`, then emits `cancelled`. Its handler never ran. Never rejects.
   */
  async cancelledBeforeRun(claimed: ClaimedJob, emit: EmitOutcome): Promise<void> {
    const reason = FailureReason.Cancelled;
    const error = STORED_TEXT.cancelledBeforeRun;
    const applied = await this.move(claimed, { reason, error }, attemptOf(claimed.job));
    emit(runOutcome(claimed, 'cancelled', { reason, error, applied }), claimed.job);
  }

  /**
   * Archives a transactional handler's run inside its own transaction and commits it
   * (`HandlerTransaction.archive`): no batch, the run's writes and its move commit together.
   * `archived` is false when the lease no longer matched, so everything was rolled back.
   */
  private async commit(
    job: HotJob,
    lease: JobLease,
    durationMs: number,
    transaction: HandlerTransaction,
    result: string | undefined,
  ): Promise<{ archived: boolean } | { error: unknown }> {
    try {
      const archived = await transaction.archive(completionOf(lease, durationMs, result));
      if (!archived) {
        logEvent(
          this.deps.logger,
          'StateTransitionConflict',
          `archive of job ${job.id} changed no row: the lease no longer matches (state ` +
            `transition conflict); the handler's transaction was rolled back`,
          { operation: 'archiveInTransaction', jobId: job.id },
        );
      }
      return { archived };
    } catch (error) {
      await transaction.abandon();
      return { error: toError(error) };
    }
  }

  /** Moves the run to the DLQ; logs the move once it is applied. True when applied. */
  private async move(claimed: ClaimedJob, move: DlqMove, attempt: number): Promise<boolean> {
    const { job, lease } = claimed;
    const rows = await this.write('moveToDlq', job.id, () =>
      this.deps.storage.moveToDlq(lease, move),
    );
    this.deps.onSettled(lease);
    const refused = move.reason === FailureReason.Cancelled ? 'cancelled' : 'failed';
    const applied = this.applied(rows, job, 'moveToDlq', refused);
    if (!applied) return false;
    const where = `Job ${job.id} (${job.queue}/${job.type})`;
    if (move.reason === FailureReason.Cancelled) {
      // An operator asked for it: worth a line, not an alarm.
      logEvent(
        this.deps.logger,
        'JobCancelledWhileRunning',
        `${where} was cancelled ${move.error === STORED_TEXT.cancelledBeforeRun ? 'before its handler ran' : 'while running'} ` +
          `(attempt ${attempt}) and moved to the DLQ`,
        { jobId: job.id, queue: job.queue, type: job.type, attempt },
      );
    } else {
      const reason = FailureReason[move.reason];
      const headline = firstLine(move.error);
      logEvent(
        this.deps.logger,
        'JobDeadLettered',
        `${where} moved to the DLQ (${reason}) after attempt ${attempt}: ${headline}`,
        { jobId: job.id, queue: job.queue, type: job.type, attempt, reason, error: headline },
      );
    }
    return true;
  }

  /**
   * A finalising write with a few extra attempts on top of the storage's own transient retry. If it
   * still fails the row stays ours until the heartbeat stops covering it; then rescue decides.
   * Attempts are never spent here: the job's attempt count changes only in `markAsProcessing`.
   */
  private async write(
    name: string,
    jobId: string | undefined,
    op: () => Promise<number>,
  ): Promise<number | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await op();
      } catch (error) {
        if (attempt >= FINALISE_ATTEMPTS || this.abandoned) {
          const message = toError(error).message;
          logEvent(
            this.deps.logger,
            'TransitionWriteFailed',
            `${name}${jobId === undefined ? '' : ` of job ${jobId}`} failed ${attempt} time(s): ` +
              `${message}. The job is left to the rescue loop.`,
            { operation: name, jobId, attempts: attempt, error: message },
          );
          return undefined;
        }
        await new Promise((resolve) =>
          setTimeout(resolve, FINALISE_RETRY_BASE_MS * 2 ** (attempt - 1)).unref?.(),
        );
      }
    }
  }

  private applied(
    rows: number | undefined,
    job: HotJob,
    operation: string,
    outcome: ConflictOutcome,
  ): boolean {
    if (rows === undefined) return false;
    if (rows === 0) {
      this.conflictCount++;
      this.deps.metrics?.conflict(job, outcome);
      logEvent(
        this.deps.logger,
        'StateTransitionConflict',
        `${operation} of job ${job.id} changed no row: the lease no longer matches (state transition conflict)`,
        { operation, jobId: job.id },
      );
      return false;
    }
    return true;
  }
}

/**
 * The outcome of one run, named by `(id, leaseId)`. `attempt` defaults to the attempt the run is
 * (or would have been, had it started); `extra` fields left undefined are omitted, not set.
 */
export function runOutcome(
  { job, lease }: ClaimedJob,
  outcome: JobOutcome['outcome'],
  extra: Partial<JobOutcome> = {},
): JobOutcome {
  const result: JobOutcome = {
    id: job.id,
    leaseId: lease.leaseId,
    queue: job.queue,
    type: job.type,
    outcome,
    attempt: extra.attempt ?? attemptOf(job),
  };
  // for…in rather than Object.entries: no array of pairs per outcome (once per job).
  for (const key in extra) {
    const value = extra[key as keyof JobOutcome];
    if (value !== undefined) (result as unknown as Record<string, unknown>)[key] = value;
  }
  return result;
}

/** The `(queue, type)` every one of `jobs` has, or undefined when they differ. */
function sameJob(jobs: readonly ClaimedJob[]): { queue: string; type: string } | undefined {
  const [first] = jobs;
  if (!first) return undefined;
  const { queue, type } = first.job;
  return jobs.every(({ job }) => job.queue === queue && job.type === type)
    ? { queue, type }
    : undefined;
}

/** The first line of a stored error text (its stack follows): what a log line shows of it. */
function firstLine(text: string): string {
  const end = text.indexOf('\n');
  return end < 0 ? text : text.slice(0, end);
}
