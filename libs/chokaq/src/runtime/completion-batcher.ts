import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { toError } from '../common/error-text';
import { logEvent } from '../common/log-events';
import { jittered } from '../common/jitter';
import type { CompletedJob, JobLease, RunRef } from '../interfaces/job.interface';
import type { JobStore } from '../storage/job-storage';
import { runAfter, type ScheduledCall } from './run-after';

/** Tuning of the completion batcher (internal; the defaults suit every dialect). */
export interface CompletionBatcherOptions {
  /**
   * Flush as soon as this many completions wait. Default 500: below 25,000 completions a second
   * the 20 ms delay decides, so a write carries what 20 ms of runs produced, and at 40,000 a
   * second a drain writes about 2 archives per 1,000 jobs (with 200 it was 5).
   */
  maxBatch?: number;
  /**
   * Most completions one write takes. Completions that arrive while a write is in flight are
   * written together by the next one, up to this many, so a batcher that falls behind catches up
   * with fewer, larger transactions. Default 1,000.
   */
  maxWrite?: number;
  /** Flush at most this long after the first completion of a batch. Default 20 ms. */
  flushDelayMs?: number;
  /** Backoff of a failed flush: first wait, and cap. Default 200 ms … 5 s. */
  retryBaseMs?: number;
  retryMaxMs?: number;
}

interface Waiting {
  item: CompletedJob;
  resolve: (archived: boolean) => void;
}

/**
 * Batches successful completions into one `archiveSucceeded` call (one short transaction for many
 * jobs), flushed at `maxBatch` items or `flushDelayMs` after the first, whichever comes first.
 *
 * Until a completion is written its row is still Processing and owned by this worker, so the
 * heartbeat must keep covering it, or a slow flush during an outage would turn finished jobs into
 * zombies: the processor keeps owning a run's lease until {@link add} resolves. Writes are
 * serialised (one in flight) so a retry never races a newer flush. A failed flush keeps the
 * items and retries with backoff, logging the outage once.
 */
export class CompletionBatcher {
  private queue: Waiting[] = [];
  private inFlight: Waiting[] = [];
  private writing: Promise<void> | undefined;
  private scheduled: ScheduledCall | undefined;
  private failures = 0;
  private refused = 0;
  private readonly maxBatch: number;
  private readonly maxWrite: number;
  private readonly flushDelayMs: number;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;

  constructor(
    private readonly storage: Pick<JobStore, 'archiveSucceeded'>,
    private readonly logger: ChokaQLogger,
    options: CompletionBatcherOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 500;
    this.maxWrite = Math.max(this.maxBatch, options.maxWrite ?? 1_000);
    this.flushDelayMs = options.flushDelayMs ?? 20;
    this.retryBaseMs = options.retryBaseMs ?? 200;
    this.retryMaxMs = options.retryMaxMs ?? 5_000;
  }

  /** Most completions one write takes (`maxWrite`). */
  get writeLimit(): number {
    return this.maxWrite;
  }

  /** Completions not yet written (queued or being written). */
  get size(): number {
    return this.queue.length + this.inFlight.length;
  }

  /** Completions the storage refused (lease lost: cancelled, rescued or resurrected meanwhile). */
  get refusedCount(): number {
    return this.refused;
  }

  /** The leases of completions not yet written (diagnostics and tests). */
  pendingLeases(): JobLease[] {
    return [...this.inFlight, ...this.queue].map(({ item }) => ({
      id: item.id,
      workerId: item.workerId,
      leaseId: item.leaseId,
    }));
  }

