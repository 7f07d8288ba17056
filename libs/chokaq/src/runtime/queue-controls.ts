import type { QueueInfo } from '../interfaces/job.interface';
import type { JobStore } from '../storage/job-storage';

/**
 * This process's copy of the `Queues` rows (pause, active, budget, rate limit, execution timeout), refreshed by
 * the fetcher at most once per poll interval. The claim itself filters paused and inactive queues
 * and counts budgets in SQL; this copy is for what happens around the claim: releasing buffered
 * rows of a queue paused meanwhile, the queue-level execution timeout, and telling the claim which
 * queues have a budget (a stale copy only delays a newly budgeted queue, see `FetchRequest`).
 */
export class QueueControls {
  private queues = new Map<string, QueueInfo>();
  private budgeted: string[] = [];
  private refreshedAt = 0;

  constructor(private readonly storage: Pick<JobStore, 'getQueues'>) {}

  /** When the copy was last refreshed (epoch ms; 0 = never). */
  get lastRefresh(): number {
    return this.refreshedAt;
  }

  /** Reloads every queue row (one small read; the `Queues` table has one row per queue). */
  async refresh(): Promise<void> {
    const rows = await this.storage.getQueues();
    this.queues = new Map(rows.map((row) => [row.name, row]));
    this.budgeted = rows
      .filter(
        (q) =>
          q.maxWorkers !== null ||
          q.rateLimit !== null ||
          q.groupConcurrency !== null ||
          q.groupRateLimit !== null,
      )
      .map((q) => q.name);
    this.refreshedAt = Date.now();
  }

  /** Refreshes the copy when it is older than `maxAgeMs`; true when it did. */
  async refreshIfOlderThan(maxAgeMs: number): Promise<boolean> {
    if (Date.now() - this.refreshedAt < maxAgeMs) return false;
    await this.refresh();
    return true;
  }

  /**
   * Names of the queues with a `MaxWorkers` budget, a rate limit or group limits, as of the last
   * refresh: the queues whose claims must be serialised (and which never start ahead).
   */
  budgetedQueues(): readonly string[] {
    return this.budgeted;
  }

  /**
   * The shortest emission interval (`perMs / max`) among the rate limits of `queues`, or undefined
   * when none of them is limited (as of the last refresh).
   */
  shortestRateInterval(queues: Iterable<string>): number | undefined {
    let best: number | undefined;
    for (const queue of queues) {
      const rate = this.queues.get(queue)?.rateLimit;
      if (!rate) continue;
      const interval = rate.perMs / rate.max;
      if (best === undefined || interval < best) best = interval;
    }
    return best;
  }

  /** The row of `queue`, if known. */
  get(queue: string): QueueInfo | undefined {
    return this.queues.get(queue);
  }

  /** True when buffered jobs of `queue` must not start (paused or retired). */
  isHeld(queue: string): boolean {
    const row = this.queues.get(queue);
    return !!row && (row.isPaused || !row.isActive);
  }

  /** The queue's `ExecutionTimeoutMs` override, if set. */
  executionTimeoutMs(queue: string): number | undefined {
    const value = this.queues.get(queue)?.executionTimeoutMs;
    return value != null && value > 0 ? value : undefined;
  }
}
