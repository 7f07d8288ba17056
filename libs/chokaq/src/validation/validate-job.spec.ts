import { validationIssues } from '../../../../test/support/validation-issues';
import { decodeTags, encodeTags } from '../common/tags';
import { UuidV7Generator, isUuid, uuidv7 } from '../common/uuid';
import { ChokaQValidationError } from '../errors';
import { MAX_ENQUEUE_MANY } from './limits';
import {
  DEFAULT_PRIORITY,
  assertIds,
  assertProgress,
  assertQueueName,
  validateEdits,
  validateNewBatch,
  validateNewJob,
  validateNewJobs,
} from './validate-job';

function issuesOf(fn: () => unknown): Array<{ path: string; message: string }> {
  return validationIssues(fn).map(({ path, message }) => ({ path, message }));
}

describe('uuidv7', () => {
  it('is a version-7 UUID whose first 48 bits are the time, so ids sort by creation', () => {
    const ids = [1_700_000_000_000, 1_700_000_000_001];
    const generator = new UuidV7Generator(() => ids.shift()!);
    const a = generator.next();
    const b = generator.next();
    expect(isUuid(a)).toBe(true);
    expect(a[14]).toBe('7');
    expect(a < b).toBe(true);
    expect(parseInt(a.replace(/-/g, '').slice(0, 12), 16)).toBe(1_700_000_000_000);
  });
});

describe('tags', () => {
  it('round-trips through the ,a,b, form', () => {
    expect(encodeTags(['a', 'b'])).toBe(',a,b,');
    expect(encodeTags([])).toBeNull();
    expect(decodeTags(',a,b,')).toEqual(['a', 'b']);
    expect(decodeTags(null)).toEqual([]);
  });
});

