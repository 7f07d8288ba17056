/**
 * The rate-limit rule every dialect's claim applies in SQL, written once here in TypeScript for the
 * one thing the stores compute outside SQL: how long until a held-back queue may start a job again.
 *
 * The scheme (library README, "Rate limits"): a queue limited to `max` starts per `perMs` keeps a
 * current window (the instant of its first start `windowStart`, of its last start `windowLast`,
 * and how many started in it, `windowCount`) and the previous window's `prevCount` and `prevLast`.
 * At an instant `t` (the database clock, the same instant the claim writes as the rows' start
 * time):
 * - the window has rolled over when there is none or `t >= windowStart + perMs`; the rolled-over
 *   window becomes the previous one (its count and last start), and the next start opens a new one;
 * - the allowance is `max` less the starts of the current window, less the previous window's while
 *   its last start is within one window of `t` (`prevLast > t - perMs`).
 *
 * Why it guarantees "at most `max` starts in any window of `perMs`": take any start at `t` and the
 * window `(t - perMs, t]`. Every earlier start lies in the current window, in the previous one, or
 * before the previous window opened; the last ones are older than `t - perMs`, because each window
 * opens at least `perMs` after the one before it. The allowance counted the current window whole,
 * and the previous window whole unless all of it is older than `t - perMs`: never less than what
 * lies in `(t - perMs, t]`. So each claim keeps every window ending at its own start within `max`,
 * and windows ending between starts hold no more than the one ending at their last start.
 *
 * What it costs: the previous window is counted whole while any of it is recent, so a queue whose
 * starts trickle in below the limit can be held back for up to one window when a window boundary
 * cuts through a run of starts; a backlog drains in bursts of `max` per window at the full rate.
 */

/** A queue's limit and window state, times as epoch milliseconds (null: none yet). */
export interface RateWindowState {
  max: number;
  perMs: number;
  windowStartMs: number | null;
  windowLastMs: number | null;
  windowCount: number | null;
  prevLastMs: number | null;
  prevCount: number | null;
}

/** How many of the queue's jobs may start at `nowMs` (the claim's rule, see above). */
export function rateAllowance(state: RateWindowState, nowMs: number): number {
  const { max, perMs } = state;
  const count = state.windowCount ?? 0;
  const recent = (last: number | null): boolean => last !== null && last > nowMs - perMs;
  const held = rolledOver(state, nowMs)
    ? recent(state.windowLastMs)
      ? count
      : 0
    : count + (recent(state.prevLastMs) ? (state.prevCount ?? 0) : 0);
  return Math.max(0, max - held);
}

/**
 * Milliseconds from `nowMs` until the queue may start a job again, or null when it may start one
 * now. With nothing starting meanwhile the allowance only grows: a full current window frees up one
 * window after its last start (it rolls over, then ages out); otherwise the previous window is what
 * holds it, until one window after the previous window's last start.
 */
export function rateWaitMs(state: RateWindowState, nowMs: number): number | null {
  if (rateAllowance(state, nowMs) > 0) return null;
  const count = state.windowCount ?? 0;
  const last =
    rolledOver(state, nowMs) || count >= state.max ? state.windowLastMs : state.prevLastMs;
  return Math.max(1, Math.ceil((last ?? nowMs) + state.perMs - nowMs));
}

/** The shortest wait among several queues' states, or undefined when none is held back. */
export function shortestRateWait(
  states: readonly RateWindowState[],
  nowMs: number,
): number | undefined {
  let best: number | undefined;
  for (const state of states) {
    const wait = rateWaitMs(state, nowMs);
    if (wait !== null && (best === undefined || wait < best)) best = wait;
  }
  return best;
}

/** A {@link RateWindowState} from a row of a dialect's rate-state read (folded column names). */
export function rateStateOf(row: Record<string, unknown>): RateWindowState {
  const n = (v: unknown): number | null =>
    v === null || v === undefined ? null : typeof v === 'number' ? v : Number(v);
  return {
    max: n(row.max)!,
    perMs: n(row.per_ms)!,
    windowStartMs: n(row.window_start_ms),
    windowLastMs: n(row.window_last_ms),
    windowCount: n(row.window_count),
    prevLastMs: n(row.prev_last_ms),
    prevCount: n(row.prev_count),
  };
}

function rolledOver(state: RateWindowState, nowMs: number): boolean {
  return state.windowStartMs === null || nowMs >= state.windowStartMs + state.perMs;
}
