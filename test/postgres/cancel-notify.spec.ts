import { randomUUID } from 'node:crypto';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { ChokaQWorker } from '../../libs/chokaq/src/runtime/chokaq-worker';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { newWorkerId } from '../contract/helpers';
import { TestHandlers } from '../runtime/support/handlers';
import { testOptions } from '../runtime/support/options';
import { RecordingLogger } from '../runtime/support/silent-logger';
import { deferred, waitFor } from '../support/wait-for';
import { createTestSchema, describePostgres } from '../support/test-database';

/**
 * A cancel of a running job reaches its owner through `<schema>:cancel` at commit, not at the
 * owner's next heartbeat (SPEC §3 `cancel`). Every heartbeat here is 30 s away, so only the
 * notification can abort a run within the 2 s these tests wait.
 */
describePostgres('PostgreSQL cancel notifications', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
  let producer: JobStorage;
  let owner: JobStorage;

  beforeAll(async () => {
    producer = await db.openStorage();
    owner = await db.openStorage({ autoCreateSchema: false });
  });
  afterAll(() => db.close());

  /** Sessions whose last statement LISTENed on this schema's enqueue channel. */
  const listenSessions = () =>
    db.sql<{ pid: number; query: string }>(
      `SELECT pid, query FROM pg_stat_activity WHERE position($1 in query) > 0`,
      [`LISTEN "${db.schema}"`],
    );

  /** Claims and starts `n` jobs of `queue` (Processing, owned by a throwaway worker id). */
  async function running(queue: string, n: number): Promise<string[]> {
    await producer.enqueueMany(Array.from({ length: n }, () => ({ queue })));
    const jobs = await producer.fetchNextBatch({
      workerId: newWorkerId(),
      leaseId: randomUUID(),
      limit: n,
      start: n,
      handled: { queues: [queue], types: [] },
    });
    expect(jobs).toHaveLength(n);
    return jobs.map((job) => job.id);
  }

  it('reports the Processing jobs another process cancels, on the one LISTEN session that hears enqueues', async () => {
    const queues: Array<string | undefined> = [];
    const cancels: string[] = [];
    const unsubscribe = await owner.subscribe(
      (queue) => queues.push(queue),
      (ids) => cancels.push(...ids),
    );
    try {
      const sessions = await listenSessions();
      expect(sessions).toHaveLength(1);
      expect(sessions[0].query).toContain(':cancel"');

      // Many ids in one cancel: one notification each, every one delivered.
      const ids = await running('cancel.many', 150);
      const { id: pending } = await producer.enqueue({ queue: 'cancel.pending' });
      const result = await producer.cancel([...ids, pending]);
      expect(result.cancelRequested).toHaveLength(150);
      expect(result.cancelled).toEqual([pending]);
      await waitFor('every cancel notification', () => new Set(cancels).size === 150);
      expect(new Set(cancels)).toEqual(new Set(ids));

      // Anything but a job id on the channel is ignored, and enqueues are still heard.
      const [{ channel }] = await db.sql<{ channel: string }>(
        `SELECT $1::text || ':cancel' AS channel`,
        [db.schema],
      );
      await db.sql(`SELECT pg_notify($1, 'not-a-job-id'), pg_notify($1, '')`, [channel]);
      await producer.enqueue({ queue: 'after.cancel' });
      await waitFor('the enqueue notification', () => queues.includes('after.cancel'));
      expect(cancels).toHaveLength(150);
    } finally {
      await unsubscribe!();
    }
    await waitFor('no LISTEN session left', async () => (await listenSessions()).length === 0);
  });

  it('LISTENs on the cancel channel again when the session is re-established', async () => {
    const resilient = await db.openStorage({ autoCreateSchema: false, notifyReconnectMs: 50 });
    const cancels: string[] = [];
    const unsubscribe = await resilient.subscribe(
      () => undefined,
      (ids) => cancels.push(...ids),
    );
    try {
      const [before] = await listenSessions();
      await db.sql('SELECT pg_terminate_backend($1)', [before.pid]);
      await waitFor('a new LISTEN session', async () => {
        const now = await listenSessions();
        return now.length === 1 && now[0].pid !== before.pid && now[0].query.includes(':cancel"');
      });
      const [id] = await running('cancel.reconnect', 1);
      await producer.cancel([id]);
      await waitFor('the cancel notification', () => cancels.includes(id));
    } finally {
      await unsubscribe!();
    }
  });

  it('aborts a running handler within 2 s of cancel() in another process, with the heartbeat 30 s away', async () => {
    const started = deferred<string>();
    let abortedReason: unknown;
    const handlers = new TestHandlers().add('cancel.live', async (_payload, ctx) => {
      started.resolve(ctx.id);
      await new Promise<void>((resolve) => {
        const done = () => {
          abortedReason = ctx.signal.reason;
          resolve();
        };
        if (ctx.signal.aborted) done();
        else ctx.signal.addEventListener('abort', done, { once: true });
      });
      throw ctx.signal.reason;
    });
    const worker = new ChokaQWorker({
      storage: owner,
      handlers,
      options: testOptions({ heartbeat: { intervalMs: 30_000 } }),
      logger: new RecordingLogger(),
    });
    try {
      await worker.start();
      const { id } = await producer.enqueue({ queue: 'cancel.live' });
      expect(await started.promise).toBe(id);
      expect((await producer.cancel([id])).cancelRequested).toEqual([id]);
      await waitFor('the handler signal to abort', () => abortedReason !== undefined, {
        timeoutMs: 2_000,
      });
      const job = await waitFor('the cancelled job in the DLQ', async () => {
        const j = await producer.getJob(id);
        return j?.pillar === 'dlq' ? j : null;
      });
      expect(job.failureReason).toBe(FailureReason.Cancelled);
    } finally {
      await worker.stop();
    }
  });
});
