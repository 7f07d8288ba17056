import { randomUUID } from 'node:crypto';
import {
  issuePaths as paths,
  validationIssues as issuesOf,
} from '../../../../test/support/validation-issues';
import { uuidv7 } from '../common/uuid';
import { ChokaQValidationError } from '../errors';
import { FailureReason } from '../interfaces/job-status.enum';
import {
  assertCompletedJobs,
  assertDlqMove,
  assertFetchRequest,
  completionOf,
  assertLeases,
  assertProgressNote,
  assertGroupsLimit,
  assertQueuePatch,
  assertRecurringDefinition,
  assertWorkerHeartbeat,
  assertWorkerQuery,
  isLeaseTarget,
} from './validate-args';

describe('assertCompletedJobs and the completions the runtime makes', () => {
  const lease = () => ({ id: uuidv7(), workerId: 'host:1:abc', leaseId: randomUUID() });

  it('makes a frozen completion with a whole, non-negative duration', () => {
    const made = completionOf(lease(), 12.6);
    expect(Object.isFrozen(made)).toBe(true);
    expect(made.durationMs).toBe(13);
    expect(completionOf(lease(), -1).durationMs).toBe(0);
    expect(completionOf(lease(), Number.NaN).durationMs).toBe(0);
  });

  it('carries a result only when there is one, and checks a result it did not make', () => {
    expect('result' in completionOf(lease(), 1)).toBe(false);
    const withResult = completionOf(lease(), 1, '{"rows":3}');
    expect(withResult.result).toBe('{"rows":3}');
    expect(assertCompletedJobs([withResult])[0]).toBe(withResult);
    const plain = { ...lease(), durationMs: 1, result: '[1,2]' };
    expect(assertCompletedJobs([plain])[0].result).toBe('[1,2]');
    for (const result of ['{oops', '', 42, null]) {
      expect(() =>
        assertCompletedJobs([{ ...lease(), durationMs: 1, result: result as string }]),
      ).toThrow('items[0].result');
    }
  });

  it('takes a batch of made completions as it is, and checks and copies anything else', () => {
    const made = [completionOf(lease(), 1), completionOf(lease(), 2)];
    const taken = assertCompletedJobs(made);
    expect(taken).not.toBe(made);
    expect(taken[0]).toBe(made[0]);
    expect(taken[1]).toBe(made[1]);
    const plain = { ...lease(), durationMs: 2.4 };
    const mixed = assertCompletedJobs([made[0], plain]);
    expect(mixed[1]).not.toBe(plain);
    expect(mixed[1]).toEqual({ ...plain, durationMs: 2 });
  });

  it('still reports a bad item that rides with made completions', () => {
    expect(
      paths(() =>
        assertCompletedJobs([
          completionOf(lease(), 1),
          { id: 'x', workerId: 'w', leaseId: randomUUID(), durationMs: 1 },
          { id: uuidv7(), workerId: 'w', leaseId: randomUUID(), durationMs: -1 },
        ]),
      ),
    ).toEqual(['items[1].id']);
    expect(
      paths(() =>
        assertCompletedJobs([
          completionOf(lease(), 1),
          { id: uuidv7(), workerId: 'w', leaseId: randomUUID(), durationMs: -1 },
        ]),
      ),
    ).toEqual(['items[1].durationMs']);
  });

  it('collapses an exact duplicate of a made completion, and keeps two runs of one job', () => {
    const first = lease();
    const a = completionOf(first, 1);
    const again = completionOf(first, 1);
    const successor = completionOf({ ...first, leaseId: randomUUID() }, 1);
    expect(assertCompletedJobs([a, again, successor])).toEqual([a, successor]);
  });

  it('refuses more than a batch can hold, made or not, and anything but an array', () => {
    const made = Array.from({ length: 10_001 }, () => completionOf(lease(), 1));
    const full = assertCompletedJobs(made.slice(0, 10_000));
    expect(full).toHaveLength(10_000);
    expect(full[9_999]).toBe(made[9_999]);
    expect(() => assertCompletedJobs(made)).toThrow('at most');
    expect(() => assertCompletedJobs(new Set(made) as never)).toThrow(ChokaQValidationError);
  });

  it('checks the duration of a completion it did not make: a finite number ≥ 0', () => {
    const item = (durationMs: unknown) => ({ ...lease(), durationMs }) as never;
    expect(assertCompletedJobs([item(0)])[0].durationMs).toBe(0);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, '5']) {
      expect(() => assertCompletedJobs([item(bad)])).toThrow('must be a finite number ≥ 0');
      expect(paths(() => assertCompletedJobs([item(bad)]))).toEqual(['items[0].durationMs']);
    }
  });
});

