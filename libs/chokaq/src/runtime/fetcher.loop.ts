import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { newLeaseId } from '../common/uuid';
import type { HandlerLookup } from '../interfaces/handler.interface';
import type { ClaimedJobs, HandledJobs } from '../interfaces/job.interface';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import type { JobStore } from '../storage/job-storage';
import { MAX_CLAIM } from '../validation/limits';
import type { JobProcessor } from './job-processor';
import { IDLE_TICK, Loop, type TickResult } from './loop';
import type { QueueControls } from './queue-controls';

/**
 * Shortest wait before a claim is retried on the guess that a rate limit held it back (a storage
 * that does not report the wait), so that a limit of many starts per millisecond cannot spin.
 */
export const MIN_RATE_RETRY_MS = 20;

/** What the fetcher is built from. */
export interface FetcherDeps {
  storage: JobStore;
  handlers: HandlerLookup;
  options: ResolvedChokaQOptions;
  workerId: string;
  processor: JobProcessor;
  controls: QueueControls;
  logger: ChokaQLogger;
  /**
   * Most finished runs that may wait for their write (archive, retry, DLQ) before the fetcher stops
   * claiming: the back-pressure that keeps a slow database from piling up completions.
   */
  maxUnwritten: number;
}

/**
 * Claims work (SPEC §4 "Fetcher"). Each cycle: refresh the queue controls when they are older than
 * the poll interval (one small read) and release buffered rows of queues paused meanwhile; then
 * claim. When concurrency slots are free and nothing waits in the buffer, the claim takes one row
 * per free slot and starts them in the same statement (no `markAsProcessing` round trip). Where the
 * storage starts ahead (`worker.startAhead`, PostgreSQL) and no handled queue has a budget or a
 * rate limit, the claim also starts the rows the processor wants waiting ahead (about two round
 * trips of work) and no Fetched buffer is used; otherwise, with every slot busy, it fills the
 * buffer with `min(batchSize, free buffer)` Fetched rows. A full claim means more may
 * be due, so the next cycle runs at once; a claim cut short by a queue's rate limit runs the next
 * cycle when the limit frees up (if sooner than the poll interval); otherwise it sleeps
 * `pollIntervalMs` unless nudged (same-process enqueue, NOTIFY, freed capacity).
 */
export class FetcherLoop {
  private readonly loop: Loop;
  /** The last claim was capped (full batch or full buffer): freed capacity should fetch at once. */
  private mayHaveMore = false;
  private claimed = 0;

  constructor(private readonly deps: FetcherDeps) {
    this.loop = new Loop({
      name: 'ChokaQ fetcher',
      logger: deps.logger,
      tick: () => this.tick(),
      intervalMs: () => deps.options.worker.pollIntervalMs,
      errorBackoff: { baseMs: Math.max(50, deps.options.worker.pollIntervalMs), maxMs: 30_000 },
      // A running worker keeps its process alive (an application context with no HTTP server
      // would otherwise exit at once); stop() clears the timer and lets the process exit.
      keepAlive: true,
    });
  }

  /** Rows claimed over the loop's life. */
  get claimedCount(): number {
    return this.claimed;
  }

  /** The underlying loop (for health and tests). */
  get state(): Loop {
    return this.loop;
  }

  start(): void {
    this.loop.start();
  }

  /** Claim now (an enqueue happened, or a notification arrived). */
  nudge(): void {
    this.loop.nudge();
  }

  /** Capacity was freed: claim now only if the last claim suggested more rows were due. */
  onCapacity(): void {
    if (this.mayHaveMore) this.loop.nudge();
  }

