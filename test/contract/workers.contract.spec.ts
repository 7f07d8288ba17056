import type { WorkerHeartbeat } from '../../libs/chokaq/src/interfaces/worker.interface';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { ChokaQAdmin } from '../../libs/chokaq/src/admin/chokaq-admin.service';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import { testOptions } from '../runtime/support/options';
import { expectValidationError, newWorkerId, uniqueQueue } from './helpers';

/**
 * The Workers table: each worker process upserts its row with its heartbeat, marks it stopped on a
 * clean shutdown, and any process (a producer-only one too) lists the rows with a state computed
 * from the database clock: `stopped` when a stop was recorded, else `lost` when not seen within the
 * threshold, else `draining` or `running`. Retention removes rows not seen for its window.
 * Each test has its own database, since the table is shared by every worker of it.
 */
describeEachDialect('storage contract: workers table', (fixture) => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await fixture.create();
  });
  afterEach(async () => {
    await db?.close();
  });

  const MINUTE = 60_000;

  function report(workerId: string, patch: Partial<WorkerHeartbeat> = {}): WorkerHeartbeat {
    return {
      workerId,
      host: 'test-host',
      pid: 4242,
      libraryVersion: '9.8.7',
      concurrency: 10,
      running: 2,
      handled: { queues: ['emails'], types: [{ queue: 'billing', type: 'invoice.v2' }] },
      circuits: { 'billing/invoice.v2': 'open' },
      draining: false,
      starting: true,
      ...patch,
    };
  }

  /** Moves a time of a worker's row back by `ms` (the database clock cannot be moved, rows can). */
  async function backdateWorker(
    workerId: string,
    ms: number,
    column: 'last_seen_utc' | 'started_at_utc' = 'last_seen_utc',
  ): Promise<void> {
    const c = db.column(column);
    const set =
      db.dialect === 'sqlite'
        ? `${c} = ${c} - ${db.param(1)}`
        : db.dialect === 'postgres'
          ? `${c} = ${c} - (${db.param(1)}::bigint * interval '1 millisecond')`
          : `${c} = DATEADD(millisecond, -${db.param(1)}, ${c})`;
    await db.sql(
      `UPDATE ${db.table('workers')} SET ${set} WHERE ${db.column('worker_id')} = ${db.param(2)}`,
      [ms, workerId],
    );
  }

  async function listed(storage: JobStorage, workerId: string, lostAfterMs = 10 * MINUTE) {
    return (await storage.listWorkers({ lostAfterMs })).find((w) => w.workerId === workerId);
  }

  it('a first report creates the row with every field and the database clock; it is running', async () => {
    const id = newWorkerId();
    const before = await db.storage.now();
    await db.storage.upsertWorker(report(id));
    const after = await db.storage.now();

    const row = await listed(db.storage, id);
    expect(row).toEqual({
      workerId: id,
      host: 'test-host',
      pid: 4242,
      libraryVersion: '9.8.7',
      startedAtUtc: expect.any(Date),
      lastSeenUtc: expect.any(Date),
      stoppedAtUtc: null,
      concurrency: 10,
      running: 2,
      handled: { queues: ['emails'], types: [{ queue: 'billing', type: 'invoice.v2' }] },
      circuits: { 'billing/invoice.v2': 'open' },
      draining: false,
      state: 'running',
    });
    // Stamped by the database (PostgreSQL's now() is the statement's transaction start).
    for (const time of [row!.startedAtUtc, row!.lastSeenUtc]) {
      expect(time.getTime()).toBeGreaterThanOrEqual(before.getTime() - 5);
      expect(time.getTime()).toBeLessThanOrEqual(after.getTime() + 5);
    }
    expect(await db.count('workers')).toBe(1);
  });

  it('a later report updates the row and keeps its start; draining shows as draining', async () => {
    const id = newWorkerId();
    await db.storage.upsertWorker(report(id));
    await backdateWorker(id, 5 * MINUTE, 'started_at_utc');
    await backdateWorker(id, 5 * MINUTE);
    const first = (await listed(db.storage, id))!;

    await db.storage.upsertWorker(
      report(id, { starting: false, running: 7, draining: true, circuits: {} }),
    );
    const later = (await listed(db.storage, id))!;
    expect(later).toMatchObject({ running: 7, draining: true, circuits: {}, state: 'draining' });
    expect(later.startedAtUtc).toEqual(first.startedAtUtc);
    expect(later.lastSeenUtc.getTime()).toBeGreaterThan(first.lastSeenUtc.getTime() + 4 * MINUTE);
    expect(await db.count('workers')).toBe(1);
  });

  it('a clean stop marks the row stopped; later reports keep it stopped until the worker starts again', async () => {
    const id = newWorkerId();
    await db.storage.upsertWorker(report(id));
    await backdateWorker(id, 60 * MINUTE, 'started_at_utc');
    const started = (await listed(db.storage, id))!.startedAtUtc;

    expect(await db.storage.markWorkerStopped(id)).toBe(1);
    expect(await db.storage.markWorkerStopped(id)).toBe(0);
    expect(await db.storage.markWorkerStopped(newWorkerId('nobody'))).toBe(0);
    const stopped = (await listed(db.storage, id))!;
    expect(stopped).toMatchObject({ state: 'stopped', running: 0, stoppedAtUtc: expect.any(Date) });
    expect(stopped.stoppedAtUtc!.getTime()).toBe(stopped.lastSeenUtc.getTime());

    // A stopped row stays stopped however long ago it was seen (the stop wins over lost).
    await backdateWorker(id, 60 * MINUTE);
    expect((await listed(db.storage, id))!.state).toBe('stopped');
    // A report that is not a start (a late beat) does not revive it …
    await db.storage.upsertWorker(report(id, { starting: false }));
    expect((await listed(db.storage, id))!.state).toBe('stopped');
    // … a new run under the same worker id does, with a new start.
    await backdateWorker(id, 60 * MINUTE);
    await db.storage.upsertWorker(report(id));
    const again = (await listed(db.storage, id))!;
    expect(again).toMatchObject({ state: 'running', stoppedAtUtc: null });
    expect(again.startedAtUtc.getTime()).toBeGreaterThan(started.getTime() + 59 * MINUTE);
    expect(again.startedAtUtc).toEqual(again.lastSeenUtc);
  });

  it('a worker not seen for longer than lostAfterMs is lost; a shorter silence is not', async () => {
    const lost = newWorkerId('lost');
    const alive = newWorkerId('alive');
    const leaving = newWorkerId('leaving');
    await db.storage.upsertWorker(report(lost));
    await db.storage.upsertWorker(report(alive));
    await db.storage.upsertWorker(report(leaving, { draining: true }));
    await backdateWorker(lost, 20 * MINUTE);
    await backdateWorker(leaving, 20 * MINUTE);
    await backdateWorker(alive, MINUTE);

    const states = async (lostAfterMs: number) =>
      Object.fromEntries(
        (await db.storage.listWorkers({ lostAfterMs })).map((w) => [w.workerId, w.state]),
      );
    expect(await states(10 * MINUTE)).toEqual({
      [lost]: 'lost',
      [alive]: 'running',
      // A draining worker that went silent is lost too: it never said it stopped.
      [leaving]: 'lost',
    });
    expect(await states(30 * MINUTE)).toEqual({
      [lost]: 'running',
      [alive]: 'running',
      [leaving]: 'draining',
    });
    // Without a threshold: the default zombie timeout (10 minutes).
    expect((await db.storage.listWorkers()).find((w) => w.workerId === lost)?.state).toBe('lost');
  });

  it("ChokaQAdmin.listWorkers judges lost by the zombie timeout, not the heartbeat's interval", async () => {
    const id = newWorkerId('beat-late');
    await db.storage.upsertWorker(report(id));
    await backdateWorker(id, 1_500);
    const admin = new ChokaQAdmin(
      db.storage,
      testOptions({ heartbeat: { intervalMs: 1_000 }, rescue: { zombieTimeoutMs: 30_000 } }),
      new WorkerRegistry(),
    );
    expect((await admin.listWorkers()).find((w) => w.workerId === id)?.state).toBe('running');
    await backdateWorker(id, 31_000);
    expect((await admin.listWorkers()).find((w) => w.workerId === id)?.state).toBe('lost');
  });

  it('lists from any storage, a producer-only process that never reported included, most recently seen first', async () => {
    const ids = [newWorkerId('a'), newWorkerId('b'), newWorkerId('c')];
    for (const id of ids) await db.storage.upsertWorker(report(id));
    await backdateWorker(ids[0], 3 * MINUTE);
    await backdateWorker(ids[1], 1 * MINUTE);
    await backdateWorker(ids[2], 2 * MINUTE);

    const producer = await db.openAnother();
    expect((await producer.listWorkers()).map((w) => w.workerId)).toEqual([ids[1], ids[2], ids[0]]);
    expect((await producer.listWorkers({ limit: 2 })).map((w) => w.workerId)).toEqual([
      ids[1],
      ids[2],
    ]);
  });

  it('retention removes the rows not seen for workersMs (stopped and lost), and keeps live ones', async () => {
    const stopped = newWorkerId('stopped');
    const lost = newWorkerId('lost');
    const alive = newWorkerId('alive');
    for (const id of [stopped, lost, alive]) await db.storage.upsertWorker(report(id));
    await db.storage.markWorkerStopped(stopped);
    await backdateWorker(stopped, 3 * 60 * MINUTE);
    await backdateWorker(lost, 3 * 60 * MINUTE);
    await backdateWorker(alive, 5 * MINUTE);

    const policy = { archiveMs: 86_400_000, dlqMs: 86_400_000, metricsMs: 86_400_000 };
    const result = await db.storage.applyRetention({
      ...policy,
      workersMs: 2 * 60 * MINUTE,
      batchSize: 1,
    });
    expect(result).toEqual({
      archive: 0,
      dlq: 0,
      metricBuckets: 0,
      workers: 2,
      audit: 0,
      dedupeKeys: 0,
      groups: 0,
      batches: 0,
    });
    expect((await db.storage.listWorkers()).map((w) => w.workerId)).toEqual([alive]);
    // The default window is one day: the live row stays.
    expect((await db.storage.applyRetention(policy)).workers).toBe(0);
    // A worker whose row was removed writes it anew with its next report.
    await db.storage.upsertWorker(report(lost, { starting: false }));
    expect((await listed(db.storage, lost))?.state).toBe('running');
  });

  it('refuses a bad report or query at the edge, before any SQL', async () => {
    const id = newWorkerId();
    await expectValidationError(db.storage.upsertWorker(report('')), 'workerId');
    await expectValidationError(db.storage.upsertWorker(report(id, { pid: -1 })), 'pid');
    await expectValidationError(db.storage.upsertWorker(report(id, { host: 'a\u0000b' })), 'host');
    await expectValidationError(
      db.storage.upsertWorker(report(id, { handled: { queues: [''], types: [] } })),
      'handled.queues[0]',
    );
    await expectValidationError(
      db.storage.upsertWorker(report(id, { circuits: { 'a/b': 'ajar' as never } })),
      'circuits',
    );
    await expectValidationError(
      db.storage.upsertWorker(report(id, { starting: 'yes' as never })),
      'starting',
    );
    expect(await db.count('workers')).toBe(0);
    await expectValidationError(db.storage.listWorkers({ limit: 0 }), 'limit');
    await expectValidationError(db.storage.listWorkers({ limit: 10_001 }), 'limit');
    await expectValidationError(db.storage.listWorkers({ lostAfterMs: -1 }), 'lostAfterMs');
    await expectValidationError(db.storage.markWorkerStopped(''), 'workerId');
    await expectValidationError(
      db.storage.applyRetention({ archiveMs: 0, dlqMs: 0, metricsMs: 0, workersMs: -5 }),
      'workersMs',
    );
  });

  it('keeps the handled lists and the circuits as reported, and only those fields', async () => {
    const id = newWorkerId();
    const queue = uniqueQueue();
    const handled = {
      queues: [queue, 'ünïcödé.q'],
      types: [{ queue, type: 'type with "quotes" and \\ backslash', extra: 1 }],
    };
    await db.storage.upsertWorker(report(id, { handled, circuits: {} }));
    expect((await listed(db.storage, id))?.handled).toEqual({
      queues: [queue, 'ünïcödé.q'],
      types: [{ queue, type: 'type with "quotes" and \\ backslash' }],
    });
  });
});