describe('assertLeases', () => {
  const lease = () => ({ id: uuidv7(), workerId: 'host:1:abc', leaseId: randomUUID() });

  it('accepts fencing tokens and collapses exact duplicates, keeping two leases of one id', () => {
    const a = lease();
    const successor = { ...a, leaseId: randomUUID() };
    expect(assertLeases([a, { ...a }, successor])).toEqual([a, successor]);
  });

  it('reports every bad field: non-UUID id, empty worker, a lease id that does not fit varchar(36)', () => {
    expect(
      paths(() =>
        assertLeases([
          { id: 'x', workerId: '', leaseId: 'ü'.repeat(3) },
          { ...lease(), leaseId: 'a'.repeat(37) },
        ]),
      ),
    ).toEqual(['leases[0].id', 'leases[0].workerId', 'leases[0].leaseId', 'leases[1].leaseId']);
  });
});

describe('assertFetchRequest', () => {
  it('validates worker, lease, limit and the handled lists together', () => {
    expect(
      paths(() =>
        assertFetchRequest({
          workerId: 'w\u0000',
          leaseId: 'not a uuid!',
          limit: 1.5,
          handled: { queues: [''], types: [{ queue: 'q', type: '' }] },
        }),
      ),
    ).toEqual(['workerId', 'leaseId', 'limit', 'handled.queues[0]', 'handled.types[0].type']);
  });
});

describe('assertDlqMove', () => {
  it('sanitises the error text and refuses reserved reason codes', () => {
    expect(
      assertDlqMove({ reason: FailureReason.Timeout, error: 'a\u0000b', durationMs: 1.6 }),
    ).toEqual({
      reason: FailureReason.Timeout,
      error: 'a\uFFFDb',
      actor: null,
      durationMs: 2,
    });
    expect(paths(() => assertDlqMove({ reason: 4 as FailureReason, error: '' }))).toEqual([
      'move.reason',
    ]);
  });

  it('tells a lease target from an admin id target', () => {
    expect(isLeaseTarget({ id: uuidv7() })).toBe(false);
    expect(isLeaseTarget({ id: uuidv7(), workerId: 'w', leaseId: randomUUID() })).toBe(true);
  });
});

describe('assertQueuePatch', () => {
  it('keeps known fields and reports every bad one', () => {
    expect(assertQueuePatch({ isPaused: true, maxWorkers: null })).toEqual({
      isPaused: true,
      isActive: undefined,
      maxWorkers: null,
      zombieTimeoutSeconds: undefined,
      executionTimeoutMs: undefined,
      retryZombies: undefined,
    });
    expect(
      paths(() =>
        assertQueuePatch({ isActive: 'yes' as never, maxWorkers: -1, zombieTimeoutSeconds: 0 }),
      ),
    ).toEqual(['patch.isActive', 'patch.maxWorkers', 'patch.zombieTimeoutSeconds']);
  });

  it('checks the group limits: a concurrency of at least 1, a rate limit like the queue’s', () => {
    const rate = { max: 5, perMs: 1_000, extra: true } as never;
    expect(assertQueuePatch({ groupConcurrency: 1, groupRateLimit: rate })).toMatchObject({
      groupConcurrency: 1,
      groupRateLimit: { max: 5, perMs: 1_000 },
    });
    expect(assertQueuePatch({ groupRateLimit: rate }).groupRateLimit).toEqual({
      max: 5,
      perMs: 1_000,
    });
    expect(assertQueuePatch({ groupConcurrency: null, groupRateLimit: null })).toMatchObject({
      groupConcurrency: null,
      groupRateLimit: null,
    });
    expect(
      paths(() =>
        assertQueuePatch({
          groupConcurrency: 0,
          groupRateLimit: { max: 0, perMs: 86_400_001 },
        }),
      ),
    ).toEqual(['patch.groupConcurrency', 'patch.groupRateLimit.max', 'patch.groupRateLimit.perMs']);
    expect(paths(() => assertQueuePatch({ groupRateLimit: [] as never }))).toEqual([
      'patch.groupRateLimit',
    ]);
    expect(paths(() => assertQueuePatch({ groupConcurrency: 1_000_001 }))).toEqual([
      'patch.groupConcurrency',
    ]);
  });

  it('checks each half of a rate limit at its bounds, and refuses what is not an object', () => {
    const ok = (max: unknown, perMs: unknown) =>
      assertQueuePatch({ groupRateLimit: { max, perMs } as never }).groupRateLimit;
    expect(ok(1, 1)).toEqual({ max: 1, perMs: 1 });
    expect(ok(1_000_000, 86_400_000)).toEqual({ max: 1_000_000, perMs: 86_400_000 });
    const bad = (max: unknown, perMs: unknown) =>
      issuesOf(() => assertQueuePatch({ groupRateLimit: { max, perMs } as never }));
    expect(bad(1_000_001, 86_400_001)).toEqual([
      {
        path: 'patch.groupRateLimit.max',
        message: 'must be an integer from 1 to 1000000',
        value: 1_000_001,
      },
      {
        path: 'patch.groupRateLimit.perMs',
        message: 'must be an integer from 1 to 86400000',
        value: 86_400_001,
      },
    ]);
    expect(bad('5', 1.5).map((i) => i.path)).toEqual([
      'patch.groupRateLimit.max',
      'patch.groupRateLimit.perMs',
    ]);
    expect(issuesOf(() => assertQueuePatch({ rateLimit: 'fast' as never }))).toEqual([
      {
        path: 'patch.rateLimit',
        message: 'must be null or an object { max, perMs }',
        value: 'fast',
      },
    ]);
  });

  it('caps executionTimeoutMs at the longest Node timer (a longer one fires after 1 ms)', () => {
    expect(assertQueuePatch({ executionTimeoutMs: 2 ** 31 - 1 }).executionTimeoutMs).toBe(
      2 ** 31 - 1,
    );
    expect(paths(() => assertQueuePatch({ executionTimeoutMs: 2 ** 31 }))).toEqual([
      'patch.executionTimeoutMs',
    ]);
  });
});

