import { retryDelayMs } from './backoff';

const retry = { baseDelayMs: 3_000, multiplier: 2, maxDelayMs: 3_600_000, jitterMs: 0 };

describe('retryDelayMs', () => {
  it('waits exactly baseDelayMs before the first retry (no off-by-one)', () => {
    expect(retryDelayMs(1, retry)).toBe(3_000);
  });

  it('grows by the multiplier per further attempt', () => {
    expect([2, 3, 4].map((a) => retryDelayMs(a, retry))).toEqual([6_000, 12_000, 24_000]);
  });

  it('caps at maxDelayMs, also for absurd attempt numbers', () => {
    expect(retryDelayMs(30, retry)).toBe(3_600_000);
    expect(retryDelayMs(5_000, retry)).toBe(3_600_000);
  });

  it('adds 0..jitterMs of jitter', () => {
    const withJitter = { ...retry, jitterMs: 1_000 };
    expect(retryDelayMs(1, withJitter, () => 0)).toBe(3_000);
    expect(retryDelayMs(1, withJitter, () => 0.999_999)).toBe(4_000);
  });
});
