import BetterSqlite3 from 'better-sqlite3';
import { Client } from 'pg';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import {
  DedupeOption,
  EnqueueResult,
  NewJob,
} from '../../libs/chokaq/src/interfaces/job.interface';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import {
  backdateDue,
  claim,
  closeClaimers,
  countRows,
  dedupeKeyRows,
  expectValidationError,
  openClaimers,
  startJob,
  uniqueQueue,
} from './helpers';

const HOUR = 3_600_000;
const RETENTION = { archiveMs: 10 * HOUR, dlqMs: 10 * HOUR, metricsMs: 10 * HOUR };

/**
 * Dedupe keys (issue 30, part 1): a key with a window, decided in the enqueue's transaction, so
 * that one key makes one job whatever the number of concurrent enqueues, and the window, not the
 * holder's pillar, says when the key is free again.
 */
describeEachDialect('storage contract: dedupe keys', (fixture) => {
  let db: TestDatabase;
  let storage: JobStorage;
  beforeAll(async () => {
    db = await fixture.create();
    storage = db.storage;
  });
  afterAll(async () => {
    await db?.close();
  });

  const keyed = (queue: string, dedupe: DedupeOption, extra: NewJob = {}): NewJob => ({
    queue,
    type: 'dedupe',
    payload: { at: dedupe.key },
    dedupe,
    ...extra,
  });

  /** Ends key `key`'s window now, as if it had been taken `windowMs` ago. */
  async function endWindow(key: string): Promise<void> {
    const c = (name: string) => db.column(name);
    const now =
      db.dialect === 'sqlite'
        ? `CAST(unixepoch('subsec') * 1000 AS INTEGER)`
        : db.dialect === 'postgres'
          ? 'now()'
          : 'SYSUTCDATETIME()';
    const keyColumn = db.dialect === 'mssql' ? '[Key]' : 'key';
    await db.sql(
      `UPDATE ${db.table('keys')} SET ${c('window_ends_utc')} = ${now} WHERE ${keyColumn} = ${db.param(1)}`,
      [key],
    );
  }

  async function archive(storage: JobStorage, queue: string, job: NewJob): Promise<string> {
    const lease = await startJob(storage, queue, job);
    await storage.archiveSucceeded([{ ...lease, durationMs: 1 }]);
    return lease.id;
  }

  it('throttle: one job per key per window, whatever state the holder is in; a new one after it', async () => {
    const queue = uniqueQueue('throttle');
    const dedupe: DedupeOption = { key: `t:${queue}`, mode: 'throttle', windowMs: HOUR };
    const first = await storage.enqueue(keyed(queue, dedupe));
    expect(first.created).toBe(true);
    const again = await storage.enqueue(keyed(queue, dedupe, { payload: { other: true } }));
    expect(again).toEqual({ id: first.id, created: false });
    expect((await storage.getJob(first.id))?.payload).toEqual({ at: dedupe.key });

    // Finished and dead-lettered holders still hold the key while the window lasts.
    const c = await claim(storage, queue, 1);
    await storage.markAsProcessing(c.leases);
    await storage.moveToDlq(c.leases[0], { reason: FailureReason.FatalError, error: 'x' });
    expect(await storage.enqueue(keyed(queue, dedupe))).toEqual({ id: first.id, created: false });

    const view = await storage.getJob(first.id);
    expect(view?.dedupe).toEqual({
      key: dedupe.key,
      mode: 'throttle',
      states: null,
      windowMs: HOUR,
      windowStartedUtc: expect.any(Date),
      windowEndsUtc: expect.any(Date),
    });
    const { windowStartedUtc, windowEndsUtc } = view!.dedupe!;
    expect(windowEndsUtc!.getTime() - windowStartedUtc.getTime()).toBe(HOUR);

    await endWindow(dedupe.key);
    const next = await storage.enqueue(keyed(queue, dedupe));
    expect(next.created).toBe(true);
    expect(next.id).not.toBe(first.id);
    // The key moved: the old holder holds nothing now.
    expect((await storage.getJob(first.id))?.dedupe).toBeNull();
    expect((await storage.getJob(next.id))?.dedupe?.key).toBe(dedupe.key);
    expect(await dedupeKeyRows(db, dedupe.key)).toBe(1);
  });

  it('debounce: a new enqueue replaces the Pending holder and pushes its run time; a claimed holder gets a successor', async () => {
    const queue = uniqueQueue('debounce');
    const dedupe: DedupeOption = { key: `d:${queue}`, mode: 'debounce', windowMs: HOUR };
    const before = await storage.now();
    const first = await storage.enqueue(keyed(queue, dedupe, { payload: { v: 1 } }));
    const scheduled = (await storage.getJob(first.id))!.scheduledAtUtc!.getTime();
    expect(scheduled).toBeGreaterThanOrEqual(before.getTime() + HOUR);

    await backdateDue(db, [first.id], 10_000, 'scheduled_at_utc');
    const second = await storage.enqueue(keyed(queue, dedupe, { payload: { v: 2 } }));
    expect(second).toEqual({ id: first.id, created: false, replaced: true });
    const replaced = await storage.getJob(first.id);
    expect(replaced?.payload).toEqual({ v: 2 });
    expect(replaced!.scheduledAtUtc!.getTime()).toBeGreaterThan(scheduled - 10_000);
    expect(await countRows(db, 'hot', { queue })).toBe(1);

    // Claimed meanwhile: the holder is not replaced, a new job holds the key.
    await backdateDue(db, [first.id], 2 * HOUR, 'scheduled_at_utc');
    const c = await claim(storage, queue, 1);
    expect(c.rows.map((r) => r.id)).toEqual([first.id]);
    const third = await storage.enqueue(keyed(queue, dedupe, { payload: { v: 3 } }));
    expect(third.created).toBe(true);
    expect((await storage.getJob(first.id))?.payload).toEqual({ v: 2 });
    expect((await storage.getJob(third.id))?.dedupe?.mode).toBe('debounce');
    expect((await storage.getJob(first.id))?.dedupe).toBeNull();
  });

  it('unique: held while the holder is in a chosen state; a finished one within its window; never a dead one', async () => {
    const queue = uniqueQueue('unique');
    const live: DedupeOption = {
      key: `u:${queue}`,
      mode: 'unique',
      states: ['pending', 'running'],
    };
    const lease = await startJob(storage, queue, { dedupe: live });
    expect(await storage.enqueue(keyed(queue, live))).toEqual({ id: lease.id, created: false });
    // Running does not hold a key that names only pending.
    const pendingOnly: DedupeOption = { ...live, states: ['pending'] };
    const successor = await storage.enqueue(keyed(queue, pendingOnly));
    expect(successor.created).toBe(true);
    expect(await storage.enqueue(keyed(queue, live))).toEqual({ id: successor.id, created: false });
    expect((await storage.getJob(successor.id))?.dedupe).toMatchObject({
      mode: 'unique',
      states: ['pending'],
      windowMs: null,
      windowEndsUtc: null,
    });

    const finished: DedupeOption = {
      key: `f:${queue}`,
      mode: 'unique',
      states: ['finished'],
      windowMs: HOUR,
    };
    const done = await archive(storage, queue, { dedupe: finished });
    expect(await storage.enqueue(keyed(queue, finished))).toEqual({ id: done, created: false });
    // Finished two hours ago: out of the key's one-hour window.
    const finishedAt = db.column('finished_at_utc');
    const earlier =
      db.dialect === 'sqlite'
        ? `${finishedAt} - ${2 * HOUR}`
        : db.dialect === 'postgres'
          ? `${finishedAt} - interval '2 hours'`
          : `DATEADD(hour, -2, ${finishedAt})`;
    await db.sql(
      `UPDATE ${db.table('archive')} SET ${finishedAt} = ${earlier} WHERE ${db.column('id')} = ${db.param(1)}`,
      [done],
    );
    const after = await storage.enqueue(keyed(queue, finished));
    expect(after.created).toBe(true);

    const failedKey: DedupeOption = {
      ...finished,
      key: `x:${queue}`,
      states: ['running', 'finished'],
    };
    const failing = await startJob(storage, queue, { dedupe: failedKey });
    await storage.moveToDlq(failing, { reason: FailureReason.FatalError, error: 'x' });
    expect((await storage.enqueue(keyed(queue, failedKey))).created).toBe(true);
  });

  it('a retried enqueue of the same id is the same answer, not a new holder', async () => {
    const queue = uniqueQueue('retry');
    const dedupe: DedupeOption = { key: `r:${queue}`, mode: 'unique', states: ['pending'] };
    const job = keyed(queue, dedupe, { id: '01900000-0000-7000-8000-00000000d0de' });
    const first = await storage.enqueue(job);
    expect(await storage.enqueue(job)).toEqual({ id: first.id, created: false });
  });

  it('concurrent enqueues of one key from several connections make one job and one answer', async () => {
    const others = await openClaimers(db, 3, 2);
    try {
      for (const mode of ['throttle', 'debounce', 'unique'] as const) {
        const queue = uniqueQueue(`race.${mode}`);
        const dedupe: DedupeOption =
          mode === 'unique'
            ? { key: `race:${queue}`, mode, states: ['pending', 'running'] }
            : { key: `race:${queue}`, mode, windowMs: HOUR };
        const results = await Promise.all(
          Array.from({ length: 16 }, (_, i) =>
            others[i % others.length].enqueue(keyed(queue, dedupe, { payload: { i } })),
          ),
        );
        expect(new Set(results.map((r) => r.id)).size).toBe(1);
        expect(results.filter((r) => r.created)).toHaveLength(1);
        expect(await countRows(db, 'hot', { queue })).toBe(1);
        expect(await dedupeKeyRows(db, dedupe.key)).toBe(1);
      }
    } finally {
      await closeClaimers(db, others);
    }
  });

  it('enqueueMany: keyed and plain jobs in one call, results in input order', async () => {
    const queue = uniqueQueue('many');
    const a: DedupeOption = { key: `b:${queue}`, mode: 'throttle', windowMs: HOUR };
    const b: DedupeOption = { key: `a:${queue}`, mode: 'throttle', windowMs: HOUR };
    const results: EnqueueResult[] = await storage.enqueueMany([
      keyed(queue, a),
      { queue },
      keyed(queue, b),
      keyed(queue, a),
      { queue },
    ]);
    expect(results.map((r) => r.created)).toEqual([true, true, true, false, true]);
    expect(results[3].id).toBe(results[0].id);
    expect(new Set(results.map((r) => r.id)).size).toBe(4);
    expect(await countRows(db, 'hot', { queue })).toBe(4);
  });

  it("in a caller's transaction: a rollback leaves neither the job nor its key", async () => {
    if (db.dialect === 'mssql') return; // the live suite's transaction tests cover SQL Server
    const queue = uniqueQueue('txn');
    const dedupe: DedupeOption = { key: `txn:${queue}`, mode: 'throttle', windowMs: HOUR };
    if (db.dialect === 'postgres') {
      const client = new Client({ connectionString: (db.options as { url: string }).url });
      await client.connect();
      try {
        await client.query('BEGIN');
        const result = await storage.enqueue(keyed(queue, dedupe), { transaction: client });
        expect(result.created).toBe(true);
        await client.query('ROLLBACK');
      } finally {
        await client.end();
      }
    } else {
      const handle = new BetterSqlite3(db.file);
      try {
        handle.pragma('busy_timeout = 5000');
        handle.exec('BEGIN IMMEDIATE');
        const result = await storage.enqueue(keyed(queue, dedupe), { transaction: handle });
        expect(result.created).toBe(true);
        handle.exec('ROLLBACK');
      } finally {
        handle.close();
      }
    }
    expect(await dedupeKeyRows(db, dedupe.key)).toBe(0);
    expect(await countRows(db, 'hot', { queue })).toBe(0);
    expect((await storage.enqueue(keyed(queue, dedupe))).created).toBe(true);
  });

  it('retention removes keys that hold nothing and keeps the others', async () => {
    const queue = uniqueQueue('retain');
    const ended: DedupeOption = { key: `e:${queue}`, mode: 'throttle', windowMs: HOUR };
    const open: DedupeOption = { key: `o:${queue}`, mode: 'debounce', windowMs: HOUR };
    const gone: DedupeOption = { key: `g:${queue}`, mode: 'unique', states: ['pending'] };
    const held: DedupeOption = { key: `h:${queue}`, mode: 'unique', states: ['pending'] };
    await storage.enqueue(keyed(queue, ended));
    await endWindow(ended.key);
    await storage.enqueue(keyed(queue, open));
    await archive(storage, queue, { dedupe: gone });
    await storage.enqueue(keyed(queue, held));
    const result = await storage.applyRetention(RETENTION);
    expect(result.dedupeKeys).toBeGreaterThanOrEqual(2);
    for (const [key, rows] of [
      [ended.key, 0],
      [gone.key, 0],
      [open.key, 1],
      [held.key, 1],
    ] as const) {
      expect(await dedupeKeyRows(db, key)).toBe(rows);
    }
  });

  it('refuses a bad key or window with a typed error and writes nothing', async () => {
    const queue = uniqueQueue('bad');
    const cases: [NewJob, string][] = [
      [
        { queue, idempotencyKey: 'k', dedupe: { key: 'k', mode: 'throttle', windowMs: 1 } },
        'dedupe',
      ],
      [{ queue, dedupe: { key: 'k ', mode: 'throttle', windowMs: 1 } }, 'dedupe.key'],
      [{ queue, dedupe: { key: 'k', mode: 'throttle', windowMs: 0 } }, 'dedupe.windowMs'],
      [{ queue, dedupe: { key: 'k', mode: 'debounce', windowMs: 1 }, delayMs: 5 }, 'dedupe'],
      [{ queue, dedupe: { key: 'k', mode: 'unique', states: [] } }, 'dedupe.states'],
      [
        { queue, dedupe: { key: 'k', mode: 'unique', states: ['pending'], windowMs: 5 } },
        'dedupe.windowMs',
      ],
      [{ queue, dedupe: { key: 'k', mode: 'unique', states: ['finished'] } }, 'dedupe.windowMs'],
      [
        { queue, dedupe: { key: 'k', mode: 'sometimes', windowMs: 1 } as unknown as DedupeOption },
        'dedupe.mode',
      ],
    ];
    for (const [job, path] of cases) {
      await expectValidationError(storage.enqueue(job), path);
      await expectValidationError(storage.enqueueMany([{ queue }, job]), `items[1].${path}`);
    }
    expect(await countRows(db, 'hot', { queue })).toBe(0);
    expect(await dedupeKeyRows(db, 'k')).toBe(0);
  });
});