  /** Stops claiming; resolves once a claim in flight has landed in the buffer. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /**
   * One cycle. Returns {@link IDLE_TICK} when it claimed nothing because there was no room or no
   * handler: such a cycle did not reach the database, so it must not end an outage streak.
   */
  private async tick(): Promise<TickResult> {
    const { storage, options, processor, controls, handlers, workerId } = this.deps;
    if (await controls.refreshIfOlderThan(options.worker.pollIntervalMs)) {
      await processor.releaseHeld();
    }
    // Back-pressure: while writes lag, finished runs wait unwritten; past the bound, claim nothing.
    const unwrittenRoom = this.deps.maxUnwritten - processor.unwrittenCount;
    const free = options.worker.prefetch - processor.waitingCount;
    if (unwrittenRoom <= 0) {
      this.mayHaveMore = true;
      return IDLE_TICK;
    }
    const handled = handlers.handled();
    if (handled.queues.length === 0 && handled.types.length === 0) return IDLE_TICK;
    // Rows started now become unwritten completions soon: they fit in the same bound.
    const room = Math.min(unwrittenRoom, MAX_CLAIM);
    const reserved = processor.reserveStartSlots(room);
    const budgetedQueues = controls.budgetedQueues();
    // Starting ahead replaces the buffer of Fetched rows: rows started ahead wait here for a slot,
    // so they count as waiting (prefetch), and no claim fills the buffer meanwhile.
    const startsAhead = processor.startsAhead(handlesAny(handled, budgetedQueues));
    const ahead = startsAhead
      ? processor.aheadRoom(reserved, Math.min(room - reserved, Math.max(0, free)))
      : 0;
    const start = reserved + ahead;
    if (start === 0 && (startsAhead || free <= 0)) {
      this.mayHaveMore = true;
      return IDLE_TICK;
    }
    const limit = start > 0 ? start : Math.min(options.worker.batchSize, free);
    const leaseId = newLeaseId();
    const sentAt = processor.now();
    let jobs: ClaimedJobs = [];
    try {
      jobs = await storage.fetchNextBatch({
        workerId,
        leaseId,
        limit,
        handled,
        start,
        budgetedQueues,
        ...(ahead > 0 ? { ahead: true } : {}),
      });
      processor.noteClaim(sentAt);
    } finally {
      // Started rows keep their reserved slot or wait for one; the rest goes back (all of it if
      // the claim failed).
      processor.accept(jobs, { workerId, leaseId }, reserved, sentAt);
    }
    this.claimed += jobs.length;
    this.mayHaveMore = jobs.length >= limit;
    // Full claim: more is probably due, claim again at once if there is room. With rows started
    // ahead, the processor asks again (onCapacity) once they run low.
    if (this.mayHaveMore && ahead === 0 && processor.waitingCount < options.worker.prefetch) {
      return 0;
    }
    return this.rateLimitedDelay(jobs, handled);
  }

  /**
   * After a short claim: when a rate limit held rows back, claim again when it frees up rather than
   * a whole poll interval later. The claim says when (`rateLimitWaitMs`, PostgreSQL and SQLite);
   * a storage that does not say (SQL Server's one-batch claim returns rows only) is asked again
   * after the shortest emission interval (`perMs / max`) of the handled rate-limited queues, at
   * least {@link MIN_RATE_RETRY_MS}. Undefined: the poll interval.
   */
  private rateLimitedDelay(jobs: ClaimedJobs, handled: HandledJobs): number | undefined {
    const poll = this.deps.options.worker.pollIntervalMs;
    if (jobs.rateLimitWaitMs !== undefined) {
      return jobs.rateLimitWaitMs < poll ? jobs.rateLimitWaitMs : undefined;
    }
    if (this.deps.storage.reportsRateLimitWait === true) return undefined;
    const queues = [...handled.queues, ...handled.types.map((t) => t.queue)];
    const interval = this.deps.controls.shortestRateInterval(queues);
    if (interval === undefined) return undefined;
    const delay = Math.max(MIN_RATE_RETRY_MS, Math.ceil(interval));
    return delay < poll ? delay : undefined;
  }
}

/** True when some queue `handled` covers is in `queues`. */
function handlesAny(handled: HandledJobs, queues: readonly string[]): boolean {
  if (queues.length === 0) return false;
  const listed = new Set(queues);
  return (
    handled.queues.some((q) => listed.has(q)) || handled.types.some((t) => listed.has(t.queue))
  );
}
