import { hotJob } from '../../../../../test/runtime/support/hot-job';
import { claimOrder } from './claim-order';

const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms);

describe('claimOrder', () => {
  it('sorts by priority (higher first), then due time, then id code unit by code unit', () => {
    const jobs = [
      hotJob({ id: 'b', priority: 5, enqueuedAtUtc: at(0) }),
      hotJob({ id: 'c', priority: 9, enqueuedAtUtc: at(10) }),
      hotJob({ id: 'a', priority: 5, enqueuedAtUtc: at(0) }),
      // Due by its schedule, which is earlier than its enqueue.
      hotJob({ id: 'z', priority: 5, enqueuedAtUtc: at(50), scheduledAtUtc: at(-5) }),
      hotJob({ id: 'd', priority: 5, enqueuedAtUtc: at(1) }),
      // Code units: 'B' (0x42) sorts before 'a' (0x61), unlike a locale's collation.
      hotJob({ id: 'B', priority: 5, enqueuedAtUtc: at(0) }),
    ];
    expect([...jobs].sort(claimOrder).map((j) => j.id)).toEqual(['c', 'z', 'B', 'a', 'b', 'd']);
    expect(
      [...jobs]
        .reverse()
        .sort(claimOrder)
        .map((j) => j.id),
    ).toEqual(['c', 'z', 'B', 'a', 'b', 'd']);
  });

  it('says 0 for the same job, and is antisymmetric', () => {
    const a = hotJob({ id: 'a', priority: 1, enqueuedAtUtc: at(0) });
    const b = hotJob({ id: 'b', priority: 1, enqueuedAtUtc: at(0) });
    expect(claimOrder(a, a)).toBe(0);
    expect(claimOrder(a, b)).toBeLessThan(0);
    expect(claimOrder(b, a)).toBeGreaterThan(0);
    const later = hotJob({ id: 'a', priority: 1, enqueuedAtUtc: at(7) });
    expect(claimOrder(b, later)).toBe(-7);
  });
});
