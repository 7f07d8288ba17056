import { defineJob } from '../decorators/job-definition';
import { ChokaQValidationError } from '../errors';
import { payloadVersionIssues, runnableVersions } from './payload-version';

const at = (key: string) => `defineJob.options.${key}`;
const step = (p: unknown) => p;

describe('payloadVersionIssues', () => {
  it('accepts no version, a version alone, and a contiguous chain ending at version − 1', () => {
    expect(payloadVersionIssues(undefined, undefined, at)).toEqual([]);
    expect(payloadVersionIssues(1, undefined, at)).toEqual([]);
    expect(payloadVersionIssues(5, { 3: step, 4: step }, at)).toEqual([]);
    expect(payloadVersionIssues(2 ** 31 - 1, {}, at)).toEqual([]);
  });

  it('refuses a version that is not an integer from 1 to 2^31-1', () => {
    for (const version of [0, -1, 1.5, 2 ** 31, '2', null, NaN]) {
      expect(payloadVersionIssues(version, undefined, at)).toEqual([
        {
          path: 'defineJob.options.version',
          message: 'must be an integer from 1 to 2147483647',
          value: version,
        },
      ]);
    }
  });

  it('refuses keys outside 1 … version − 1, values that are not functions, and a gap (named)', () => {
    expect(payloadVersionIssues(3, { 3: step }, at)).toEqual([
      expect.objectContaining({ path: 'defineJob.options.upgrade[3]' }),
    ]);
    expect(payloadVersionIssues(3, { 0: step, 2: step }, at)).toEqual([
      expect.objectContaining({ path: 'defineJob.options.upgrade[0]' }),
    ]);
    expect(payloadVersionIssues(3, { '1.5': step, 2: step }, at)).toEqual([
      expect.objectContaining({ path: 'defineJob.options.upgrade[1.5]' }),
    ]);
    expect(payloadVersionIssues(3, { 1: 'v2', 2: step }, at)).toEqual([
      expect.objectContaining({
        path: 'defineJob.options.upgrade[1]',
        message: 'must be a function from the version 1 payload to the version 2 payload',
      }),
    ]);
    expect(payloadVersionIssues(5, { 1: step, 2: step, 4: step }, at)).toEqual([
      {
        path: 'defineJob.options.upgrade[3]',
        message: 'is missing: the chain from version 1 to 5 has a gap at 3 → 4',
        value: undefined,
      },
    ]);
    // A chain that stops short of version − 1 is a gap too: 2 → 3 cannot be reached.
    expect(payloadVersionIssues(3, { 1: step }, at)).toEqual([
      expect.objectContaining({ path: 'defineJob.options.upgrade[2]' }),
    ]);
    expect(payloadVersionIssues(2, [step], at)).toEqual([
      expect.objectContaining({ path: 'defineJob.options.upgrade' }),
    ]);
  });
});

describe('runnableVersions', () => {
  it('runs from the lowest contiguous step up to the version; 1 to 1 without one', () => {
    expect(runnableVersions(undefined, undefined)).toEqual({ minVersion: 1, maxVersion: 1 });
    expect(runnableVersions(3, undefined)).toEqual({ minVersion: 3, maxVersion: 3 });
    expect(runnableVersions(3, { 1: step, 2: step })).toEqual({ minVersion: 1, maxVersion: 3 });
    expect(runnableVersions(4, { 2: step, 3: step })).toEqual({ minVersion: 2, maxVersion: 4 });
  });
});

describe('defineJob with a version', () => {
  it('keeps the version and a frozen copy of the chain; without them the definition is as before', () => {
    const upgrade = { 1: step };
    const def = defineJob('q', 't', { version: 2, upgrade });
    expect(def).toEqual({ queue: 'q', type: 't', version: 2, upgrade: { 1: step } });
    expect(Object.isFrozen(def.upgrade)).toBe(true);
    expect(def.upgrade).not.toBe(upgrade);
    expect(defineJob('q', 't', {})).toEqual({ queue: 'q', type: 't' });
  });

  it('refuses a bad version or chain with a ChokaQValidationError naming it', () => {
    const define = (options: object) => () => defineJob('q', 't', options as never);
    expect(define({ version: 0 })).toThrow(ChokaQValidationError);
    expect(define({ version: 0 })).toThrow('defineJob.options.version must be an integer');
    expect(define({ version: 4, upgrade: { 1: step, 3: step } })).toThrow(
      'defineJob.options.upgrade[2] is missing: the chain from version 1 to 4 has a gap at 2 → 3',
    );
    expect(define({ upgrade: { 1: step } })).toThrow('defineJob.options.upgrade[1]');
  });
});
