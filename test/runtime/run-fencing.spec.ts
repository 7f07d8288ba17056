import type { JobOutcome } from '../../libs/chokaq/src/interfaces/job-outcome.interface';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { CircuitBreakers } from '../../libs/chokaq/src/runtime/circuit-breaker';
import { CompletionBatcher } from '../../libs/chokaq/src/runtime/completion-batcher';
import { JobExecutor } from '../../libs/chokaq/src/runtime/job-executor';
import { JobProcessor } from '../../libs/chokaq/src/runtime/job-processor';
import { QueueControls } from '../../libs/chokaq/src/runtime/queue-controls';
import { claim, newWorkerId, uniqueQueue } from '../contract/helpers';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { deferred, waitFor } from '../support/wait-for';
import { TestHandlers } from './support/handlers';
import { testOptions } from './support/options';
import { RecordingLogger } from './support/silent-logger';

/**
 * One process can hold two runs of one job at once: its event loop stalled past the zombie
 * timeout, another process rescued the job (or an operator resurrected it), and this very worker
 * claimed it again while the first run's completion was still unwritten. Everything that tracks a
 * run is keyed by (id, leaseId), so the stale run can neither steal the new run's archive nor drop
 * its heartbeat. Driven step by step (no timing): the handlers wait on gates the test opens.
 */
describeEachDialect('runtime: runs are keyed by (id, leaseId)', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  /** A processor and batcher of one worker over the real storage; handlers wait on `gates`. */
  function harness(queue: string, maxBatch: number) {
    const workerId = newWorkerId('same');
    const logger = new RecordingLogger();
    const options = testOptions({ worker: { concurrency: 4 } });
    const gates: Array<ReturnType<typeof deferred<void>>> = [];
    const started: number[] = [];
    const handlers = new TestHandlers().add(queue, async (_payload, ctx) => {
      const gate = deferred<void>();
      gates.push(gate);
      started.push(ctx.attempt);
      await gate.promise;
    });
    const batcher = new CompletionBatcher(db.storage, logger, { maxBatch, flushDelayMs: 60_000 });
    const outcomes: JobOutcome[] = [];
    const processor = new JobProcessor({
      storage: db.storage,
      handlers,
      options,
      workerId,
      executor: new JobExecutor([], logger),
      batcher,
      breakers: new CircuitBreakers(options.circuitBreaker),
      controls: new QueueControls(db.storage),
      logger,
      onOutcome: (o) => outcomes.push(o),
    });
    return { workerId, gates, started, batcher, processor, outcomes };
  }

  /**
   * Claims and starts the job under a new lease of `workerId`, then makes it claimable again the
   * way an operator would (DLQ as Zombie, resurrect) while the first run is still in its handler.
   */
  async function twoRuns(h: ReturnType<typeof harness>, queue: string) {
    const { id } = await db.storage.enqueue({ queue });
    const first = await claim(db.storage, queue, 1, h.workerId);
    h.processor.accept(first.rows, { workerId: h.workerId, leaseId: first.leaseId });
    await waitFor('the first run to start', () => h.gates.length === 1);

    expect(await db.storage.moveToDlq({ id }, { reason: FailureReason.Zombie, error: 'z' })).toBe(
      1,
    );
    expect(await db.storage.resurrect(id)).toBe(1);
    const second = await claim(db.storage, queue, 1, h.workerId);
    expect(second.rows.map((r) => r.id)).toEqual([id]);
    h.processor.accept(second.rows, { workerId: h.workerId, leaseId: second.leaseId });
    await waitFor('the second run to start', () => h.gates.length === 2);
    return { id, stale: first.leases[0], current: second.leases[0] };
  }

  it("finishing the stale run keeps the new run's lease owned and beating", async () => {
    const queue = uniqueQueue('runs.heartbeat');
    const h = harness(queue, 1);
    const { id, stale, current } = await twoRuns(h, queue);

    h.gates[0].resolve();
    await waitFor('the stale run to be refused', () => h.outcomes.length === 1);
    expect(h.outcomes[0]).toMatchObject({
      id,
      leaseId: stale.leaseId,
      outcome: 'succeeded',
      applied: false,
    });
    // The new run is still running: its lease must still be renewed by the heartbeat.
    expect(h.processor.leases()).toEqual([current]);
    expect(await db.storage.keepAlive(h.workerId, h.processor.leases())).toMatchObject({
      touched: 1,
    });

    h.gates[1].resolve();
    await waitFor('the new run to be archived', () => h.outcomes.length === 2);
    expect(h.outcomes[1]).toMatchObject({ id, leaseId: current.leaseId, applied: true });
    expect((await db.storage.getJob(id))?.pillar).toBe('archive');
    expect(h.processor.leases()).toEqual([]);
  });

  it('two completions of one id in one batch: the current run is archived, the stale one refused', async () => {
    const queue = uniqueQueue('runs.batch');
    const h = harness(queue, 2);
    const { id, stale, current } = await twoRuns(h, queue);

    h.gates[0].resolve();
    await waitFor('the stale completion to be queued', () => h.batcher.size === 1);
    expect(h.outcomes).toEqual([]);
    h.gates[1].resolve(); // the second completion fills the batch: one write takes both
    await waitFor('the batch to be written', () => h.outcomes.length === 2);

    const byLease = new Map(h.outcomes.map((o) => [o.leaseId, o]));
    expect(byLease.get(stale.leaseId)).toMatchObject({ id, outcome: 'succeeded', applied: false });
    expect(byLease.get(current.leaseId)).toMatchObject({ id, outcome: 'succeeded', applied: true });
    expect(h.batcher.refusedCount).toBe(1);
    expect((await db.storage.getJob(id))?.pillar).toBe('archive');
    expect(h.processor.leases()).toEqual([]);
  });

  it('the storage archives the matching lease of two given for one id', async () => {
    const queue = uniqueQueue('runs.storage');
    const h = harness(queue, 2);
    const { id, stale, current } = await twoRuns(h, queue);
    expect(
      await db.storage.archiveSucceeded([
        { ...stale, durationMs: 1 },
        { ...current, durationMs: 2 },
      ]),
    ).toEqual([{ id, leaseId: current.leaseId }]);
    h.gates.forEach((g) => g.resolve());
    await waitFor('both runs to be refused', () => h.outcomes.length === 2);
  });
});
