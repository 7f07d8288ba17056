import {
  RateWindowState,
  rateAllowance,
  rateStateOf,
  rateWaitMs,
  shortestRateWait,
} from './rate-window';

/** `n` starts at `t`, spent as the claims' SQL spends them (after checking the allowance). */
function spend(s: RateWindowState, t: number, n: number): void {
  if (n > rateAllowance(s, t)) throw new Error(`${n} at ${t} exceeds the allowance`);
  if (s.windowStartMs === null || t >= s.windowStartMs + s.perMs) {
    s.prevCount = s.windowCount;
    s.prevLastMs = s.windowLastMs;
    s.windowStartMs = t;
    s.windowCount = n;
  } else {
    s.windowCount = (s.windowCount ?? 0) + n;
  }
  s.windowLastMs = t;
}

/** The state after `starts` (time, count), from none. */
function replay(max: number, perMs: number, starts: ReadonlyArray<[number, number]>) {
  const s: RateWindowState = {
    max,
    perMs,
    windowStartMs: null,
    windowLastMs: null,
    windowCount: null,
    prevLastMs: null,
    prevCount: null,
  };
  for (const [t, n] of starts) spend(s, t, n);
  return s;
}

describe('rate window rule', () => {
  it('a fresh queue may start max at once; then waits one window after the burst', () => {
    const s = replay(10, 1_000, [[0, 10]]);
    expect(rateAllowance(s, 999)).toBe(0);
    expect(rateWaitMs(s, 400)).toBe(600);
    expect(rateAllowance(s, 1_000)).toBe(10);
    expect(rateWaitMs(s, 1_000)).toBeNull();
  });

  it('the previous window counts whole while its last start is within one window', () => {
    // 3 at 0, 6 at 900: window [0, 1000) holds 9; at 1000 it rolls over, the 9 still recent.
    const s = replay(10, 1_000, [
      [0, 3],
      [900, 6],
      [1_000, 1],
    ]);
    expect(rateAllowance(s, 1_100)).toBe(0);
    expect(rateWaitMs(s, 1_100)).toBe(800); // until 900 + 1000
    expect(rateAllowance(s, 1_900)).toBe(9);
  });

  it('random schedules never put more than max starts in any window of perMs', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 200; round++) {
      const max = 1 + Math.floor(random() * 8);
      const perMs = 50 + Math.floor(random() * 500);
      const s = replay(max, perMs, []);
      const times: number[] = [];
      let t = 0;
      for (let i = 0; i < 60; i++) {
        t += Math.floor(random() * perMs * 0.7);
        // A claim takes what it wants, up to the allowance at its instant.
        const n = Math.min(rateAllowance(s, t), 1 + Math.floor(random() * max));
        if (n > 0) {
          spend(s, t, n);
          for (let k = 0; k < n; k++) times.push(t);
        }
      }
      const sorted = [...times].sort((a, b) => a - b);
      for (let i = 0; i < sorted.length; i++) {
        const inWindow = sorted.filter((x) => x >= sorted[i] && x < sorted[i] + perMs).length;
        expect(inWindow).toBeLessThanOrEqual(max);
      }
    }
  });

  it('the shortest wait among several queues, none when no queue is held back', () => {
    const held = replay(2, 1_000, [[0, 2]]);
    const free = replay(2, 1_000, [[0, 1]]);
    expect(shortestRateWait([held, free], 100)).toBe(900);
    expect(shortestRateWait([free], 100)).toBeUndefined();
    // The shortest, wherever it stands among the held ones.
    const later = replay(2, 1_000, [[50, 2]]);
    expect(shortestRateWait([held, later], 100)).toBe(900);
    expect(shortestRateWait([later, held], 100)).toBe(900);
    expect(shortestRateWait([later, free, held], 100)).toBe(900);
    expect(shortestRateWait([], 100)).toBeUndefined();
  });

  it('reads a rate-state row: numbers as numbers or numeric text, SQL NULL as null', () => {
    expect(
      rateStateOf({
        max: '5',
        per_ms: 1_000,
        window_start_ms: '1000',
        window_last_ms: 1_500,
        window_count: null,
        prev_last_ms: undefined,
        prev_count: '0',
      }),
    ).toEqual({
      max: 5,
      perMs: 1_000,
      windowStartMs: 1_000,
      windowLastMs: 1_500,
      windowCount: null,
      prevLastMs: null,
      prevCount: 0,
    });
  });
});
