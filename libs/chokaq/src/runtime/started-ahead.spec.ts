import { hotJob } from '../../../../test/runtime/support/hot-job';
import type { ClaimedJob } from './job-finaliser';
import { AHEAD_ROUND_TRIPS, StartedAhead } from './started-ahead';

function claimed(id: string, queue = 'q'): ClaimedJob {
  return { job: hotJob({ id, queue }), lease: { id, workerId: 'w', leaseId: `l-${id}` } };
}

/** Claims of `rttMs` each, `perClaim` runs entered between two claim returns spaced `gapMs` apart. */
function warmed(cap: number, { rttMs, perClaim, gapMs }: Record<string, number>): StartedAhead {
  const ahead = new StartedAhead(cap);
  let now = 1_000;
  for (let i = 0; i < 5; i++) {
    ahead.noteEntered(perClaim);
    now += gapMs;
    ahead.noteClaim(now - rttMs, now);
  }
  return ahead;
}

describe('StartedAhead', () => {
  it('keeps nothing ahead until it has measured a rate and a round trip', () => {
    const ahead = new StartedAhead(128);
    expect(ahead.target()).toBe(0);
    expect(ahead.room(10)).toBe(0);
    ahead.noteClaim(0, 2);
    expect(ahead.target()).toBe(0); // one claim: a round trip, but no rate yet
  });

  it('targets a couple of round trips of work at the recent rate, at most the cap', () => {
    // 20 runs per 4 ms = 5 per ms; round trip 2 ms: 5 × 2 × 2 = 20.
    const ahead = warmed(128, { rttMs: 2, perClaim: 20, gapMs: 4 });
    expect(ahead.target()).toBe(5 * AHEAD_ROUND_TRIPS * 2);
    expect(warmed(8, { rttMs: 2, perClaim: 20, gapMs: 4 }).target()).toBe(8);
  });

  it('keeps next to nothing ahead for slow handlers', () => {
    // 10 runs per second with a 2 ms round trip: 0.04 rows of work in two round trips.
    expect(warmed(128, { rttMs: 2, perClaim: 10, gapMs: 1_000 }).target()).toBe(0);
  });

  it('is off with a cap of 0', () => {
    const ahead = warmed(0, { rttMs: 2, perClaim: 20, gapMs: 4 });
    expect(ahead.enabled).toBe(false);
    expect(ahead.target()).toBe(0);
  });

  it('refills in steps: nothing while more than half the target waits, unless slots were free', () => {
    const ahead = warmed(128, { rttMs: 2, perClaim: 20, gapMs: 4 }); // target 20
    ahead.push(
      Array.from({ length: 11 }, (_, i) => claimed(`a${i}`)),
      0,
    );
    expect(ahead.room(0)).toBe(0);
    expect(ahead.room(3)).toBe(9);
    ahead.shift(0, () => 1);
    expect(ahead.room(0)).toBe(10);
  });

  it('hands rows out in claim order, fresh while their lease is younger than the safe time', () => {
    const ahead = new StartedAhead(16);
    const [a, b] = [claimed('a'), claimed('b')];
    ahead.push([a, b], 100);
    ahead.push([claimed('c')], 200);
    expect(ahead.shift(150, () => 100)).toEqual({ claimed: a, fresh: true });
    expect(ahead.shift(200, () => 100)).toEqual({ claimed: b, fresh: false });
    expect(ahead.shift(299, () => 100)?.fresh).toBe(true);
    expect(ahead.shift(300, () => 100)).toBeUndefined();
  });

  it('takes the rows a cancel or a paused queue selects, keeping the order of the others', () => {
    const ahead = new StartedAhead(16);
    ahead.push([claimed('a', 'x'), claimed('b', 'y'), claimed('c', 'x'), claimed('d', 'y')], 0);
    expect(ahead.take(({ job }) => job.queue === 'x').map((c) => c.job.id)).toEqual(['a', 'c']);
    expect(ahead.size).toBe(2);
    expect(ahead.takeAll().map((c) => c.job.id)).toEqual(['b', 'd']);
    expect(ahead.size).toBe(0);
  });

  it('is on with any cap above 0', () => {
    expect(new StartedAhead(1).enabled).toBe(true);
  });

  it('averages round trips and rates with a moving weight, and ignores a rate sampled over no time', () => {
    const ahead = new StartedAhead(1_000);
    ahead.noteClaim(0, 10); // round trip 10 ms; the first return only starts the rate sample
    ahead.noteEntered(100);
    ahead.noteClaim(15, 20); // round trip 5 → 10 + 0.3 × (5 − 10) = 8.5; rate 100 / 10 ms = 10
    expect(ahead.target()).toBe(Math.floor(10 * AHEAD_ROUND_TRIPS * 8.5));
    ahead.noteEntered(40);
    ahead.noteClaim(30, 40); // round trip 10 → 8.95; rate 40 / 20 = 2 → 10 + 0.3 × (2 − 10) = 7.6
    expect(ahead.target()).toBe(Math.floor(7.6 * AHEAD_ROUND_TRIPS * 8.95));
    ahead.noteEntered(5);
    ahead.noteClaim(40, 40); // returned in the same millisecond: the rate keeps 7.6
    expect(ahead.target()).toBe(Math.floor(7.6 * AHEAD_ROUND_TRIPS * (8.95 + 0.3 * (0 - 8.95))));
  });

  it('confirms the rows of the leases a heartbeat renewed, never back in time', () => {
    const ahead = new StartedAhead(16);
    const [a, b, c] = [claimed('a'), claimed('b'), claimed('c')];
    ahead.push([a, b], 100);
    ahead.push([c], 500);
    ahead.confirm(new Set(['l-a', 'l-c']), 400);
    const safe = () => 100;
    expect(ahead.shift(450, safe)).toEqual({ claimed: a, fresh: true }); // confirmed at 400
    expect(ahead.shift(450, safe)).toEqual({ claimed: b, fresh: false }); // not renewed: still 100
    expect(ahead.shift(560, safe)).toEqual({ claimed: c, fresh: true }); // kept 500, not 400
  });
});
