import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import type { JobView } from '../../libs/chokaq/src/interfaces/job-view.interface';
import { LIMITS } from '../../libs/chokaq/src/validation/limits';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { backdate, claim, expectValidationError, startJob, uniqueQueue } from './helpers';

const HOUR = 3_600_000;

/** A W3C trace context as a propagator writes it into a carrier. */
function context(n: number): Record<string, string> {
  const span = n.toString(16).padStart(16, '0');
  return {
    traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${span}-01`,
    tracestate: `chokaq=t${n},vendor=opaque`,
  };
}

/**
 * The trace context of the enqueuing code (issue 15, traces): stored with the job by enqueue and
 * enqueueMany, returned by the claim, and copied by every move, so each run can join the
 * producer's trace: hot → archive, hot → DLQ (a failed run, an admin move, a cancel, a zombie),
 * DLQ → hot (resurrect by id, many, by filter), and a zombie or a retry back to Pending. The edge
 * refuses what no column can store.
 */
describeEachDialect('storage contract: trace context', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  async function view(id: string): Promise<JobView> {
    const job = await db.storage.getJob(id);
    if (!job) throw new Error(`job ${id} not found`);
    return job;
  }

  it('enqueue and enqueueMany store it; the claim returns it; a job without one has none', async () => {
    const queue = uniqueQueue('trace.enqueue');
    const { id } = await db.storage.enqueue({ queue, traceContext: context(1) });
    const many = await db.storage.enqueueMany([
      { queue, traceContext: context(2) },
      { queue },
      { queue, traceContext: { traceparent: context(3).traceparent } },
    ]);
    const expected = new Map<string, Record<string, string> | null>([
      [id, context(1)],
      [many[0].id, context(2)],
      [many[1].id, null],
      [many[2].id, { traceparent: context(3).traceparent }],
    ]);
    for (const [jobId, traceContext] of expected) {
      expect(await view(jobId)).toMatchObject({ pillar: 'hot', traceContext });
    }
    const c = await claim(db.storage, queue, 10);
    expect(new Map(c.rows.map((r) => [r.id, r.traceContext]))).toEqual(expected);
  });

  it('the archive keeps it', async () => {
    const queue = uniqueQueue('trace.archive');
    const lease = await startJob(db.storage, queue, { traceContext: context(4) });
    expect(await db.storage.archiveSucceeded([{ ...lease, durationMs: 1 }])).toHaveLength(1);
    expect(await view(lease.id)).toMatchObject({ pillar: 'archive', traceContext: context(4) });
  });

  it('every way into the DLQ keeps it, and every resurrect brings it back', async () => {
    const queue = uniqueQueue('trace.dlq');
    // A failed run (the owner's move), an admin move by id, a cancel, a zombie.
    const failed = await startJob(db.storage, queue, { traceContext: context(5) });
    expect(
      await db.storage.moveToDlq(failed, { reason: FailureReason.FatalError, error: 'boom' }),
    ).toBe(1);
    const { id: moved } = await db.storage.enqueue({ queue, traceContext: context(6) });
    expect(
      await db.storage.moveToDlq(
        { id: moved },
        { reason: FailureReason.FatalError, error: 'admin' },
      ),
    ).toBe(1);
    const { id: cancelled } = await db.storage.enqueue({ queue, traceContext: context(7) });
    expect((await db.storage.cancel([cancelled])).cancelled).toEqual([cancelled]);
    const zombie = await startJob(db.storage, queue, { traceContext: context(8) });
    await backdate(db, 'hot', 'heartbeat_utc', [zombie.id], HOUR);
    expect((await db.storage.archiveZombies(600_000)).dlq).toEqual([zombie.id]);

    const dead = { [failed.id]: 5, [moved]: 6, [cancelled]: 7, [zombie.id]: 8 };
    for (const [id, n] of Object.entries(dead)) {
      expect(await view(id)).toMatchObject({ pillar: 'dlq', traceContext: context(n) });
    }

    // Back to the hot table, by id, by ids, by filter: each with its own context.
    expect(await db.storage.resurrect(failed.id, { payload: { edited: true } })).toBe(1);
    expect((await db.storage.resurrectMany([moved, cancelled])).sort()).toEqual(
      [moved, cancelled].sort(),
    );
    expect(await db.storage.resurrectByFilter({ queue }, 10)).toEqual([zombie.id]);
    for (const [id, n] of Object.entries(dead)) {
      expect(await view(id)).toMatchObject({ pillar: 'hot', traceContext: context(n) });
    }
    const c = await claim(db.storage, queue, 10);
    expect(Object.fromEntries(c.rows.map((r) => [r.id, r.traceContext]))).toEqual(
      Object.fromEntries(Object.entries(dead).map(([id, n]) => [id, context(n)])),
    );
  });

  it('a retry and a zombie returned to Pending keep it', async () => {
    const queue = uniqueQueue('trace.retry');
    const retried = await startJob(db.storage, queue, { traceContext: context(9) });
    expect(await db.storage.rescheduleForRetry(retried, 0, 'Error: again')).toBe(1);
    const zombie = await startJob(db.storage, queue, { type: 'z', traceContext: context(10) });
    await backdate(db, 'hot', 'heartbeat_utc', [zombie.id], HOUR);
    const rescued = await db.storage.archiveZombies(600_000, 10, [{ queue, retry: true }]);
    expect(rescued.retried).toEqual([zombie.id]);
    // The rescue reports the row it found, trace context included.
    expect(rescued.jobs[0].job.traceContext).toEqual(context(10));
    const c = await claim(db.storage, queue, 10);
    expect(Object.fromEntries(c.rows.map((r) => [r.id, r.traceContext]))).toEqual({
      [retried.id]: context(9),
      [zombie.id]: context(10),
    });
  });

  it('the edge refuses a trace context no column can store, naming the field', async () => {
    const queue = uniqueQueue('trace.invalid');
    const long = { traceparent: 'x'.repeat(LIMITS.traceContext) };
    const bad: Array<[unknown, string]> = [
      ['00-abc', 'traceContext'],
      [['traceparent'], 'traceContext'],
      [{ traceparent: 'naïve' }, 'traceContext.traceparent'],
      [{ traceparent: 'a\u0000b' }, 'traceContext.traceparent'],
      [{ traceparent: 42 }, 'traceContext.traceparent'],
      [{ 'trace parent': 'x' }, 'traceContext.trace parent'],
      [long, 'traceContext'],
    ];
    for (const [traceContext, path] of bad) {
      await expectValidationError(
        db.storage.enqueue({ queue, traceContext: traceContext as Record<string, string> }),
        path,
      );
    }
    await expectValidationError(
      db.storage.enqueueMany([{ queue }, { queue, traceContext: long as Record<string, string> }]),
      'items[1].traceContext',
    );
    expect((await claim(db.storage, queue, 10)).rows).toEqual([]);
    // The longest accepted context round-trips whole.
    const fits = { traceparent: 'x'.repeat(LIMITS.traceContext - '{"traceparent":""}'.length) };
    const { id } = await db.storage.enqueue({ queue, traceContext: fits });
    expect((await view(id)).traceContext).toEqual(fits);
  });
});