describe('assertGroupsLimit', () => {
  it('takes an integer from 1 to 100', () => {
    expect(assertGroupsLimit(1)).toBe(1);
    expect(assertGroupsLimit(100)).toBe(100);
    for (const bad of [0, 101, 1.5, '5', undefined]) {
      expect(issuesOf(() => assertGroupsLimit(bad))).toEqual([
        { path: 'limit', message: 'must be an integer from 1 to 100', value: bad },
      ]);
    }
  });
});

describe('assertRecurringDefinition', () => {
  it('checks the slot fields and the job fields like an enqueue', () => {
    const ok = assertRecurringDefinition(
      {
        name: 'nightly',
        cron: '0 3 * * *',
        timeZone: 'Europe/Paris',
        queue: 'reports',
        type: 'nightly.v1',
        payload: { a: 1 },
        misfirePolicy: 'skip',
        nextSlotUtc: new Date(),
      },
      1_000,
    );
    expect(ok.payload).toBe('{"a":1}');
    expect(
      paths(() =>
        assertRecurringDefinition(
          {
            name: '',
            cron: '* * * * *',
            timeZone: 'UTC',
            queue: 'q',
            type: 't',
            payload: null,
            misfirePolicy: 'always' as never,
            nextSlotUtc: new Date(NaN),
          },
          1_000,
        ),
      ),
    ).toEqual(['name', 'misfirePolicy', 'nextSlotUtc']);
  });
});

describe('worker reports and queries', () => {
  const report = {
    workerId: 'host:1:abc',
    host: 'host',
    pid: 1,
    libraryVersion: '1.0.0',
    concurrency: 2,
    running: 1,
    handled: { queues: ['q'], types: [{ queue: 'r', type: 't' }] },
    circuits: { 'r/t': 'half-open' as const },
    draining: false,
    starting: true,
  };

  it('turns a report into the row: its lists as JSON of the known fields only', () => {
    const extra = { ...report, handled: { ...report.handled, more: 1 }, colour: 'blue' };
    expect(assertWorkerHeartbeat(extra as never)).toEqual({
      ...report,
      handled: '{"queues":["q"],"types":[{"queue":"r","type":"t"}]}',
      circuits: '{"r/t":"half-open"}',
    });
  });

  it('reports every bad field of a report', () => {
    expect(
      paths(() =>
        assertWorkerHeartbeat({
          ...report,
          host: '',
          pid: 1.5,
          running: -1,
          handled: { queues: [], types: [{ queue: 'q', type: '' }] },
          circuits: [] as never,
          draining: 1 as never,
        }),
      ),
    ).toEqual(['host', 'pid', 'running', 'handled.types[0].type', 'circuits', 'draining']);
  });

  it('applies the query defaults and bounds', () => {
    expect(assertWorkerQuery(undefined, 600_000)).toEqual({ lostAfterMs: 600_000, limit: 1_000 });
    expect(assertWorkerQuery({ lostAfterMs: 0, limit: 10_000 }, 5)).toEqual({
      lostAfterMs: 0,
      limit: 10_000,
    });
    expect(paths(() => assertWorkerQuery({ lostAfterMs: 1.5, limit: 0 }, 5))).toEqual([
      'lostAfterMs',
      'limit',
    ]);
  });

  it('takes a progress note of at most 500 characters without NUL, or none', () => {
    expect(assertProgressNote(undefined)).toBeNull();
    expect(assertProgressNote(null)).toBeNull();
    expect(assertProgressNote('')).toBe('');
    expect(assertProgressNote('n'.repeat(500))).toBe('n'.repeat(500));
    expect(paths(() => assertProgressNote('n'.repeat(501)))).toEqual(['note']);
    expect(paths(() => assertProgressNote('a\u0000b'))).toEqual(['note']);
    expect(paths(() => assertProgressNote(42))).toEqual(['note']);
  });
});
