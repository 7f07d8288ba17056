import { DEFAULT_TRANSIENT_RETRY } from '../../config/storage-defaults';
import { ChokaQStorageUnavailableError } from '../../errors';
import {
  transientRetryBudgetMs,
  transientRetryDelayMs,
  withTransientRetry,
} from './transient-retry';

const transient = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
const isTransient = (error: unknown): boolean => error === transient;

describe('transient retry schedule', () => {
  const ceilings = [50, 100, 200, 400, 800, 1_600, 2_000];

  it('waits at least half of a doubling, capped ceiling and at most the ceiling', () => {
    const low = ceilings.map((_, n) =>
      transientRetryDelayMs(n + 1, DEFAULT_TRANSIENT_RETRY, () => 0),
    );
    const high = ceilings.map((_, n) =>
      transientRetryDelayMs(n + 1, DEFAULT_TRANSIENT_RETRY, () => 1 - Number.EPSILON),
    );
    expect(low).toEqual(ceilings.map((c) => c / 2));
    high.forEach((ms, n) => expect(ms).toBeCloseTo(ceilings[n], 6));
    expect(transientRetryDelayMs(3, DEFAULT_TRANSIENT_RETRY, () => 0.5)).toBe(150);
    // Far past the cap, and with absurd attempt numbers, the ceiling stays maxDelayMs.
    expect(transientRetryDelayMs(60, DEFAULT_TRANSIENT_RETRY, () => 0)).toBe(1_000);
    expect(transientRetryDelayMs(5_000, DEFAULT_TRANSIENT_RETRY, () => 0)).toBe(1_000);
  });

  it('states the default budget: 2,575 ms to 5,150 ms of waiting over 8 attempts', () => {
    expect(DEFAULT_TRANSIENT_RETRY).toEqual({ maxAttempts: 8, baseDelayMs: 50, maxDelayMs: 2_000 });
    expect(transientRetryBudgetMs()).toEqual({ minMs: 2_575, maxMs: 5_150 });
    expect(transientRetryBudgetMs({ maxAttempts: 5, baseDelayMs: 50, maxDelayMs: 500 })).toEqual({
      minMs: 375,
      maxMs: 750,
    });
    expect(transientRetryBudgetMs({ maxAttempts: 1 })).toEqual({ minMs: 0, maxMs: 0 });
  });
});

describe('withTransientRetry', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('gives up with ChokaQStorageUnavailableError only once the whole budget has been waited', async () => {
    let attempts = 0;
    let settled: unknown;
    void withTransientRetry(
      'enqueue',
      () => {
        attempts += 1;
        return Promise.reject(transient);
      },
      isTransient,
      {},
      () => 0, // every wait at its floor: the earliest the retry may give up
    ).then(
      () => (settled = 'resolved'),
      (error: unknown) => (settled = error),
    );
    await jest.advanceTimersByTimeAsync(transientRetryBudgetMs().minMs - 1);
    expect(settled).toBeUndefined();
    expect(attempts).toBe(DEFAULT_TRANSIENT_RETRY.maxAttempts - 1);
    await jest.advanceTimersByTimeAsync(1);
    expect(settled).toBeInstanceOf(ChokaQStorageUnavailableError);
    expect((settled as ChokaQStorageUnavailableError).retryable).toBe(true);
    expect(attempts).toBe(DEFAULT_TRANSIENT_RETRY.maxAttempts);
  });

  it('returns the first success, passing the attempt number', async () => {
    const seen: number[] = [];
    const result = withTransientRetry(
      'claim',
      (attempt) => {
        seen.push(attempt);
        return attempt < 3 ? Promise.reject(transient) : Promise.resolve('ok');
      },
      isTransient,
    );
    await jest.advanceTimersByTimeAsync(200);
    await expect(result).resolves.toBe('ok');
    expect(seen).toEqual([1, 2, 3]);
  });

  it('rethrows a non-transient error at once, without waiting', async () => {
    const fatal = new Error('syntax error');
    let attempts = 0;
    await expect(
      withTransientRetry(
        'claim',
        () => {
          attempts += 1;
          return Promise.reject(fatal);
        },
        isTransient,
      ),
    ).rejects.toBe(fatal);
    expect(attempts).toBe(1);
  });
});