  /** Queues a completion; resolves true once archived, false when the storage refused it. */
  add(item: CompletedJob): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      this.queue.push({ item, resolve });
      this.arm();
    });
  }

  /**
   * Writes everything queued now and waits for it. Rejects with the storage error when a write
   * fails (the items stay queued and a retry is scheduled).
   */
  async flush(): Promise<void> {
    this.clearTimer();
    do {
      await this.writeNext();
    } while (this.queue.length > 0);
  }

  /**
   * Final flush at shutdown: retries until `deadline` (epoch ms). What still is not written then
   * resolves `false` and is left to the rescue loop (its row becomes a zombie) — logged once.
   */
  async close(deadline: number): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.flush();
        break;
      } catch (error) {
        const wait = Math.min(this.retryMaxMs, this.retryBaseMs * 2 ** attempt);
        if (Date.now() + wait >= deadline) {
          const message = toError(error).message;
          logEvent(
            this.logger,
            'CompletionsUnwritten',
            `Could not write ${this.size} completion(s) before shutdown: ${message}. ` +
              `Their rows stay Processing and the rescue loop will treat them as zombies.`,
            { count: this.size, error: message },
          );
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
    this.clearTimer();
    for (const waiting of this.queue.splice(0)) waiting.resolve(false);
  }

  /**
   * Sets the trigger of what is queued: a full batch is written on the next turn of the event loop,
   * a partial one `flushDelayMs` after its first completion (a timer already set keeps its time).
   */
  private arm(): void {
    if (this.queue.length === 0 || this.scheduled?.delayMs === 0) return;
    if (this.queue.length >= this.maxBatch) this.schedule(0);
    else if (this.scheduled === undefined) this.schedule(this.flushDelayMs);
  }

  /** Flushes after `delayMs`; 0 (a full batch) on the next turn of the event loop. */
  private schedule(delayMs: number): void {
    this.clearTimer();
    this.scheduled = runAfter(delayMs, () => {
      this.scheduled = undefined;
      this.flushDue().catch(() => undefined);
    });
  }

  /**
   * The write a trigger made due: one write (up to `maxWrite`), after the one in flight. What
   * arrives meanwhile waits for its own trigger rather than following at once, so a busy worker
   * writes full batches instead of whatever arrived during the previous write (at concurrency 10
   * that was a third of the round trips of a drain).
   */
  private async flushDue(): Promise<void> {
    await this.writeNext();
    this.arm();
  }

  /** Waits for the write in flight, then writes what is queued (up to `maxWrite`), if anything. */
  private async writeNext(): Promise<void> {
    while (this.writing) await this.writing.catch(() => undefined);
    if (this.queue.length === 0) return;
    this.writing = this.write();
    try {
      await this.writing;
    } finally {
      this.writing = undefined;
    }
  }

  private clearTimer(): void {
    this.scheduled?.cancel();
    this.scheduled = undefined;
  }

  private async write(): Promise<void> {
    this.inFlight = this.queue.splice(0, this.maxWrite);
    const batch = this.inFlight;
    let archived: RunRef[];
    try {
      archived = await this.storage.archiveSucceeded(batch.map((w) => w.item));
    } catch (error) {
      // Put the batch back in front, keep it covered by the heartbeat, and retry later.
      this.queue = [...batch, ...this.queue];
      this.inFlight = [];
      this.failures++;
      if (this.failures === 1) {
        const message = toError(error).message;
        logEvent(
          this.logger,
          'CompletionBatchFailed',
          `Archiving ${batch.length} completion(s) failed: ${message}. Retrying ` +
            `with backoff; further failures are counted, not logged, until it recovers.`,
          { count: batch.length, error: message },
        );
      }
      this.schedule(
        jittered(Math.min(this.retryMaxMs, this.retryBaseMs * 2 ** (this.failures - 1)), 0.2),
      );
      throw error;
    }
    if (this.failures > 0) {
      logEvent(
        this.logger,
        'CompletionBatchRecovered',
        `Archiving completions recovered after ${this.failures} failed attempt(s)`,
        { failures: this.failures },
      );
      this.failures = 0;
    }
    this.inFlight = [];
    // Decided per run, never per id: a stale run and its successor can both be in one batch, and
    // only the run whose lease still matches was archived (a job has one row, so an id is
    // archived under one lease at most).
    const done = new Map(archived.map((run) => [run.id, run.leaseId]));
    for (const waiting of batch) {
      const ok = done.get(waiting.item.id) === waiting.item.leaseId;
      if (!ok) {
        this.refused++;
        logEvent(
          this.logger,
          'StateTransitionConflict',
          `Job ${waiting.item.id} succeeded but its archive was refused: the lease no longer ` +
            `matches (cancelled, rescued or resurrected meanwhile).`,
          { operation: 'archiveSucceeded', jobId: waiting.item.id },
        );
      }
      waiting.resolve(ok);
    }
  }
}
