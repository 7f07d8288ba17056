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
});
