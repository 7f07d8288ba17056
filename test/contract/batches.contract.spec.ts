import BetterSqlite3 from 'better-sqlite3';
import { Client } from 'pg';
import type { BatchEnqueued, NewBatch } from '../../libs/chokaq/src/interfaces/batch.interface';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import type { JobLease } from '../../libs/chokaq/src/interfaces/job.interface';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import {
  backdate,
  claim,
  closeClaimers,
  countRows,
  expectValidationError,
  openClaimers,
  uniqueQueue,
} from './helpers';

const HOUR = 3_600_000;

/**
 * Batches (issue 29, part 2): the batch record, its callbacks and its jobs written in one
 * transaction; its counts kept by every move out of the hot table, in that move's transaction; each
 * callback enqueued exactly once, by the move that settles the batch's last job.
 */
describeEachDialect('storage contract: batches', (fixture) => {
  let db: TestDatabase;
  let storage: JobStorage;
  beforeAll(async () => {
    db = await fixture.create();
    storage = db.storage;
  });
  afterAll(async () => {
    await db?.close();
  });

  /** A batch of `n` jobs of a fresh queue, with all three callbacks on a queue of their own. */
  async function makeBatch(n: number, extra: Partial<NewBatch> = {}) {
    const queue = uniqueQueue('batch');
    const callbackQueue = `${queue}.done`;
    const made = await storage.enqueueBatch({
      jobs: Array.from({ length: n }, (_, i) => ({ queue, type: 'member', payload: { i } })),
      callbacks: {
        onComplete: { queue: callbackQueue, type: 'complete', payload: { k: 'complete' } },
        onSuccess: { queue: callbackQueue, type: 'success', payload: { k: 'success' } },
        onFailure: { queue: callbackQueue, type: 'failure', payload: { k: 'failure' } },
      },
      createdBy: 'batch-test',
      ...extra,
    });
    return { queue, callbackQueue, made };
  }

  /** Claims and starts every Pending job of `queue`; their leases. */
  async function startAll(queue: string, on: JobStorage = storage): Promise<JobLease[]> {
    const c = await claim(on, queue, 100);
    const started = await on.markAsProcessing(c.leases);
    expect(started.sort()).toEqual(c.leases.map((l) => l.id).sort());
    return c.leases;
  }

  /** The callback jobs that have been enqueued (any pillar), by type. */
  async function firedTypes(callbackQueue: string): Promise<string[]> {
    const ids: string[] = [];
    for (const pillar of ['hot', 'archive', 'dlq'] as const) {
      const rows = await db.sql<{ type: string }>(
        `SELECT ${db.column('type')} AS type FROM ${db.table(pillar)} WHERE ${db.column('queue')} = ${db.param(1)}`,
        [callbackQueue],
      );
      ids.push(...rows.map((r) => String(r.type)));
    }
    return ids.sort();
  }

  it('writes the batch, its callbacks and its jobs; getBatch and getJob show them', async () => {
    const { queue, made } = await makeBatch(3);
    expect(made.jobIds).toHaveLength(3);
    expect(Object.keys(made.callbacks).sort()).toEqual(['complete', 'failure', 'success']);
    expect(await countRows(db, 'hot', { queue })).toBe(3);
    const batch = await storage.getBatch(made.batchId);
    expect(batch).toMatchObject({
      id: made.batchId,
      createdBy: 'batch-test',
      total: 3,
      succeeded: 0,
      failed: 0,
      pending: 3,
      settledAtUtc: null,
    });
    expect(batch!.createdAtUtc).toBeInstanceOf(Date);
    expect(batch!.callbacks).toEqual([
      {
        kind: 'complete',
        jobId: made.callbacks.complete,
        queue: `${queue}.done`,
        type: 'complete',
        fired: false,
      },
      {
        kind: 'success',
        jobId: made.callbacks.success,
        queue: `${queue}.done`,
        type: 'success',
        fired: false,
      },
      {
        kind: 'failure',
        jobId: made.callbacks.failure,
        queue: `${queue}.done`,
        type: 'failure',
        fired: false,
      },
    ]);
    const job = await storage.getJob(made.jobIds[1]);
    expect(job).toMatchObject({ pillar: 'hot', batchId: made.batchId, payload: { i: 1 } });
    expect(job!.createdBy).toBe('batch-test');
    // A callback's job does not exist until it fires.
    expect(await storage.getJob(made.callbacks.complete!)).toBeNull();
    expect(await storage.getBatch('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b')).toBeNull();
  });

  it('fires onComplete and onSuccess once when the last job archives, in that move', async () => {
    const { queue, callbackQueue, made } = await makeBatch(3);
    const leases = await startAll(queue);
    await storage.archiveSucceeded(leases.slice(0, 2).map((l) => ({ ...l, durationMs: 1 })));
    expect(await firedTypes(callbackQueue)).toEqual([]);
    expect(await storage.getBatch(made.batchId)).toMatchObject({ succeeded: 2, pending: 1 });

    await storage.archiveSucceeded([{ ...leases[2], durationMs: 1 }]);
    expect(await firedTypes(callbackQueue)).toEqual(['complete', 'success']);
    const batch = await storage.getBatch(made.batchId);
    expect(batch).toMatchObject({ total: 3, succeeded: 3, failed: 0, pending: 0 });
    expect(batch!.settledAtUtc).toBeInstanceOf(Date);
    expect(batch!.callbacks.map((c) => [c.kind, c.fired])).toEqual([
      ['complete', true],
      ['success', true],
      ['failure', false],
    ]);
    // The callback is an ordinary Pending job with the id made at enqueue, in the batch.
    const callback = await storage.getJob(made.callbacks.success!);
    expect(callback).toMatchObject({
      pillar: 'hot',
      status: JobStatus.Pending,
      queue: callbackQueue,
      type: 'success',
      payload: { k: 'success' },
      batchId: made.batchId,
      attemptCount: 0,
    });

    // Running the callbacks changes no count and fires nothing again.
    const callbacks = await startAll(callbackQueue);
    await storage.archiveSucceeded(callbacks.map((l) => ({ ...l, durationMs: 1 })));
    expect(await storage.getBatch(made.batchId)).toMatchObject({ succeeded: 3, failed: 0 });
    expect(await firedTypes(callbackQueue)).toEqual(['complete', 'success']);
  });

  it('a job in the DLQ fires onFailure; its resurrect reopens the batch and a success fires onSuccess', async () => {
    const { queue, callbackQueue, made } = await makeBatch(2);
    const [a, b] = await startAll(queue);
    await storage.moveToDlq(a, { reason: FailureReason.MaxRetriesExceeded, error: 'boom' });
    await storage.archiveSucceeded([{ ...b, durationMs: 1 }]);
    expect(await firedTypes(callbackQueue)).toEqual(['complete', 'failure']);
    expect(await storage.getBatch(made.batchId)).toMatchObject({
      succeeded: 1,
      failed: 1,
      pending: 0,
    });

    expect(await storage.resurrect(a.id)).toBe(1);
    const reopened = await storage.getBatch(made.batchId);
    expect(reopened).toMatchObject({ succeeded: 1, failed: 0, pending: 1, settledAtUtc: null });
    const [again] = await startAll(queue);
    expect(again.id).toBe(a.id);
    await storage.archiveSucceeded([{ ...again, durationMs: 1 }]);
    // onSuccess fires now; onComplete and onFailure fired before and do not fire again.
    expect(await firedTypes(callbackQueue)).toEqual(['complete', 'failure', 'success']);
    expect(await storage.getBatch(made.batchId)).toMatchObject({ succeeded: 2, failed: 0 });
  });

  it('counts cancelled and zombied jobs as failed', async () => {
    const { queue, callbackQueue, made } = await makeBatch(3);
    const c = await claim(storage, queue, 1);
    await storage.markAsProcessing(c.leases);
    const [zombie] = c.leases;
    const rest = made.jobIds.filter((id) => id !== zombie.id);
    const cancelled = await storage.cancel([rest[0]]);
    expect(cancelled.cancelled).toEqual([rest[0]]);
    expect(await storage.getBatch(made.batchId)).toMatchObject({ failed: 1, pending: 2 });
    await backdate(db, 'hot', 'heartbeat_utc', [zombie.id], HOUR);
    const rescued = await storage.archiveZombies(600_000);
    expect(rescued.jobs.map((j) => j.job.id)).toEqual([zombie.id]);
    expect(await storage.getBatch(made.batchId)).toMatchObject({ failed: 2, pending: 1 });
    // An admin move of a Pending job (by id) settles the batch.
    expect(
      await storage.moveToDlq(
        { id: rest[1] },
        { reason: FailureReason.CircuitBreakerOpen, error: 'old' },
      ),
    ).toBe(1);
    expect(await storage.getBatch(made.batchId)).toMatchObject({ failed: 3, pending: 0 });
    expect(await firedTypes(callbackQueue)).toEqual(['complete', 'failure']);
  });

  it("batchHotJobIds lists the batch's jobs still hot, not its callbacks nor finished jobs", async () => {
    const { queue, callbackQueue, made } = await makeBatch(3);
    expect((await storage.batchHotJobIds(made.batchId)).sort()).toEqual([...made.jobIds].sort());
    const [first, ...rest] = await startAll(queue);
    await storage.archiveSucceeded([{ ...first, durationMs: 1 }]);
    expect((await storage.batchHotJobIds(made.batchId)).sort()).toEqual(
      rest.map((l) => l.id).sort(),
    );
    await storage.archiveSucceeded(rest.map((l) => ({ ...l, durationMs: 1 })));
    // Settled: its callbacks are hot now, and still not listed.
    expect(await firedTypes(callbackQueue)).toEqual(['complete', 'success']);
    expect(await storage.batchHotJobIds(made.batchId)).toEqual([]);
    expect(await storage.batchHotJobIds('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b')).toEqual([]);
  });

  it("getBatchResults pages through the batch's archived jobs in id order with their results, not its callbacks nor its jobs elsewhere", async () => {
    const { queue, callbackQueue, made } = await makeBatch(7);
    const byId = new Map((await startAll(queue)).map((l) => [l.id, l]));
    const lease = (i: number): JobLease => byId.get(made.jobIds[i])!;
    // Five archived (one of them without a result), one in the DLQ, one still hot (Processing).
    const archived = [0, 2, 3, 5, 6];
    await storage.archiveSucceeded(
      archived.map((i) => ({
        ...lease(i),
        durationMs: 1,
        ...(i === 3 ? {} : { result: JSON.stringify({ i, doubled: i * 2 }) }),
      })),
    );
    await storage.moveToDlq(lease(1), { reason: FailureReason.FatalError, error: 'boom' });
    const expected = archived
      .map((i) => ({ id: made.jobIds[i], result: i === 3 ? null : { i, doubled: i * 2 } }))
      .sort((a, b) => (a.id < b.id ? -1 : 1));

    /** Every page of the batch's results, `limit` at a time. */
    async function walk(limit: number) {
      const pages: Awaited<ReturnType<JobStorage['getBatchResults']>>[] = [];
      let after: string | undefined;
      do {
        const page = await storage.getBatchResults(made.batchId, { after, limit });
        pages.push(page);
        after = page.nextCursor ?? undefined;
      } while (after !== undefined && pages.length < 10);
      return pages;
    }

    const check = async () => {
      const pages = await walk(2);
      expect(pages.map((p) => p.items.length)).toEqual([2, 2, 1]);
      expect(pages.flatMap((p) => p.items)).toEqual(expected);
      expect(pages.map((p) => p.nextCursor)).toEqual([expected[1].id, expected[3].id, null]);
      // One page holds them all; the default limit too.
      expect(await storage.getBatchResults(made.batchId, { limit: 5 })).toEqual({
        items: expected,
        nextCursor: null,
      });
      expect(await storage.getBatchResults(made.batchId)).toEqual({
        items: expected,
        nextCursor: null,
      });
      // The cursor is a job id, in either case; the page after the last job is empty.
      expect(
        await storage.getBatchResults(made.batchId, { after: expected[2].id.toUpperCase() }),
      ).toEqual({ items: expected.slice(3), nextCursor: null });
      expect(await storage.getBatchResults(made.batchId, { after: expected[4].id })).toEqual({
        items: [],
        nextCursor: null,
      });
    };
    await check();

    // Settle the batch: the last job to the DLQ fires onComplete and onFailure, which then run and
    // archive with results of their own. They carry the batch's id, and are still not listed.
    await storage.moveToDlq(lease(4), { reason: FailureReason.FatalError, error: 'boom' });
    expect(await firedTypes(callbackQueue)).toEqual(['complete', 'failure']);
    const callbacks = await startAll(callbackQueue);
    await storage.archiveSucceeded(
      callbacks.map((l) => ({ ...l, durationMs: 1, result: JSON.stringify('callback') })),
    );
    expect(await storage.getJob(made.callbacks.complete!)).toMatchObject({
      pillar: 'archive',
      batchId: made.batchId,
      result: 'callback',
    });
    await check();

    const unknown = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    expect(await storage.getBatchResults(unknown)).toEqual({ items: [], nextCursor: null });
  });

  it('getBatchResults refuses a bad batch id, limit or cursor with a typed error', async () => {
    const { made } = await makeBatch(1);
    const id = made.batchId;
    await expectValidationError(storage.getBatchResults('not-a-uuid'), 'batchId');
    for (const limit of [0, 1_001, 1.5, '10']) {
      await expectValidationError(
        storage.getBatchResults(id, { limit: limit as number }),
        'query.limit',
      );
    }
    for (const after of ['nope', 42, '']) {
      await expectValidationError(
        storage.getBatchResults(id, { after: after as string }),
        'query.after',
      );
    }
    await expectValidationError(
      storage.getBatchResults(id, { cursor: made.jobIds[0] } as never),
      'query.cursor',
    );
    await expectValidationError(storage.getBatchResults(id, 'page-2' as never), 'query');
    expect(await storage.getBatchResults(id, { limit: 1_000 })).toEqual({
      items: [],
      nextCursor: null,
    });
  });

  it('retention removes batches settled longer ago than the Archive and the DLQ keep rows', async () => {
    const old = await makeBatch(1);
    const recent = await makeBatch(1);
    const open = await makeBatch(2);
    for (const { queue } of [old, recent, open]) {
      const [first] = await startAll(queue);
      await storage.archiveSucceeded([{ ...first, durationMs: 1 }]);
    }
    const settledAt = db.column('settled_at_utc');
    expect(await countRows(db, 'batches', { id: open.made.batchId })).toBe(1);
    // The old one settled 3 hours ago, the recent one now; the open one has a job still hot.
    await backdate(db, 'batches', 'settled_at_utc', [old.made.batchId], 3 * HOUR);
    const policy = { archiveMs: HOUR, dlqMs: 2 * HOUR, metricsMs: HOUR };
    const result = await storage.applyRetention(policy);
    expect(result.batches).toBe(1);
    expect(await storage.getBatch(old.made.batchId)).toBeNull();
    expect(await countRows(db, 'callbacks', { batch_id: old.made.batchId })).toBe(0);
    expect(await storage.getBatch(recent.made.batchId)).not.toBeNull();
    expect(await countRows(db, 'callbacks', { batch_id: recent.made.batchId })).toBe(3);
    // Not settled: kept whatever its age (its creation is not what counts).
    expect(await db.count('batches', `id = ? AND ${settledAt} IS NULL`, [open.made.batchId])).toBe(
      1,
    );
    expect((await storage.applyRetention(policy)).batches).toBe(0);
    // Its jobs keep their rows and their batch id.
    const [member] = old.made.jobIds;
    expect(await storage.getJob(member)).toMatchObject({
      pillar: 'archive',
      batchId: old.made.batchId,
    });
  });

  it('a batch without callbacks settles with nothing enqueued', async () => {
    const queue = uniqueQueue('plain');
    const made = await storage.enqueueBatch({ jobs: [{ queue }, { queue }] });
    expect(made.callbacks).toEqual({});
    const leases = await startAll(queue);
    await storage.archiveSucceeded(leases.map((l) => ({ ...l, durationMs: 1 })));
    const batch = await storage.getBatch(made.batchId);
    expect(batch).toMatchObject({ total: 2, succeeded: 2, pending: 0, callbacks: [] });
    expect(batch!.settledAtUtc).toBeInstanceOf(Date);
  });

  it('two connections finishing the last jobs at once enqueue each callback exactly once', async () => {
    const claimers = await openClaimers(db, 3, 2);
    try {
      for (let round = 0; round < 5; round++) {
        const { queue, callbackQueue, made } = await makeBatch(claimers.length * 2);
        const leases = await startAll(queue);
        const shares = claimers.map((_, i) => leases.filter((_l, j) => j % claimers.length === i));
        await Promise.all(
          claimers.map((on, i) =>
            on.archiveSucceeded(shares[i].map((l) => ({ ...l, durationMs: 1 }))),
          ),
        );
        expect(await firedTypes(callbackQueue)).toEqual(['complete', 'success']);
        expect(await storage.getBatch(made.batchId)).toMatchObject({
          succeeded: claimers.length * 2,
          pending: 0,
        });
      }
    } finally {
      await closeClaimers(db, claimers);
    }
  });

  it("in a caller's transaction: a rollback leaves neither the batch nor its jobs", async () => {
    if (db.dialect === 'mssql') return; // the live suite's transaction tests cover SQL Server
    const queue = uniqueQueue('txn');
    const batch: NewBatch = { jobs: [{ queue }, { queue }], callbacks: { onComplete: { queue } } };
    let made: BatchEnqueued;
    if (db.dialect === 'postgres') {
      const client = new Client({ connectionString: (db.options as { url: string }).url });
      await client.connect();
      try {
        await client.query('BEGIN');
        made = await storage.enqueueBatch(batch, { transaction: client });
        await client.query('ROLLBACK');
      } finally {
        await client.end();
      }
    } else {
      const handle = new BetterSqlite3(db.file);
      try {
        handle.pragma('busy_timeout = 5000');
        handle.exec('BEGIN IMMEDIATE');
        made = await storage.enqueueBatch(batch, { transaction: handle });
        handle.exec('ROLLBACK');
      } finally {
        handle.close();
      }
    }
    expect(await countRows(db, 'hot', { queue })).toBe(0);
    expect(await storage.getBatch(made.batchId)).toBeNull();
    expect(await countRows(db, 'callbacks', { batch_id: made.batchId })).toBe(0);
  });

  it('refuses a bad batch with a typed error, writing nothing', async () => {
    const queue = uniqueQueue('bad');
    const id = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    const before = await countRows(db, 'batches');
    await expectValidationError(storage.enqueueBatch({ jobs: [] }), 'jobs');
    await expectValidationError(
      storage.enqueueBatch({ jobs: [{ queue, id } as never] }),
      'jobs[0].id',
    );
    await expectValidationError(
      storage.enqueueBatch({ jobs: [{ queue }, { queue, idempotencyKey: 'k' } as never] }),
      'jobs[1].idempotencyKey',
    );
    await expectValidationError(
      storage.enqueueBatch({
        jobs: [{ queue, dedupe: { key: 'k', mode: 'throttle', windowMs: 1 } } as never],
      }),
      'jobs[0].dedupe',
    );
    await expectValidationError(
      storage.enqueueBatch({
        jobs: [{ queue }],
        callbacks: { onSuccess: { queue, delayMs: 5 } as never },
      }),
      'callbacks.onSuccess.delayMs',
    );
    await expectValidationError(
      storage.enqueueBatch({ jobs: [{ queue }], callbacks: { onDone: { queue } } as never }),
      'callbacks.onDone',
    );
    await expectValidationError(
      storage.enqueueBatch({ jobs: [{ queue, priority: 1.5 }] }),
      'jobs[0].priority',
    );
    expect(await countRows(db, 'hot', { queue })).toBe(0);
    expect(await countRows(db, 'batches')).toBe(before);
  });
});
