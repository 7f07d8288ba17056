import type { ClaimedJob } from './job-finaliser';

/** A row a claim started ahead of the free slots, waiting here for one. */
interface AheadRow {
  claimed: ClaimedJob;
  /**
   * When the row's lease was last known to be this process's (monotonic ms): the moment its claim
   * was sent, or a later heartbeat that renewed every lease it was sent. A rescue needs the row's
   * heartbeat to be older than the zombie timeout on the database clock, and the database wrote that
   * heartbeat after this moment, so until a zombie timeout has passed here no rescue can have taken it.
   */
  confirmedAt: number;
}

/** Round trips of work kept started ahead: "a couple", so a refill lands before the rows run out. */
export const AHEAD_ROUND_TRIPS = 2;
/** Weight of the newest sample in the rate and round-trip averages. */
const EWMA_WEIGHT = 0.3;

/**
 * The rows of this process that a claim started ahead of its free slots (`worker.startAhead`):
 * Processing in the database with their attempt counted, not yet entered here. They are entered in
 * claim order as slots free up, with no statement, which is the point: a freed slot no longer waits
 * a claim's round trip for its next job.
 *
 * How many to keep is the target {@link target}: the jobs this process enters in
 * {@link AHEAD_ROUND_TRIPS} claim round trips at its recent rate, at most `cap`. So slow handlers
 * keep next to nothing ahead (a crash zombies what was started and not run, so ahead is only
 * worth what it saves), and a fast drain keeps enough to cover the refill's round trip.
 *
 * Plain bookkeeping: it never touches storage or timers; the processor and the fetcher drive it,
 * and its clock is passed in, so it is tested without either.
 */
export class StartedAhead {
  private rows: AheadRow[] = [];
  private rttMs = 0;
  private ratePerMs = 0;
  private enteredSinceSample = 0;
  private sampleAt: number | undefined;

  /** @param cap the most rows kept ahead (`worker.startAhead`; 0 turns starting ahead off). */
  constructor(private readonly cap: number) {}

  /** Rows waiting for a slot. */
  get size(): number {
    return this.rows.length;
  }

  /** True when starting ahead is on at all. */
  get enabled(): boolean {
    return this.cap > 0;
  }

  /** How many rows to keep ahead now: {@link AHEAD_ROUND_TRIPS} round trips at the recent rate, at most the cap. */
  target(): number {
    return Math.min(this.cap, Math.floor(this.ratePerMs * AHEAD_ROUND_TRIPS * this.rttMs));
  }

  /**
   * Rows the next claim should start beyond the slots it has reserved (`reserved`): none while
   * more than half the target is still waiting (claims come in a few large steps, not one per
   * entered row), else up to the target. A claim that found free slots always tops up.
   */
  room(reserved: number): number {
    const target = this.target();
    if (target === 0) return 0;
    if (reserved === 0 && this.rows.length > target / 2) return 0;
    return Math.max(0, target - this.rows.length);
  }

  /** Adds a claim's started rows beyond its reserved slots, in claim order. */
  push(claimed: readonly ClaimedJob[], confirmedAt: number): void {
    for (const c of claimed) this.rows.push({ claimed: c, confirmedAt });
  }

  /**
   * Takes the next row in claim order, and whether its lease is still fresh: confirmed less than
   * `safeMs(row)` ago. A stale row must be renewed before its handler may run.
   */
  shift(
    now: number,
    safeMs: (claimed: ClaimedJob) => number,
  ): { claimed: ClaimedJob; fresh: boolean } | undefined {
    const row = this.rows.shift();
    if (!row) return undefined;
    return { claimed: row.claimed, fresh: now - row.confirmedAt < safeMs(row.claimed) };
  }

  /** Removes and returns the rows `match` selects (a cancel, a paused queue), keeping the others' order. */
  take(match: (claimed: ClaimedJob) => boolean): ClaimedJob[] {
    const taken: ClaimedJob[] = [];
    this.rows = this.rows.filter((row) => {
      if (!match(row.claimed)) return true;
      taken.push(row.claimed);
      return false;
    });
    return taken;
  }

  /** Removes and returns every row (shutdown). */
  takeAll(): ClaimedJob[] {
    const all = this.rows.map((row) => row.claimed);
    this.rows = [];
    return all;
  }

  /**
   * A heartbeat sent at `sentAt` renewed every lease it carried: each row whose lease was among
   * them (`renewed`, by lease id) is confirmed as of then.
   */
  confirm(renewed: ReadonlySet<string>, sentAt: number): void {
    for (const row of this.rows) {
      if (renewed.has(row.claimed.lease.leaseId) && sentAt > row.confirmedAt)
        row.confirmedAt = sentAt;
    }
  }

  /** A run was entered (from here or straight from its claim): counts toward the recent rate. */
  noteEntered(n = 1): void {
    this.enteredSinceSample += n;
  }

  /**
   * A claim sent at `sentAt` returned at `now`: its round trip feeds the round-trip average, and the
   * runs entered since the previous claim's return the rate average.
   */
  noteClaim(sentAt: number, now: number): void {
    this.rttMs = average(this.rttMs, now - sentAt);
    if (this.sampleAt !== undefined && now > this.sampleAt) {
      this.ratePerMs = average(this.ratePerMs, this.enteredSinceSample / (now - this.sampleAt));
    }
    this.sampleAt = now;
    this.enteredSinceSample = 0;
  }
}

function average(previous: number, sample: number): number {
  return previous === 0 ? sample : previous + EWMA_WEIGHT * (sample - previous);
}
