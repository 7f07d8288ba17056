import { DataSource } from 'typeorm';
import { uuidv7 } from '../../libs/chokaq/src/common/uuid';
import { ChokaQTransactionError } from '../../libs/chokaq/src/errors';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { NewJob } from '../../libs/chokaq/src/interfaces/job.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { MAX_ENQUEUE_MANY } from '../../libs/chokaq/src/validation/limits';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import {
  claim,
  countRows,
  expectValidationError,
  inTransaction,
  retryUnavailable,
  startJob,
  uniqueQueue,
} from './helpers';

/**
 * SPEC §8 invariant 7 (idempotent enqueue), the input limits of SPEC §6 and the `transaction`
 * option: what `enqueue` / `enqueueMany` accept, reject, and never duplicate.
 */
describeEachDialect('storage contract: enqueue', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  /** Several independent storages; on the servers ≥ 20 connections in all. */
  async function producers(): Promise<JobStorage[]> {
    return Promise.all(Array.from({ length: 4 }, () => db.openAnother({ poolSize: 5 })));
  }

  it('enqueue inserts a Pending row with defaults and ensures the Queues and StatsSummary rows', async () => {
    const queue = uniqueQueue('basic');
    const result = await db.storage.enqueue({
      queue,
      payload: { hello: 'world', nul: 'a\u0000b' },
    });
    expect(result.created).toBe(true);
    const view = await db.storage.getJob(result.id);
    expect(view).toMatchObject({
      pillar: 'hot',
      queue,
      type: queue,
      priority: 10,
      status: JobStatus.Pending,
      attemptCount: 0,
      payload: { hello: 'world', nul: 'a\u0000b' },
      tags: [],
      idempotencyKey: null,
      scheduledAtUtc: null,
    });
    expect(view!.createdAtUtc.getTime()).toBe(view!.enqueuedAtUtc.getTime());
    expect((await db.storage.getQueues()).find((q) => q.name === queue)).toMatchObject({
      isPaused: false,
      isActive: true,
      maxWorkers: null,
    });
    expect((await db.storage.getQueueStats()).find((s) => s.queue === queue)).toMatchObject({
      pending: 1,
      succeededTotal: 0,
      failedTotal: 0,
    });
    const dflt = await db.storage.enqueue({});
    expect((await db.storage.getJob(dflt.id))?.queue).toBe('default');
  });

  it('storage basics: now() is the database clock; ensureSchema is idempotent under concurrency; subscribe', async () => {
    const now = await db.storage.now();
    expect(Math.abs(now.getTime() - Date.now())).toBeLessThan(60_000);

    const others = await Promise.all([
      db.openAnother({ poolSize: 2 }),
      db.openAnother({ poolSize: 2 }),
    ]);
    try {
      await Promise.all(
        [db.storage, ...others].map((s) => retryUnavailable(() => s.ensureSchema())),
      );
      expect(await countRows(db, 'migrations')).toBeGreaterThan(0);
      const before = await countRows(db, 'migrations');
      await db.storage.ensureSchema();
      expect(await countRows(db, 'migrations')).toBe(before);

      const heard: Array<string | undefined> = [];
      const unsubscribe = await db.storage.subscribe((queue) => heard.push(queue));
      try {
        if (unsubscribe) {
          // PostgreSQL names the queue (NOTIFY); SQLite says only that another connection
          // committed (PRAGMA data_version). SQL Server has no channel.
          const queue = uniqueQueue('notify');
          expect(heard).toEqual([]);
          await others[0].enqueue({ queue });
          const expected = db.dialect === 'sqlite' ? undefined : queue;
          await waitFor('the wake-up', () => heard.includes(expected), {
            timeoutMs: 5_000,
            intervalMs: 20,
          });
        } else {
          expect(db.dialect).toBe('mssql');
        }
      } finally {
        await unsubscribe?.();
      }
    } finally {
      await Promise.all(others.map((s) => s.close()));
    }
  });

  it('invariant 7: concurrent enqueues with one idempotency key create one row and return one id', async () => {
    const others = await producers();
    try {
      for (let round = 0; round < 3; round++) {
        const queue = uniqueQueue('inv7');
        const key = `order:${queue}`;
        const calls: Promise<{ id: string; created: boolean }>[] = [];
        for (let i = 0; i < 24; i++) {
          const storage = i < 4 ? db.storage : others[i % others.length];
          calls.push(storage.enqueue({ queue, idempotencyKey: key, payload: { i } }));
        }
        const results = await Promise.all(calls);
        const ids = new Set(results.map((r) => r.id));
        expect(ids.size).toBe(1);
        expect(results.filter((r) => r.created)).toHaveLength(1);
        expect(await countRows(db, 'hot', { queue })).toBe(1);
        expect(await countRows(db, 'hot', { idempotency_key: key })).toBe(1);
        expect((await db.storage.getJob([...ids][0]))?.idempotencyKey).toBe(key);
      }
    } finally {
      await Promise.all(others.map((s) => s.close()));
    }
  });

  it('invariant 7: while the job is hot (Pending, Fetched, Processing) the key returns its id', async () => {
    const queue = uniqueQueue('inv7.hot');
    const key = `k:${queue}`;
    const first = await db.storage.enqueue({ queue, idempotencyKey: key });
    expect(await db.storage.enqueue({ queue, idempotencyKey: key })).toEqual({
      id: first.id,
      created: false,
    });
    const c = await claim(db.storage, queue, 1);
    expect(await db.storage.enqueue({ queue, idempotencyKey: key })).toEqual({
      id: first.id,
      created: false,
    });
    await db.storage.markAsProcessing(c.leases);
    expect(await db.storage.enqueue({ queue, idempotencyKey: key })).toEqual({
      id: first.id,
      created: false,
    });
    expect(await countRows(db, 'hot', { queue })).toBe(1);
  });

  it('invariant 7: enqueueMany returns the holder of an active key instead of inserting', async () => {
    const queue = uniqueQueue('inv7.many');
    const key = `k:${queue}`;
    const holder = await db.storage.enqueue({ queue, idempotencyKey: key });
    const results = await db.storage.enqueueMany([{ queue, idempotencyKey: key }, { queue }]);
    expect(results[0]).toEqual({ id: holder.id, created: false });
    expect(results[1].created).toBe(true);
    expect(await countRows(db, 'hot', { queue })).toBe(2);
  });

  it('invariant 7: a retried insert with the same id never duplicates (sequential, batched and concurrent)', async () => {
    const queue = uniqueQueue('inv7.id');
    const id = uuidv7();
    expect(await db.storage.enqueue({ id, queue, payload: 1 })).toEqual({ id, created: true });
    expect(await db.storage.enqueue({ id, queue, payload: 2 })).toEqual({ id, created: false });
    const fresh = uuidv7();
    expect(
      await db.storage.enqueueMany([
        { id, queue },
        { id: fresh, queue },
      ]),
    ).toEqual([
      { id, created: false },
      { id: fresh, created: true },
    ]);
    expect(await countRows(db, 'hot', { id })).toBe(1);
    expect((await db.storage.getJob(id))?.payload).toBe(1);

    // A retry that arrives after the job was claimed does not reset it.
    const c = await claim(db.storage, queue, 10);
    expect(c.rows).toHaveLength(2);
    const owned = await db.storage.getJob(id);
    expect(await db.storage.enqueue({ id, queue })).toEqual({ id, created: false });
    expect(await db.storage.getJob(id)).toEqual(owned);

    const others = await producers();
    try {
      const raced = uuidv7();
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          (i % 2 ? db.storage : others[i % others.length]).enqueue({ id: raced, queue }),
        ),
      );
      expect(results.every((r) => r.id === raced)).toBe(true);
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(await countRows(db, 'hot', { id: raced })).toBe(1);
    } finally {
      await Promise.all(others.map((s) => s.close()));
    }
  });

  it("a retried keyed enqueue whose job finished answers with its own id, not the key's new holder", async () => {
    // The first commit was ambiguous, the job ran and was archived, and a new job now holds the
    // key: the retry must report its own job, not claim the newcomer as its result.
    const queue = uniqueQueue('inv7.key-moved');
    const key = `key-moved-${uuidv7()}`;
    const first = uuidv7();
    expect(await db.storage.enqueue({ id: first, queue, idempotencyKey: key })).toEqual({
      id: first,
      created: true,
    });
    const c = await claim(db.storage, queue, 1);
    await db.storage.markAsProcessing(c.leases);
    await db.storage.archiveSucceeded([{ ...c.leases[0], durationMs: 1 }]);
    const holder = await db.storage.enqueue({ queue, idempotencyKey: key });
    expect(holder.created).toBe(true);

    expect(await db.storage.enqueue({ id: first, queue, idempotencyKey: key })).toEqual({
      id: first,
      created: false,
    });
    expect(await db.storage.enqueueMany([{ id: first, queue, idempotencyKey: key }])).toEqual([
      { id: first, created: false },
    ]);
    expect(await countRows(db, 'hot', { id: first })).toBe(0);
  });

  it('invariant 7: an id already in the archive or the DLQ is not enqueued again (the job stays where it is)', async () => {
    // A retry of an enqueue whose first commit was ambiguous may arrive after the job finished.
    const queue = uniqueQueue('inv7.gone');
    const archived = await startJob(db.storage, queue, { payload: 'first' });
    await db.storage.archiveSucceeded([{ ...archived, durationMs: 1 }]);
    const dead = await startJob(db.storage, queue, { payload: 'first' });
    await db.storage.moveToDlq(dead, { reason: FailureReason.FatalError, error: 'x' });
    const finished = [archived.id, dead.id];
    const views = await Promise.all(finished.map((id) => db.storage.getJob(id)));

    for (const id of finished) {
      expect(await db.storage.enqueue({ id, queue, payload: 'again' })).toEqual({
        id,
        created: false,
      });
    }
    const fresh = uuidv7();
    expect(
      await db.storage.enqueueMany([
        { id: archived.id, queue, payload: 'again' },
        { id: fresh, queue },
        { id: dead.id, queue, payload: 'again' },
      ]),
    ).toEqual([
      { id: archived.id, created: false },
      { id: fresh, created: true },
      { id: dead.id, created: false },
    ]);

    for (const id of finished) expect(await countRows(db, 'hot', { id })).toBe(0);
    expect(await countRows(db, 'archive', { id: archived.id })).toBe(1);
    expect(await countRows(db, 'dlq', { id: dead.id })).toBe(1);
    expect(await Promise.all(finished.map((id) => db.storage.getJob(id)))).toEqual(views);
    // Nothing for a worker to run again: only the fresh job is claimable.
    expect((await claim(db.storage, queue, 10)).rows.map((r) => r.id)).toEqual([fresh]);
  });

  it('invariant 7: after the job leaves hot its idempotency key can be used again', async () => {
    const queue = uniqueQueue('inv7.reuse');
    const key = `k:${queue}`;
    const lease = await startJob(db.storage, queue, { idempotencyKey: key });
    await db.storage.archiveSucceeded([{ ...lease, durationMs: 1 }]);
    const second = await db.storage.enqueue({ queue, idempotencyKey: key });
    expect(second.created).toBe(true);
    expect(second.id).not.toBe(lease.id);

    await db.storage.moveToDlq({ id: second.id }, { reason: FailureReason.FatalError, error: 'x' });
    expect((await db.storage.getJob(second.id))?.idempotencyKey).toBe(key);
    const third = await db.storage.enqueue({ queue, idempotencyKey: key });
    expect(third.created).toBe(true);
    expect(new Set([lease.id, second.id, third.id]).size).toBe(3);
  });

  it('enqueueMany inserts in chunks and returns results in input order', async () => {
    const queue = uniqueQueue('many');
    const items: NewJob[] = Array.from({ length: 2_500 }, (_, i) => ({
      id: uuidv7(),
      queue,
      payload: { i },
      tags: i % 2 ? ['odd'] : ['even'],
    }));
    const results = await db.storage.enqueueMany(items);
    expect(results.map((r) => r.id)).toEqual(items.map((j) => j.id));
    expect(results.every((r) => r.created)).toBe(true);
    expect(await countRows(db, 'hot', { queue })).toBe(2_500);
    expect((await db.storage.getJob(items[1_234].id!))?.payload).toEqual({ i: 1_234 });
    expect(await db.storage.enqueueMany([])).toEqual([]);
  });

  it.each([0, 7, 9])(
    'enqueueMany validation: a bad item at index %i fails the call naming items[k], nothing inserted',
    async (k) => {
      const queue = uniqueQueue('many.bad');
      const items: NewJob[] = Array.from({ length: 10 }, () => ({ queue }));
      items[k] = { queue, priority: 1.5 };
      const error = await expectValidationError(db.storage.enqueueMany(items), `items[${k}]`);
      expect(error.issues[0].path).toBe(`items[${k}].priority`);
      expect(await countRows(db, 'hot', { queue })).toBe(0);
    },
  );

  it('enqueueMany validation: every bad item is reported; more than MAX_ENQUEUE_MANY items is rejected', async () => {
    const queue = uniqueQueue('many.bad2');
    const items: NewJob[] = Array.from({ length: 6 }, () => ({ queue }));
    items[2] = { queue: 'no spaces allowed' };
    items[5] = { queue, tags: ['a,b'] };
    const error = await expectValidationError(db.storage.enqueueMany(items), 'items[2]');
    expect(error.issues.map((i) => i.path)).toEqual(
      expect.arrayContaining(['items[2].queue', 'items[5].tags[0]']),
    );
    expect(await countRows(db, 'hot', { queue })).toBe(0);

    const tooMany = Array.from({ length: MAX_ENQUEUE_MANY + 1 }, () => ({ queue }));
    await expectValidationError(db.storage.enqueueMany(tooMany), 'items');
    expect(await countRows(db, 'hot', { queue })).toBe(0);
  });

  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  const limitCases: Array<[string, NewJob, string]> = [
    ['queue name pattern', { queue: 'bad queue!' }, 'queue'],
    ['empty queue name', { queue: '' }, 'queue'],
    ['queue name of 256 chars', { queue: 'q'.repeat(256) }, 'queue'],
    ['type of 256 chars', { type: 't'.repeat(256) }, 'type'],
    ['NUL in type', { type: 'a\u0000b' }, 'type'],
    ['tag with a comma', { tags: ['ok', 'a,b'] }, 'tags[1]'],
    ['empty tag', { tags: [''] }, 'tags[0]'],
    ['tag of 101 chars', { tags: ['t'.repeat(101)] }, 'tags[0]'],
    ['21 tags', { tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
    ['NaN priority', { priority: NaN }, 'priority'],
    ['fractional priority', { priority: 1.5 }, 'priority'],
    ['priority beyond ±1,000,000', { priority: -1_000_001 }, 'priority'],
    ['BigInt payload', { payload: { n: BigInt(10) } }, 'payload'],
    ['cyclic payload', { payload: cyclic }, 'payload'],
    ['oversized payload', { payload: 'x'.repeat(1_000_000) }, 'payload'],
    ['idempotency key of 256 chars', { idempotencyKey: 'k'.repeat(256) }, 'idempotencyKey'],
    ['createdBy of 101 chars', { createdBy: 'c'.repeat(101) }, 'createdBy'],
    ['negative delayMs', { delayMs: -1 }, 'delayMs'],
    ['NaN delayMs', { delayMs: NaN }, 'delayMs'],
    ['delayMs over 10 years', { delayMs: 11 * 365 * 24 * 3_600_000 }, 'delayMs'],
    ['invalid runAt', { runAt: new Date(NaN) }, 'runAt'],
    ['runAt in year 9000', { runAt: new Date(Date.UTC(9000, 0, 1)) }, 'runAt'],
    ['id that is not a UUID', { id: 'not-a-uuid' }, 'id'],
  ];

  it.each(limitCases)(
    'input limits: %s → ChokaQValidationError naming the field',
    async (_name, job, path) => {
      const queue = job.queue ?? uniqueQueue('limits');
      await expectValidationError(db.storage.enqueue({ queue, ...job }), path);
      await expectValidationError(db.storage.enqueueMany([{ queue, ...job }]), `items[0].${path}`);
      if (job.queue === undefined) expect(await countRows(db, 'hot', { queue })).toBe(0);
    },
  );

  it('input limits: a payload of exactly payload.maxBytes is accepted', async () => {
    const queue = uniqueQueue('limits.max');
    const payload = 'x'.repeat(1_000_000 - 2); // JSON adds the two quotes
    const { id } = await db.storage.enqueue({ queue, payload });
    expect(((await db.storage.getJob(id))?.payload as string).length).toBe(999_998);
  });

  it('transaction option: a QueryRunner of another DataSource is rejected with ChokaQTransactionError', async () => {
    const queue = uniqueQueue('tx.foreign');
    const foreign = [await db.openDataSource()];
    const memory = new DataSource({ type: 'better-sqlite3', database: ':memory:' });
    await memory.initialize();
    foreign.push(memory);
    try {
      for (const ds of foreign) {
        const runner = ds.createQueryRunner();
        await runner.connect();
        await runner.startTransaction();
        try {
          await expect(
            db.storage.enqueue({ queue }, { transaction: runner }),
          ).rejects.toBeInstanceOf(ChokaQTransactionError);
          await expect(
            db.storage.enqueueMany([{ queue }], { transaction: runner }),
          ).rejects.toBeInstanceOf(ChokaQTransactionError);
        } finally {
          await runner.rollbackTransaction();
          await runner.release();
        }
      }
      await expect(db.storage.enqueue({ queue }, { transaction: {} })).rejects.toBeInstanceOf(
        ChokaQTransactionError,
      );
      expect(await countRows(db, 'hot', { queue })).toBe(0);
    } finally {
      await memory.destroy();
    }
  });

  it("transaction option: on ChokaQ's own DataSource the job commits or rolls back with the caller", async () => {
    const ds = await db.openDataSource();
    const schema = (db.options as { schema?: string }).schema;
    const borrowed = await createJobStorage({ dataSource: ds, schema, autoCreateSchema: false });
    const queue = uniqueQueue('tx.own');
    try {
      let rolledBack = '';
      await inTransaction(
        ds,
        async (runner) => {
          rolledBack = (await borrowed.enqueue({ queue, payload: 'rb' }, { transaction: runner }))
            .id;
        },
        false,
      );
      expect(await db.storage.getJob(rolledBack)).toBeNull();
      expect(await countRows(db, 'hot', { queue })).toBe(0);

      let committed: string[] = [];
      await inTransaction(
        ds,
        async (runner) => {
          committed = (
            await borrowed.enqueueMany([{ queue }, { queue }], { transaction: runner })
          ).map((r) => r.id);
        },
        true,
      );
      expect(await countRows(db, 'hot', { queue })).toBe(2);
      expect(
        (await retryUnavailable(() => claim(db.storage, queue, 10))).rows.map((r) => r.id).sort(),
      ).toEqual(committed.sort());

      // A runner of the right DataSource without an open transaction is refused too.
      const idle = ds.createQueryRunner();
      try {
        await expect(borrowed.enqueue({ queue }, { transaction: idle })).rejects.toBeInstanceOf(
          ChokaQTransactionError,
        );
      } finally {
        await idle.release();
      }
    } finally {
      await borrowed.close();
    }
  });
});
