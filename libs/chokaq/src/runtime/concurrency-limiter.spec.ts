import { ConcurrencyLimiter } from './concurrency-limiter';

describe('ConcurrencyLimiter', () => {
  it('never hands out more slots than its capacity', () => {
    const limiter = new ConcurrencyLimiter(3);
    expect(limiter.acquire(5)).toBe(3);
    expect(limiter.available).toBe(0);
    expect(limiter.acquire()).toBe(0);
    limiter.release();
    expect(limiter.available).toBe(1);
  });

  it('shrinks without interrupting: no slot until running drops below the new capacity', () => {
    const limiter = new ConcurrencyLimiter(4);
    limiter.acquire(4);
    limiter.resize(2);
    expect(limiter.available).toBe(0);
    limiter.release(2);
    expect(limiter.available).toBe(0);
    limiter.release(1);
    expect(limiter.available).toBe(1);
  });

  it('grows at once and notifies the owner', () => {
    const onChange = jest.fn();
    const limiter = new ConcurrencyLimiter(1, onChange);
    limiter.acquire(1);
    limiter.resize(3);
    expect(onChange).toHaveBeenCalledTimes(1);
    expect(limiter.available).toBe(2);
  });

  it('rejects a non-positive or fractional capacity', () => {
    expect(() => new ConcurrencyLimiter(0)).toThrow(RangeError);
    expect(() => new ConcurrencyLimiter(1).resize(1.5)).toThrow(RangeError);
  });
});
