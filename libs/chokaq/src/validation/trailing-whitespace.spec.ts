import { validationIssues } from '../../../../test/support/validation-issues';
import { jobHandlerIssues, jobEventIssues } from './decorator-options';
import { endsWithWhitespace } from './limits';
import { assertFetchRequest, assertRecurringName, assertZombieRetryRules } from './validate-args';
import { filterIssues } from './validate-filter';
import { validateNewJob } from './validate-job';

const messages = (fn: () => unknown) => validationIssues(fn).map((i) => [i.path, i.message]);

/**
 * Keys, types and names that end with whitespace are refused on every dialect: SQL Server's `=`
 * ignores trailing blanks, so `order-7 ` would be `order-7` there and a different key elsewhere.
 */
describe('trailing whitespace in keys, types and names', () => {
  it('endsWithWhitespace: a blank, a tab, a newline or a no-break space at the end', () => {
    for (const v of ['a ', 'a\t', 'a\n', 'a\u00a0', ' ']) expect(endsWithWhitespace(v)).toBe(true);
    for (const v of ['a', ' a', 'a b', '']) expect(endsWithWhitespace(v)).toBe(false);
  });

  it('an enqueue refuses a type or an idempotency key that ends with whitespace', () => {
    expect(messages(() => validateNewJob({ queue: 'q', type: 'invoice.v2 ' }, 1_000))).toEqual([
      ['type', 'must not end with whitespace'],
    ]);
    expect(
      messages(() => validateNewJob({ queue: 'q', idempotencyKey: 'order-7\t' }, 1_000)),
    ).toEqual([['idempotencyKey', 'must not end with whitespace']]);
    // Inside is fine.
    expect(validateNewJob({ queue: 'q', type: 'a b', idempotencyKey: ' k' }, 1_000).type).toBe(
      'a b',
    );
  });

  it('a recurring job name, a claim type and a zombie retry rule type are refused too', () => {
    expect(messages(() => assertRecurringName('nightly '))).toEqual([
      ['name', 'must not end with whitespace'],
    ]);
    expect(
      messages(() =>
        assertFetchRequest({
          workerId: 'w',
          leaseId: '6f1c2d3e-4b5a-4c6d-9e8f-0a1b2c3d4e5f',
          limit: 1,
          handled: { queues: [], types: [{ queue: 'q', type: 't ' }] },
        }),
      ),
    ).toEqual([['handled.types[0].type', 'must not end with whitespace']]);
    expect(
      messages(() => assertZombieRetryRules([{ queue: 'q', type: 't ', retry: true }])),
    ).toEqual([['retryRules[0].type', 'must not end with whitespace']]);
  });

  it('a handler and an event filter refuse such a type at startup', () => {
    const handler = jobHandlerIssues('Jobs.run', { queue: 'q', type: 'run.v1 ' } as never);
    expect(handler.map((i) => i.message)).toEqual([
      'must be a string of 1–255 characters without NUL, not ending with whitespace',
    ]);
    const event = jobEventIssues('Jobs.on', {
      events: ['succeeded'],
      queue: 'q',
      type: 'run.v1 ',
    } as never);
    expect(event.map((i) => i.message)).toContain(
      'must be a string of 1–255 characters without NUL, not ending with whitespace',
    );
  });

  it('a list or DLQ filter refuses a type that ends with whitespace (no stored type does)', () => {
    expect(filterIssues({ type: 'run.v1 ' }).map((i) => [i.path, i.message])).toEqual([
      ['filter.type', 'must not end with whitespace'],
    ]);
    expect(filterIssues({ type: 'run.v1', search: 'boom ' })).toEqual([]);
  });
});
