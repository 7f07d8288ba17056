/**
 * The database clock as this process estimates it. Every age the runtime decides on (a job's age
 * against `retry.maxJobAgeMs`) is measured from a database timestamp (`EnqueuedAtUtc`), so it must
 * be measured against the database's now, not the host's: a host clock that is off by minutes
 * would otherwise retry jobs past their lifetime, or give them up early.
 *
 * No query is spent on it: a claimed row carries `LastUpdatedUtc` = the database's now at the
 * claim, so each claim re-estimates the offset for free. Until the first claim the offset is 0.
 */
export class DbClock {
  private offsetMs = 0;

  constructor(private readonly hostNow: () => number = Date.now) {}

  /**
   * Re-estimates the offset from a claim's rows, called as they arrive: the newest row's
   * `LastUpdatedUtc` is the database time of (about) this moment. The claim's round trip is not
   * subtracted, so the estimate runs behind by at most that: fine for ages measured in minutes and
   * hours. A claim that returned no row, or a row without a usable timestamp, keeps the last
   * estimate.
   */
  observe(rows: readonly { lastUpdatedUtc?: Date | null }[]): void {
    const newest = rows[rows.length - 1]?.lastUpdatedUtc?.getTime();
    if (newest !== undefined && Number.isFinite(newest)) this.offsetMs = newest - this.hostNow();
  }

  /** The database's now as estimated, in epoch ms. */
  now(): number {
    return this.hostNow() + this.offsetMs;
  }

  /** Milliseconds from `since` (a database timestamp) to the database's now; never negative. */
  ageMs(since: Date): number {
    return Math.max(0, this.now() - since.getTime());
  }
}
