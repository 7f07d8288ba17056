import { type JobOutcome } from '../../libs/chokaq/src/interfaces/job-outcome.interface';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { ChokaQWorker } from '../../libs/chokaq/src/runtime/chokaq-worker';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { deferred, waitFor } from '../support/wait-for';
import { TestHandlers } from './support/handlers';
import { testOptions } from './support/options';
import { RecordingLogger } from './support/silent-logger';

/**
 * The start check (SPEC §4): a buffered job is started by `markAsProcessing` under its lease, and
 * its handler runs only if that statement changed its row. A job cancelled (or released, rescued,
 * re-claimed) while it waited in the buffer has no row under that lease any more: the worker must
 * not run it, must give its slot to the next job, and must count a state-transition conflict.
 *
 * Deterministic on real storage: with one slot, the first job holds it until the test opens its
 * gate, so the cancelled job is still in the buffer (Fetched) when it is cancelled, and the start
 * that follows is the one the test is about.
 */
describeEachDialect('worker start check', (fixture) => {
  let db: TestDatabase;
  let workers: ChokaQWorker[];

  beforeEach(async () => {
    db = await fixture.create();
    workers = [];
  });

  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop().catch(() => undefined)));
    await db.close();
  });

  it('a buffered job cancelled before its start does not run; its slot goes to the next job; a conflict is counted', async () => {
    const holding = deferred();
    const gate = deferred();
    const ran: string[] = [];
    let conflictsSeenByNext = -1;
    const queue = 'start.check';
    const handlers = new TestHandlers()
      .add(
        queue,
        async () => {
          ran.push('hold');
          holding.resolve();
          await gate.promise;
        },
        { type: 'hold' },
      )
      .add(queue, () => ran.push('victim'), { type: 'victim' })
      .add(
        queue,
        () => {
          ran.push('next');
          conflictsSeenByNext = w.stats().conflicts;
        },
        { type: 'next' },
      );
    const w = new ChokaQWorker({
      storage: db.storage,
      handlers,
      // One slot; a heartbeat too slow to matter (the start check must not depend on it).
      options: testOptions({
        // The buffer of Fetched rows is what this checks: no starting ahead (PostgreSQL).
        worker: { concurrency: 1, prefetch: 10, batchSize: 5, startAhead: 0 },
        heartbeat: { intervalMs: 60_000 },
      }),
      logger: new RecordingLogger(),
    });
    workers.push(w);
    const outcomes: JobOutcome[] = [];
    w.onOutcome((o) => outcomes.push(o));

    // Claim order is priority first: hold takes the slot, victim and next wait in the buffer.
    const hold = await db.storage.enqueue({ queue, type: 'hold', priority: 100 });
    const victim = await db.storage.enqueue({ queue, type: 'victim', priority: 50 });
    const next = await db.storage.enqueue({ queue, type: 'next', priority: 1 });
    await w.start();
    await holding.promise;
    await waitFor('victim and next buffered', () => w.stats().buffered === 2, {
      timeoutMs: 10_000,
    });
    expect(await db.storage.getJob(victim.id)).toMatchObject({
      pillar: 'hot',
      status: JobStatus.Fetched,
    });
    expect(w.stats().conflicts).toBe(0);

    // Cancelled while buffered: the row leaves the hot table, so the start finds no row to change.
    expect(await db.storage.cancel([victim.id])).toEqual({
      cancelled: [victim.id],
      cancelRequested: [],
    });
    gate.resolve();

    await waitFor(
      'next archived',
      async () => (await db.storage.getJob(next.id))?.pillar === 'archive',
      { timeoutMs: 10_000 },
    );
    expect(ran).toEqual(['hold', 'next']);
    // The refused start freed the slot before next was given it (one slot: next ran after it).
    expect(conflictsSeenByNext).toBe(1);
    expect(w.stats()).toMatchObject({ conflicts: 1, buffered: 0, running: 0 });
    expect(outcomes).toContainEqual(
      expect.objectContaining({ id: victim.id, outcome: 'released', applied: false }),
    );
    expect(outcomes.filter((o) => o.id === victim.id)).toHaveLength(1);
    // The cancel stands, with no attempt spent; the others finished normally.
    expect(await db.storage.getJob(victim.id)).toMatchObject({
      pillar: 'dlq',
      failureReason: FailureReason.Cancelled,
      attemptCount: 0,
    });
    expect(await db.storage.getJob(hold.id)).toMatchObject({ pillar: 'archive' });
  });
});
