import type { LoggerService } from '@nestjs/common';
import type { ResolvedChokaQOptions } from '../config/chokaq-options';
import type { HandlerLookup } from '../discovery/handler-definition';
import type { JobStorage } from '../storage/job-storage';
import { newLeaseId } from '../storage/shared/uuid';
import type { JobProcessor } from './job-processor';
import { Loop } from './loop';
import type { QueueControls } from './queue-controls';

/** What the fetcher is built from. */
export interface FetcherDeps {
  storage: JobStorage;
  handlers: HandlerLookup;
  options: ResolvedChokaQOptions;
  workerId: string;
  processor: JobProcessor;
  controls: QueueControls;
  logger: LoggerService;
}

/**
 * Fills the prefetch buffer (SPEC §4 "Fetcher"). Each cycle: refresh the queue controls (one small
 * read), release buffered rows of queues paused meanwhile, then claim `min(batchSize, free buffer)`
 * rows under a fresh lease. A full batch means more may be due, so the next cycle runs at once;
 * otherwise it sleeps `pollIntervalMs` unless nudged (same-process enqueue, NOTIFY, freed capacity).
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

  private async tick(): Promise<number | void> {
    const { storage, options, processor, controls, handlers, workerId } = this.deps;
    await controls.refresh();
    await processor.releaseHeld();
    const free = options.worker.prefetch - processor.bufferedCount - processor.unwrittenCount;
    if (free <= 0) {
      this.mayHaveMore = true;
      return;
    }
    const limit = Math.min(options.worker.batchSize, free);
    const handled = handlers.handled();
    if (handled.queues.length === 0 && handled.types.length === 0) return;
    const leaseId = newLeaseId();
    const jobs = await storage.fetchNextBatch({ workerId, leaseId, limit, handled });
    this.claimed += jobs.length;
    this.mayHaveMore = jobs.length >= limit;
    if (jobs.length > 0) processor.accept(jobs, { workerId, leaseId });
    // Full batch: more is probably due, claim again at once if the buffer has room.
    if (this.mayHaveMore && processor.bufferedCount < options.worker.prefetch) return 0;
  }
}