describe('validateNewJob', () => {
  it('applies defaults: queue default, type = queue, priority 10, a fresh UUIDv7', () => {
    const job = validateNewJob({ payload: { a: 1 } });
    expect(job).toMatchObject({
      queue: 'default',
      type: 'default',
      payload: '{"a":1}',
      priority: DEFAULT_PRIORITY,
      delayMs: null,
      runAt: null,
      tags: null,
    });
    expect(isUuid(job.id)).toBe(true);
    expect(job.idGiven).toBe(false);
  });

  it('says whether the caller gave the id', () => {
    const id = uuidv7();
    expect(validateNewJob({ id })).toMatchObject({ id, idGiven: true });
    expect(validateNewJobs([{ id }, {}]).map((j) => j.idGiven)).toEqual([true, false]);
  });

  it('keeps NUL characters inside the payload (escaped in JSON) but not in string columns', () => {
    expect(validateNewJob({ payload: 'a\u0000b' }).payload).toBe('"a\\u0000b"');
    expect(issuesOf(() => validateNewJob({ queue: 'q', type: 'a\u0000' }))).toEqual([
      { path: 'type', message: 'must not contain NUL characters' },
    ]);
  });

  it('reports every bad field at once, each with its path', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const paths = issuesOf(() =>
      validateNewJob({
        queue: 'bad queue!',
        priority: 1.5,
        delayMs: -1,
        tags: ['ok', 'has,comma', ''],
        idempotencyKey: 'k'.repeat(256),
        payload: cyclic,
      }),
    ).map((i) => i.path);
    expect(paths).toEqual([
      'queue',
      'priority',
      'delayMs',
      'idempotencyKey',
      'tags[1]',
      'tags[2]',
      'payload',
    ]);
  });

  it.each([
    ['BigInt payload', { payload: { n: BigInt(1) } }, 'payload'],
    ['oversized payload', { payload: 'x'.repeat(2_000) }, 'payload'],
    ['NaN priority', { priority: NaN }, 'priority'],
    ['Infinity delay', { delayMs: Infinity }, 'delayMs'],
    ['invalid runAt', { runAt: new Date('nope') }, 'runAt'],
    ['runAt after year 9000', { runAt: new Date(Date.UTC(9000, 0, 1)) }, 'runAt'],
    ['runAt with delayMs', { runAt: new Date(), delayMs: 5 }, 'runAt'],
    ['21 tags', { tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
    ['a non-UUID id', { id: 'job-1' }, 'id'],
    ['a long createdBy', { createdBy: 'c'.repeat(101) }, 'createdBy'],
  ])('rejects %s', (_name, job, path) => {
    expect(issuesOf(() => validateNewJob(job as never, 1_000))[0].path).toBe(path);
  });
});

describe('validateNewJob: groups', () => {
  it('keeps a group as given, and none when it is left out or null', () => {
    expect(validateNewJob({ group: 'tenant:42' }).group).toBe('tenant:42');
    expect(validateNewJob({}).group).toBeNull();
    expect(validateNewJob({ group: null as never }).group).toBeNull();
  });

  it.each([
    ['an empty group', ''],
    ['a group with a trailing blank', 'acme '],
    ['a group of 256 characters', 'g'.repeat(256)],
    ['a group that is not a string', 42],
  ])('rejects %s', (_name, group) => {
    expect(issuesOf(() => validateNewJob({ group } as never)).map((i) => i.path)).toEqual([
      'group',
    ]);
  });

  it('accepts a group of 255 characters', () => {
    expect(validateNewJob({ group: 'g'.repeat(255) }).group).toHaveLength(255);
  });
});

describe('validateNewJob: dedupe keys', () => {
  const WINDOW = 60_000;
  it('keeps a key with its mode, its states in a fixed order, and a window only where it applies', () => {
    expect(
      validateNewJob({ dedupe: { key: 'k', mode: 'throttle', windowMs: WINDOW } }),
    ).toMatchObject({
      dedupe: { key: 'k', mode: 'throttle', states: [], windowMs: WINDOW },
      delayMs: null,
      idempotencyKey: null,
    });
    expect(
      validateNewJob({
        dedupe: { key: 'k', mode: 'unique', states: ['finished', 'pending'], windowMs: WINDOW },
      }).dedupe,
    ).toEqual({ key: 'k', mode: 'unique', states: ['pending', 'finished'], windowMs: WINDOW });
    expect(
      validateNewJob({ dedupe: { key: 'k', mode: 'unique', states: ['running'] } }).dedupe,
    ).toEqual({ key: 'k', mode: 'unique', states: ['running'], windowMs: null });
    expect(validateNewJob({}).dedupe).toBeNull();
    expect(validateNewJob({ dedupe: null as never }).dedupe).toBeNull();
    // An idempotency key left out as null is no idempotency key.
    expect(
      validateNewJob({
        idempotencyKey: null as never,
        dedupe: { key: 'k', mode: 'throttle', windowMs: WINDOW },
      }).dedupe?.key,
    ).toBe('k');
    // Only a debounce sets the run time: a throttled job may wait as any job does.
    expect(
      validateNewJob({ delayMs: 5, dedupe: { key: 'k', mode: 'throttle', windowMs: WINDOW } })
        .delayMs,
    ).toBe(5);
  });

  it('a debounced job runs its window after the enqueue', () => {
    expect(
      validateNewJob({ dedupe: { key: 'k', mode: 'debounce', windowMs: WINDOW } }).delayMs,
    ).toBe(WINDOW);
  });

  it('says what is wrong with each part', () => {
    const issue = (d: unknown, extra: object = {}) =>
      issuesOf(() => validateNewJob({ ...extra, dedupe: d as never }));
    const rule = 'must be an integer from 1 to 315360000000 (10 years)';
    expect(issue('k')).toEqual([{ path: 'dedupe', message: 'must be an object' }]);
    expect(issue({ key: 'k ', mode: 'throttle', windowMs: 1 })).toEqual([
      { path: 'dedupe.key', message: expect.stringMatching(/whitespace|blank/) },
    ]);
    expect(issue({ key: 'k', mode: 'throttle', windowMs: 1 }, { idempotencyKey: 'i' })).toEqual([
      { path: 'dedupe', message: 'cannot be combined with idempotencyKey' },
    ]);
    expect(issue({ key: 'k', mode: 'x', windowMs: 1 })).toEqual([
      { path: 'dedupe.mode', message: 'must be one of throttle, debounce, unique' },
    ]);
    expect(issue({ key: 'k', mode: 'throttle', windowMs: 0 })).toEqual([
      { path: 'dedupe.windowMs', message: rule },
    ]);
    expect(issue({ key: 'k', mode: 'debounce' })).toEqual([
      { path: 'dedupe.windowMs', message: rule },
    ]);
    expect(issue({ key: 'k', mode: 'unique', states: [] })).toEqual([
      { path: 'dedupe.states', message: 'must be a non-empty array of pending, running, finished' },
    ]);
    expect(issue({ key: 'k', mode: 'unique', states: ['later'] })).toEqual([
      { path: 'dedupe.states[0]', message: 'must be one of pending, running, finished, each once' },
    ]);
    expect(issue({ key: 'k', mode: 'throttle', windowMs: 1, states: [] })).toEqual([
      { path: 'dedupe.states', message: "applies to mode 'unique' only" },
    ]);
    expect(issue({ key: 'k', mode: 'unique', states: ['running'], windowMs: 1 })).toEqual([
      { path: 'dedupe.windowMs', message: "applies to 'unique' only with the state 'finished'" },
    ]);
    expect(issue({ key: 'k', mode: 'debounce', windowMs: 1 }, { delayMs: 5 })).toEqual([
      {
        path: 'dedupe',
        message: "mode 'debounce' sets the run time: it cannot be combined with delayMs or runAt",
      },
    ]);
  });

  it('names each bad part of a key', () => {
    const dedupe = (d: unknown, extra: object = {}) =>
      issuesOf(() => validateNewJob({ ...extra, dedupe: d as never })).map((i) => i.path);
    expect(dedupe('k')).toEqual(['dedupe']);
    expect(dedupe([])).toEqual(['dedupe']);
    expect(dedupe({ key: '', mode: 'throttle', windowMs: 1 })).toEqual(['dedupe.key']);
    expect(dedupe({ key: 'k'.repeat(256), mode: 'throttle', windowMs: 1 })).toEqual(['dedupe.key']);
    expect(dedupe({ key: 'k', mode: 'throttle', windowMs: 1 }, { idempotencyKey: 'k' })).toEqual([
      'dedupe',
    ]);
    expect(dedupe({ key: 'k', mode: 'later', windowMs: 1 })).toEqual(['dedupe.mode']);
    expect(dedupe({ key: 'k', mode: 'throttle' })).toEqual(['dedupe.windowMs']);
    expect(dedupe({ key: 'k', mode: 'throttle', windowMs: 1.5 })).toEqual(['dedupe.windowMs']);
    expect(dedupe({ key: 'k', mode: 'debounce', windowMs: 10 * 365 * 24 * 3_600_000 + 1 })).toEqual(
      ['dedupe.windowMs'],
    );
    expect(dedupe({ key: 'k', mode: 'throttle', windowMs: 1, states: ['pending'] })).toEqual([
      'dedupe.states',
    ]);
    expect(dedupe({ key: 'k', mode: 'debounce', windowMs: 1 }, { runAt: new Date() })).toEqual([
      'dedupe',
    ]);
    expect(dedupe({ key: 'k', mode: 'unique', states: ['pending', 'pending'] })).toEqual([
      'dedupe.states[1]',
    ]);
    expect(dedupe({ key: 'k', mode: 'unique', states: ['done'] })).toEqual(['dedupe.states[0]']);
    expect(dedupe({ key: 'k', mode: 'unique' })).toEqual(['dedupe.states']);
    expect(dedupe({ key: 'k', mode: 'unique', states: ['finished'] })).toEqual(['dedupe.windowMs']);
    expect(dedupe({ key: 'k', mode: 'unique', states: ['pending'], windowMs: 1 })).toEqual([
      'dedupe.windowMs',
    ]);
    expect(() =>
      validateNewJob({
        dedupe: { key: 'k', mode: 'throttle', windowMs: 10 * 365 * 24 * 3_600_000 },
      }),
    ).not.toThrow();
  });
});

describe('validateNewJob: dependencies', () => {
  const [a, b, c] = [uuidv7(), uuidv7(), uuidv7()];

  it('takes ids and { jobId, onFailure }, block by default, each once; none is null', () => {
    expect(validateNewJob({ queue: 'q' }).dependsOn).toBeNull();
    expect(
      validateNewJob({ queue: 'q', dependsOn: [a, { jobId: b, onFailure: 'cancel' }] }).dependsOn,
    ).toEqual([
      { id: a, policy: 'block' },
      { id: b, policy: 'cancel' },
    ]);
    expect(validateNewJob({ queue: 'q', dependsOn: [{ jobId: c }] }).dependsOn).toEqual([
      { id: c, policy: 'block' },
    ]);
  });

  it('refuses a bad list, id or policy, a repeat, the job itself and a dedupe key, by path', () => {
    expect(issuesOf(() => validateNewJob({ queue: 'q', dependsOn: [] }))).toEqual([
      { path: 'dependsOn', message: 'must be an array of 1 to 10000 job ids' },
    ]);
    expect(
      issuesOf(() =>
        validateNewJob({ queue: 'q', dependsOn: Array.from({ length: 10_001 }, () => uuidv7()) }),
      ),
    ).toEqual([{ path: 'dependsOn', message: 'must be an array of 1 to 10000 job ids' }]);
    expect(
      validateNewJob({ queue: 'q', dependsOn: Array.from({ length: 10_000 }, () => uuidv7()) })
        .dependsOn,
    ).toHaveLength(10_000);
    expect(
      issuesOf(() =>
        validateNewJob({
          id: a,
          queue: 'q',
          dependsOn: [
            'x',
            { jobId: b, onFailure: 'maybe' as never },
            { jobId: 3 as never },
            c,
            c,
            a,
          ],
        }),
      ).map((i) => i.path),
    ).toEqual([
      'dependsOn[0]',
      'dependsOn[1].onFailure',
      'dependsOn[2].jobId',
      'dependsOn[4]',
      'dependsOn[5]',
    ]);
    expect(
      issuesOf(() =>
        validateNewJob({
          queue: 'q',
          dependsOn: [a],
          dedupe: { key: 'k', mode: 'throttle', windowMs: 1 },
        }),
      ),
    ).toEqual([{ path: 'dependsOn', message: 'cannot be combined with dedupe' }]);
  });

  it('refuses the jobs on a cycle among those enqueued together, and only them', () => {
    const d = uuidv7();
    const issues = issuesOf(() =>
      validateNewJobs([
        { id: a, queue: 'q', dependsOn: [c] },
        { id: b, queue: 'q', dependsOn: [a] },
        { id: c, queue: 'q', dependsOn: [b] },
        { id: d, queue: 'q', dependsOn: [a, uuidv7()] },
      ]),
    );
    expect(issues).toEqual(
      [0, 1, 2].map((i) => ({
        path: `items[${i}].dependsOn`,
        message: 'forms a cycle: a job cannot wait on itself',
      })),
    );
    // A DAG with shared ancestors (a diamond) is no cycle.
    expect(
      validateNewJobs([
        { id: a, queue: 'q' },
        { id: b, queue: 'q', dependsOn: [a] },
        { id: c, queue: 'q', dependsOn: [a] },
        { id: d, queue: 'q', dependsOn: [b, c] },
      ]).map((j) => j.dependsOn?.length ?? 0),
    ).toEqual([0, 1, 1, 2]);
  });

  it('takes null as none, also beside a null dedupe; says what is wrong with each entry', () => {
    expect(validateNewJob({ queue: 'q', dependsOn: null as never }).dependsOn).toBeNull();
    expect(validateNewJob({ queue: 'q', dependsOn: [a], dedupe: null as never }).dependsOn).toEqual(
      [{ id: a, policy: 'block' }],
    );
    expect(
      issuesOf(() =>
        validateNewJob({
          id: a,
          queue: 'q',
          dependsOn: ['x', { jobId: b, onFailure: 'maybe' as never }, c, c, a],
        }),
      ),
    ).toEqual([
      { path: 'dependsOn[0]', message: 'must be a job id (a UUID string)' },
      { path: 'dependsOn[1].onFailure', message: 'must be one of block, ignore, cancel' },
      { path: 'dependsOn[3]', message: 'names a dependency already listed' },
      { path: 'dependsOn[4]', message: 'names the job itself' },
    ]);
  });

  it('flags the jobs on a cycle, not a job that only leads into it', () => {
    const d = uuidv7();
    expect(
      issuesOf(() =>
        validateNewJobs([
          { id: d, queue: 'q', dependsOn: [a] },
          { id: a, queue: 'q', dependsOn: [b] },
          { id: b, queue: 'q', dependsOn: [a] },
        ]),
      ).map((i) => i.path),
    ).toEqual(['items[1].dependsOn', 'items[2].dependsOn']);
  });

  it('checks a chain of 10,000 without overflowing the stack', () => {
    const ids = Array.from({ length: 10_000 }, () => uuidv7());
    const chain = ids.map((id, i) => ({
      id,
      queue: 'q',
      dependsOn: i === 0 ? undefined : [ids[i - 1]],
    }));
    expect(validateNewJobs(chain)).toHaveLength(10_000);
    chain[0] = { id: ids[0], queue: 'q', dependsOn: [ids[9_999]] };
    expect(issuesOf(() => validateNewJobs(chain))).toHaveLength(10_000);
  });

  it('a batch job and a batch callback take no dependsOn', () => {
    expect(
      issuesOf(() =>
        validateNewBatch({
          jobs: [{ queue: 'q', dependsOn: [a] } as never],
          callbacks: { onComplete: { queue: 'q', dependsOn: [a] } as never },
        }),
      ).map((i) => i.path),
    ).toEqual(['jobs[0].dependsOn', 'callbacks.onComplete.dependsOn']);
  });
});

describe('validateNewJobs', () => {
  it('names the index of a bad item and validates all before returning', () => {
    expect(issuesOf(() => validateNewJobs([{}, { priority: 0.5 }, {}, { queue: '' }]))).toEqual([
      { path: 'items[1].priority', message: 'must be an integer within ±1000000' },
      { path: 'items[3].queue', message: 'must be 1–255 characters long' },
    ]);
  });

  it(`refuses more than ${MAX_ENQUEUE_MANY} items`, () => {
    const items = Array.from({ length: MAX_ENQUEUE_MANY + 1 }, () => ({}));
    expect(issuesOf(() => validateNewJobs(items))[0].path).toBe('items');
  });
});

describe('validateNewBatch', () => {
  it('gives every job the batch id and the batch creator unless it names its own', () => {
    const batch = validateNewBatch({
      jobs: [{ queue: 'a' }, { queue: 'b', createdBy: 'job' }],
      callbacks: { onFailure: { queue: 'c', type: 'alert' }, onComplete: { queue: 'c' } },
      createdBy: 'batch',
    });
    expect(isUuid(batch.id)).toBe(true);
    expect(batch.jobs.map((j) => [j.queue, j.batchId, j.createdBy])).toEqual([
      ['a', batch.id, 'batch'],
      ['b', batch.id, 'job'],
    ]);
    // Callbacks in stored order (complete, success, failure), with ids of their own and no batch
    // id in the validated job: a callback is not a member.
    expect(
      batch.callbacks.map((c) => [c.kind, c.job.type, c.job.batchId, c.job.createdBy]),
    ).toEqual([
      ['complete', 'c', null, 'batch'],
      ['failure', 'alert', null, 'batch'],
    ]);
    expect(
      new Set([...batch.jobs, ...batch.callbacks.map((c) => c.job)].map((j) => j.id)).size,
    ).toBe(4);
  });

  it('refuses what a batch cannot hold, naming each field', () => {
    expect(issuesOf(() => validateNewBatch({ jobs: 'x' } as never))).toEqual([
      { path: 'jobs', message: 'must be an array' },
    ]);
    expect(issuesOf(() => validateNewBatch({ jobs: [] }))[0].path).toBe('jobs');
    const tooMany = Array.from({ length: MAX_ENQUEUE_MANY + 1 }, () => ({}));
    expect(issuesOf(() => validateNewBatch({ jobs: tooMany }))[0].message).toContain(
      String(MAX_ENQUEUE_MANY),
    );
    expect(
      issuesOf(() =>
        validateNewBatch({
          jobs: [{ id: uuidv7() } as never, { idempotencyKey: 'k' } as never],
          callbacks: { onSuccess: { runAt: new Date() } as never, later: {} } as never,
          createdBy: 'x'.repeat(101),
        }),
      ).map((i) => i.path),
    ).toEqual([
      'createdBy',
      'jobs[0].id',
      'jobs[1].idempotencyKey',
      'callbacks.later',
      'callbacks.onSuccess.runAt',
    ]);
  });
});

describe('small validators', () => {
  it('assertQueueName', () => {
    expect(assertQueueName('emails.v1:high-priority_2')).toBe('emails.v1:high-priority_2');
    expect(() => assertQueueName('no spaces')).toThrow(ChokaQValidationError);
  });

  it('assertIds de-duplicates and rejects non-UUIDs', () => {
    const id = uuidv7();
    expect(assertIds([id, id])).toEqual([id]);
    expect(issuesOf(() => assertIds([id, 'x']))[0].path).toBe('ids[1]');
  });

  it('assertProgress rounds 0–100 and rejects the rest', () => {
    expect(assertProgress(42.6)).toBe(43);
    expect(() => assertProgress(-1)).toThrow(ChokaQValidationError);
    expect(() => assertProgress(NaN)).toThrow(ChokaQValidationError);
  });

  it('validateEdits leaves absent fields alone and validates present ones', () => {
    expect(validateEdits(undefined)).toEqual({ payload: null, tags: undefined, priority: null });
    expect(validateEdits({ tags: [], priority: 3 })).toEqual({
      payload: null,
      tags: null,
      priority: 3,
    });
    expect(issuesOf(() => validateEdits({ priority: 2 ** 40 }))[0].path).toBe('edits.priority');
  });
});
