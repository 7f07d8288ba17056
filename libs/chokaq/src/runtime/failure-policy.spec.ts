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
