import { ChokaQFatalError, ChokaQThrottledError, ChokaQValidationError } from '../errors';
import { FailureReason } from '../interfaces/job-status.enum';
import { decideFailure } from './failure-policy';

const retry = {
  maxAttempts: 3,
  baseDelayMs: 100,
  multiplier: 2,
  maxDelayMs: 10_000,
  jitterMs: 0,
  maxJobAgeMs: 60_000,
};
const facts = { attempt: 1, maxAttempts: 3, jobAgeMs: 0, retry };

describe('decideFailure', () => {
  it('retries ordinary errors with backoff while attempts remain', () => {
    expect(decideFailure({ ...facts, error: new Error('x') })).toEqual({
      action: 'retry',
      delayMs: 100,
      throttled: false,
    });
    expect(decideFailure({ ...facts, attempt: 2, error: new Error('x') })).toEqual({
      action: 'retry',
      delayMs: 200,
      throttled: false,
    });
  });

  it('moves exhausted jobs to DLQ MaxRetriesExceeded', () => {
    expect(decideFailure({ ...facts, attempt: 3, error: 'boom' })).toEqual({
      action: 'dlq',
      reason: FailureReason.MaxRetriesExceeded,
    });
  });

  it('sends fatal and validation errors to DLQ at once', () => {
    expect(decideFailure({ ...facts, error: new ChokaQFatalError('bad') })).toEqual({
      action: 'dlq',
      reason: FailureReason.FatalError,
    });
    const invalid = new ChokaQValidationError([
      { path: 'payload.to', message: 'required', value: undefined },
    ]);
    expect(decideFailure({ ...facts, error: invalid })).toEqual({
      action: 'dlq',
      reason: FailureReason.FatalError,
    });
  });

  it('retries throttled errors after exactly retryAfterMs, then DLQ Throttled', () => {
    expect(decideFailure({ ...facts, error: new ChokaQThrottledError(1_234) })).toEqual({
      action: 'retry',
      delayMs: 1_234,
      throttled: true,
    });
    expect(decideFailure({ ...facts, attempt: 3, error: new ChokaQThrottledError(1_234) })).toEqual(
      { action: 'dlq', reason: FailureReason.Throttled },
    );
  });

  it('stops retrying once the job is older than maxJobAgeMs', () => {
    expect(decideFailure({ ...facts, jobAgeMs: 60_000, error: new Error('x') })).toEqual({
      action: 'dlq',
      reason: FailureReason.RetryLifetimeExpired,
    });
  });

  it('copes with non-Error throws', () => {
    for (const thrown of [undefined, null, 42, { a: 1 }]) {
      expect(decideFailure({ ...facts, error: thrown }).action).toBe('retry');
    }
  });
});

describe('decideFailure with a handler backoff', () => {
  const error = new Error('x');

  it('takes the n-th wait of a list after failed attempt n, and the last one beyond it', () => {
    const backoff = [1_000, 10_000, 60_000];
    const delays = [1, 2, 3, 4, 9].map((attempt) =>
      decideFailure({ ...facts, maxAttempts: 10, attempt, error, backoff }),
    );
    expect(delays).toEqual(
      [1_000, 10_000, 60_000, 60_000, 60_000].map((delayMs) => ({
        action: 'retry',
        delayMs,
        throttled: false,
      })),
    );
  });

  it('asks a function with the attempt and the error, rounding its answer', () => {
    const backoff = jest.fn((attempt: number) => attempt * 1_000.4);
    expect(decideFailure({ ...facts, attempt: 2, error, backoff })).toEqual({
      action: 'retry',
      delayMs: 2_001,
      throttled: false,
    });
    expect(backoff).toHaveBeenCalledWith(2, error);
  });

  it('falls back to the policy, saying why, when the function throws or answers nonsense', () => {
    const cases: Array<[(attempt: number, error: unknown) => number, string]> = [
      [
        () => {
          throw new Error('no');
        },
        'backoff function threw (Error: no)',
      ],
      [() => Number.NaN, 'backoff function returned NaN'],
      [() => -1, 'backoff function returned -1'],
      [() => 2 ** 31, 'backoff function returned 2147483648'],
      [() => '5' as unknown as number, 'backoff function returned "5"'],
    ];
    for (const [backoff, why] of cases) {
      const decision = decideFailure({ ...facts, attempt: 2, error, backoff });
      expect(decision).toMatchObject({ action: 'retry', delayMs: 200, throttled: false });
      expect(decision.action === 'retry' && decision.backoffRefused).toContain(why);
    }
  });

  it('lets a throttle and the attempt and age limits win over it', () => {
    const backoff = [5_000];
    expect(decideFailure({ ...facts, error: new ChokaQThrottledError(777), backoff })).toEqual({
      action: 'retry',
      delayMs: 777,
      throttled: true,
    });
    expect(decideFailure({ ...facts, attempt: 3, error, backoff })).toEqual({
      action: 'dlq',
      reason: FailureReason.MaxRetriesExceeded,
    });
    expect(decideFailure({ ...facts, jobAgeMs: 60_000, error, backoff })).toEqual({
      action: 'dlq',
      reason: FailureReason.RetryLifetimeExpired,
    });
  });
});
