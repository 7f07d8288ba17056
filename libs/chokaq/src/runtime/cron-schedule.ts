import type { CronTime } from 'cron';
import { newCronTime } from '../common/cron-time';

/** The longest look-back when searching for the latest missed slot (covers yearly schedules). */
const MAX_LOOKBACK_MS = 400 * 24 * 3_600_000;

/**
 * Slot times of a cron expression in an IANA time zone, computed with the `cron` package's
 * `CronTime` (the library behind `@nestjs/schedule`), which resolves wall-clock times through
 * Luxon and so stays correct across DST changes.
 */
export class CronSchedule {
  private readonly time: CronTime;

  /** Throws the `cron` package's error when the expression or the zone is invalid. */
  constructor(
    readonly expression: string,
    readonly timeZone: string = 'UTC',
  ) {
    this.time = newCronTime(expression, timeZone);
  }

  /** The first slot strictly after `after`. */
  next(after: Date): Date {
    return this.time.getNextDateFrom(after, this.timeZone).toJSDate();
  }

  /**
   * The latest slot at or before `now`, or null when there is none within ~400 days. Searches
   * backwards with a doubling window so a long outage costs a few steps, not one per missed slot.
   */
  latestAtOrBefore(now: Date): Date | null {
    const at = now.getTime();
    for (let window = 1_000; window <= MAX_LOOKBACK_MS; window *= 2) {
      let slot = this.next(new Date(at - window));
      if (slot.getTime() > at) continue;
      for (let next = this.next(slot); next.getTime() <= at; next = this.next(next)) slot = next;
      return slot;
    }
    return null;
  }
}
