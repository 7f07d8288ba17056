import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { claim, expectValidationError, uniqueQueue } from './helpers';

/**
 * The payload version of a job (issue 17, part 4b): enqueue stores it (1 when none is given), every
 * move keeps it, and the claim takes a job of an exact `(queue, type)` pair only when its version
 * is within the pair's `{ minVersion, maxVersion }` (1 to 1 when absent), so a process never claims
 * a payload its handler cannot run. Rows it cannot run stay Pending, attempts untouched, and do
 * not hide the due rows behind them. Queue-wide handlers take every version.
 */
describeEachDialect('storage contract: payload version', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  const pair = (queue: string, type: string, minVersion?: number, maxVersion?: number) => ({
    queues: [],
    types: [{ queue, type, minVersion, maxVersion }],
  });

  it('enqueue and enqueueMany store it, 1 when none is given', async () => {
    const queue = uniqueQueue('pv.enqueue');
    const { id } = await db.storage.enqueue({ queue, type: 't', payloadVersion: 3 });
    const [a, b] = await db.storage.enqueueMany([
      { queue, type: 't', payloadVersion: 2 },
      { queue, type: 't' },
    ]);
    expect(await db.storage.getJob(id)).toMatchObject({ pillar: 'hot', payloadVersion: 3 });
    expect(await db.storage.getJob(a.id)).toMatchObject({ payloadVersion: 2 });
    expect(await db.storage.getJob(b.id)).toMatchObject({ payloadVersion: 1 });
  });

  it('the claim takes only the versions of the pair’s range; queue-wide handlers take every one', async () => {
    const queue = uniqueQueue('pv.range');
    const [v1, v2, v3] = await db.storage.enqueueMany(
      [1, 2, 3].map((payloadVersion) => ({ queue, type: 't', payloadVersion })),
    );
    // No range: an unversioned handler, 1 to 1.
    expect((await claim(db.storage, pair(queue, 't'), 10)).rows.map((r) => r.id)).toEqual([v1.id]);
    expect((await claim(db.storage, pair(queue, 't', 3, 3), 10)).rows.map((r) => r.id)).toEqual([
      v3.id,
    ]);
    expect((await claim(db.storage, pair(queue, 't', 4, 9), 10)).rows).toEqual([]);
    const wide = await db.storage.enqueue({ queue, type: 'other', payloadVersion: 7 });
    expect((await claim(db.storage, queue, 10)).rows.map((r) => r.id).sort()).toEqual(
      [v2.id, wide.id].sort(),
    );
  });

  it('rows of a newer version stay Pending with 0 attempts and do not hide the older due rows behind them', async () => {
    const queue = uniqueQueue('pv.behind');
    // Forty newer rows first in claim order (higher priority, older), then one the handler runs.
    const newer = await db.storage.enqueueMany(
      Array.from({ length: 40 }, () => ({ queue, type: 't', priority: 50, payloadVersion: 2 })),
    );
    const { id: older } = await db.storage.enqueue({ queue, type: 't', priority: 1 });
    const c = await claim(db.storage, pair(queue, 't', 1, 1), 1, undefined, { start: 1 });
    expect(c.rows.map((r) => [r.id, r.payloadVersion])).toEqual([[older, 1]]);
    for (const { id } of newer) {
      expect(await db.storage.getJob(id)).toMatchObject({
        status: JobStatus.Pending,
        attemptCount: 0,
        workerId: null,
      });
    }
    // A process that runs version 2 takes them.
    expect((await claim(db.storage, pair(queue, 't', 1, 2), 100)).rows).toHaveLength(40);
  });

  it('the archive, the DLQ, a resurrect and a release back to Pending keep it', async () => {
    const queue = uniqueQueue('pv.moves');
    const handled = pair(queue, 't', 4, 4);
    const ids = (
      await db.storage.enqueueMany(
        Array.from({ length: 3 }, () => ({ queue, type: 't', payloadVersion: 4 })),
      )
    ).map((r) => r.id);
    const c = await claim(db.storage, handled, 3);
    const [archived, dead, retried] = ids.map((id) => c.leases.find((l) => l.id === id)!);
    await db.storage.markAsProcessing([archived, dead]);
    await db.storage.archiveSucceeded([{ ...archived, durationMs: 1 }]);
    await db.storage.moveToDlq(dead, { reason: FailureReason.FatalError, error: 'x' });
    await db.storage.release([retried], 0);
    expect(await db.storage.getJob(archived.id)).toMatchObject({
      pillar: 'archive',
      payloadVersion: 4,
    });
    expect(await db.storage.getJob(dead.id)).toMatchObject({ pillar: 'dlq', payloadVersion: 4 });
    expect(await db.storage.getJob(retried.id)).toMatchObject({ pillar: 'hot', payloadVersion: 4 });
    expect(await db.storage.resurrect(dead.id)).toBe(1);
    expect(
      (await claim(db.storage, handled, 10)).rows.map((r) => [r.id, r.payloadVersion]).sort(),
    ).toEqual(
      [
        [dead.id, 4],
        [retried.id, 4],
      ].sort(),
    );
  });

  it('the edge refuses a version or a range no column can hold', async () => {
    const queue = uniqueQueue('pv.edge');
    for (const payloadVersion of [0, -1, 1.5, 2 ** 31, '2' as never]) {
      await expectValidationError(db.storage.enqueue({ queue, payloadVersion }), 'payloadVersion');
    }
    await expectValidationError(
      db.storage.enqueueMany([{ queue }, { queue, payloadVersion: 0 }]),
      'items[1].payloadVersion',
    );
    await expectValidationError(
      claim(db.storage, pair(queue, 't', 0, 1), 1),
      'handled.types[0].minVersion',
    );
    await expectValidationError(
      claim(db.storage, pair(queue, 't', 1, 2 ** 31), 1),
      'handled.types[0].maxVersion',
    );
    await expectValidationError(
      claim(db.storage, pair(queue, 't', 3, 2), 1),
      'handled.types[0].minVersion',
    );
  });
});
