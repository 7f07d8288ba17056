import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TableName, TestDatabase, describeEachDialect } from '../support/test-database';
import {
  backdate,
  claim,
  countRows,
  countersOf,
  expectOnlyIn,
  expectRejects,
  pillarsOf,
  startJob,
  uniqueQueue,
} from './helpers';

/**
 * SPEC §8 invariants 2 and 9, plus cancel and resurrect: every move is all-or-nothing with its
 * counters and buckets, and a job is in exactly one pillar at every step.
 */
describeEachDialect('storage contract: atomic moves', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  /** Everything a move touches, for one job and its queue. */
  async function snapshot(id: string, queue: string) {
    return {
      job: await db.storage.getJob(id),
      pillars: await pillarsOf(db, id),
      counters: await countersOf(db.storage, queue),
      rows: {
        hot: await countRows(db, 'hot', { queue }),
        archive: await countRows(db, 'archive', { queue }),
        dlq: await countRows(db, 'dlq', { queue }),
        buckets: await countRows(db, 'buckets', { queue }),
      },
    };
  }

  /** Ten days: far beyond clock drift, and within SQL Server's int argument of DATEADD in ms. */
  const LONG_AGO_MS = 10 * 86_400_000;

  /** Moves the job-age clock (`EnqueuedAtUtc`) of DLQ rows far into the past, and checks it moved. */
  async function ageInDlq(ids: readonly string[]): Promise<void> {
    await backdate(db, 'dlq', 'enqueued_at_utc', ids, LONG_AGO_MS);
    const now = (await db.storage.now()).getTime();
    for (const id of ids) {
      const job = await db.storage.getJob(id);
      expect(job?.pillar).toBe('dlq');
      expect(now - job!.enqueuedAtUtc.getTime()).toBeGreaterThanOrEqual(LONG_AGO_MS);
    }
  }

  /**
   * The job-age clock of resurrected jobs restarted at the database's now (`retry.maxJobAgeMs`
   * counts from it): within a few seconds of `now()`, wherever the test's own clock is.
   */
  async function expectEnqueuedNow(ids: readonly string[]): Promise<void> {
    const now = (await db.storage.now()).getTime();
    for (const id of ids) {
      const job = await db.storage.getJob(id);
      expect(job?.pillar).toBe('hot');
      expect(Math.abs(now - job!.enqueuedAtUtc.getTime())).toBeLessThan(5_000);
    }
  }

  /**
   * Installs a failing trigger on `table`, runs the move, and proves the error surfaced and that
   * the source row, the target and the counters are exactly as before.
   */
  async function expectRolledBack(
    id: string,
    queue: string,
    table: TableName,
    mode: 'inserts' | 'writes',
    move: () => Promise<unknown>,
  ): Promise<void> {
    const before = await snapshot(id, queue);
    if (mode === 'inserts') await db.failInserts(table);
    else await db.failWrites(table);
    try {
      await expectRejects(move());
    } finally {
      await db.clearFailure(table);
    }
    expect(await snapshot(id, queue)).toEqual(before);
  }

  it('invariant 2: a job is in exactly one pillar at every step of its lifecycle', async () => {
    const queue = uniqueQueue('life');
    // Happy path: hot → hot (Fetched) → hot (Processing) → archive.
    const { id: a } = await db.storage.enqueue({ queue });
    await expectOnlyIn(db, a, 'hot');
    const ca = await claim(db.storage, queue, 1);
    await expectOnlyIn(db, a, 'hot');
    expect(await db.storage.markAsProcessing(ca.leases)).toEqual([a]);
    await expectOnlyIn(db, a, 'hot');
    expect(await db.storage.archiveSucceeded([{ ...ca.leases[0], durationMs: 12 }])).toEqual([
      { id: a, leaseId: ca.leases[0].leaseId },
    ]);
    await expectOnlyIn(db, a, 'archive');
    const archived = await db.storage.getJob(a);
    expect(archived).toMatchObject({
      status: JobStatus.Succeeded,
      durationMs: 12,
      attemptCount: 1,
    });
    expect(archived?.finishedAtUtc).toBeInstanceOf(Date);

    // Retry, failure, resurrect, cancel, resurrect, admin move, purge.
    const { id: b } = await db.storage.enqueue({ queue });
    let lease = (await claim(db.storage, queue, 1)).leases[0];
    await db.storage.markAsProcessing([lease]);
    expect(await db.storage.rescheduleForRetry(lease, 0, 'Error: first')).toBe(1);
    await expectOnlyIn(db, b, 'hot');
    expect(await db.storage.getJob(b)).toMatchObject({
      status: JobStatus.Pending,
      attemptCount: 1,
      lastError: 'Error: first',
      workerId: null,
      leaseId: null,
    });
    lease = (await claim(db.storage, queue, 1)).leases[0];
    await db.storage.markAsProcessing([lease]);
    expect(
      await db.storage.moveToDlq(lease, {
        reason: FailureReason.MaxRetriesExceeded,
        error: 'Error: second',
      }),
    ).toBe(1);
    await expectOnlyIn(db, b, 'dlq');
    expect(await db.storage.getJob(b)).toMatchObject({
      status: JobStatus.Failed,
      failureReason: FailureReason.MaxRetriesExceeded,
      attemptCount: 2,
    });
    expect((await db.storage.getJob(b))?.errorDetails).toContain('Error: second');

    expect(await db.storage.resurrect(b)).toBe(1);
    await expectOnlyIn(db, b, 'hot');
    lease = (await claim(db.storage, queue, 1)).leases[0];
    expect(await db.storage.cancel([b], 'operator')).toEqual({
      cancelled: [b],
      cancelRequested: [],
    });
    await expectOnlyIn(db, b, 'dlq');
    expect(await db.storage.getJob(b)).toMatchObject({
      status: JobStatus.Cancelled,
      failureReason: FailureReason.Cancelled,
    });
    expect(await db.storage.resurrect(b)).toBe(1);
    await expectOnlyIn(db, b, 'hot');
    expect(
      await db.storage.moveToDlq({ id: b }, { reason: FailureReason.FatalError, error: 'admin' }),
    ).toBe(1);
    await expectOnlyIn(db, b, 'dlq');
    expect(await db.storage.purgeDlq([b])).toBe(1);
    expect(await pillarsOf(db, b)).toEqual([]);
    expect(await db.storage.getJob(b)).toBeNull();
  });

  it('invariant 2: a concurrent observer never sees a job in zero or two pillars while it moves', async () => {
    // One statement reads all three tables: a single snapshot on PostgreSQL (read committed is
    // per statement) and on SQLite (WAL readers). SQL Server's locking read committed gives no
    // statement-wide snapshot, so the observer is not meaningful there; the rollback proofs are.
    if (db.dialect === 'mssql') return;
    const queue = uniqueQueue('observe');
    const { id } = await db.storage.enqueue({ queue });
    const count =
      `SELECT (SELECT COUNT(*) FROM ${db.table('hot')} WHERE id = ${db.param(1)})` +
      ` + (SELECT COUNT(*) FROM ${db.table('archive')} WHERE id = ${db.param(db.dialect === 'postgres' ? 1 : 2)})` +
      ` + (SELECT COUNT(*) FROM ${db.table('dlq')} WHERE id = ${db.param(db.dialect === 'postgres' ? 1 : 3)}) AS n`;
    const params = db.dialect === 'postgres' ? [id] : [id, id, id];
    const seen = new Set<number>();
    let moving = true;
    const observer = (async () => {
      while (moving) {
        const rows = await db.sql<{ n: unknown }>(count, params);
        seen.add(Number(rows[0].n));
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    try {
      for (let i = 0; i < 25; i++) {
        const c = await claim(db.storage, queue, 1);
        expect(c.rows).toHaveLength(1);
        expect(
          await db.storage.moveToDlq(c.leases[0], { reason: FailureReason.FatalError, error: 'x' }),
        ).toBe(1);
        expect(await db.storage.resurrect(id)).toBe(1);
      }
    } finally {
      moving = false;
      await observer;
    }
    expect([...seen]).toEqual([1]);
  });

  it('invariant 2: archiveSucceeded rolls back with its counters and buckets when any write fails', async () => {
    const queue = uniqueQueue('rb.archive');
    const lease = await startJob(db.storage, queue);
    const archive = () => db.storage.archiveSucceeded([{ ...lease, durationMs: 5 }]);
    await expectRolledBack(lease.id, queue, 'archive', 'inserts', archive);
    await expectRolledBack(lease.id, queue, 'stats', 'writes', archive);
    await expectRolledBack(lease.id, queue, 'buckets', 'writes', archive);

    const before = await countersOf(db.storage, queue);
    expect(await archive()).toEqual([{ id: lease.id, leaseId: lease.leaseId }]);
    await expectOnlyIn(db, lease.id, 'archive');
    expect((await countersOf(db.storage, queue)).succeededTotal).toBe(before.succeededTotal + 1);
    expect(await countRows(db, 'buckets', { queue })).toBeGreaterThan(0);
  });

  it('invariant 2: moveToDlq rolls back with its counters and buckets when any write fails', async () => {
    const queue = uniqueQueue('rb.dlq');
    const lease = await startJob(db.storage, queue);
    const move = () =>
      db.storage.moveToDlq(lease, {
        reason: FailureReason.MaxRetriesExceeded,
        error: 'boom',
        durationMs: 3,
      });
    await expectRolledBack(lease.id, queue, 'dlq', 'inserts', move);
    await expectRolledBack(lease.id, queue, 'stats', 'writes', move);
    await expectRolledBack(lease.id, queue, 'buckets', 'writes', move);

    const before = await countersOf(db.storage, queue);
    expect(await move()).toBe(1);
    await expectOnlyIn(db, lease.id, 'dlq');
    expect((await countersOf(db.storage, queue)).failedTotal).toBe(before.failedTotal + 1);

    // The admin path (by id, no lease) rolls back the same way.
    const { id } = await db.storage.enqueue({ queue });
    const admin = () =>
      db.storage.moveToDlq({ id }, { reason: FailureReason.FatalError, error: 'admin' });
    await expectRolledBack(id, queue, 'dlq', 'inserts', admin);
    expect(await admin()).toBe(1);
    await expectOnlyIn(db, id, 'dlq');
  });

  it('invariant 2: cancel (pending → DLQ) rolls back with CancelledTotal when any write fails', async () => {
    const queue = uniqueQueue('rb.cancel');
    const { id } = await db.storage.enqueue({ queue });
    const cancel = () => db.storage.cancel([id], 'operator');
    await expectRolledBack(id, queue, 'dlq', 'inserts', cancel);
    await expectRolledBack(id, queue, 'stats', 'writes', cancel);
    await expectRolledBack(id, queue, 'buckets', 'writes', cancel);

    const before = await countersOf(db.storage, queue);
    expect(await cancel()).toEqual({ cancelled: [id], cancelRequested: [] });
    await expectOnlyIn(db, id, 'dlq');
    expect((await countersOf(db.storage, queue)).cancelledTotal).toBe(before.cancelledTotal + 1);
  });

  it('invariant 2: resurrect (DLQ → hot) rolls back the DLQ delete and ResurrectedTotal when the hot insert fails', async () => {
    const queue = uniqueQueue('rb.resurrect');
    const lease = await startJob(db.storage, queue, { idempotencyKey: `key-${queue}` });
    await db.storage.moveToDlq(lease, { reason: FailureReason.FatalError, error: 'fatal' });
    const resurrect = () => db.storage.resurrect(lease.id, { priority: 99 }, 'operator');
    await expectRolledBack(lease.id, queue, 'hot', 'inserts', resurrect);
    await expectRolledBack(lease.id, queue, 'stats', 'writes', resurrect);
    const many = () => db.storage.resurrectMany([lease.id]);
    await expectRolledBack(lease.id, queue, 'hot', 'inserts', many);

    const before = await countersOf(db.storage, queue);
    expect(await resurrect()).toBe(1);
    await expectOnlyIn(db, lease.id, 'hot');
    expect((await countersOf(db.storage, queue)).resurrectedTotal).toBe(
      before.resurrectedTotal + 1,
    );
  });

  it('invariant 2: archiveZombies rolls back the hot delete and FailedTotal when the DLQ insert fails', async () => {
    const queue = uniqueQueue('rb.zombie');
    const lease = await startJob(db.storage, queue);
    await backdate(db, 'hot', 'heartbeat_utc', [lease.id], 3_600_000);
    const rescue = () => db.storage.archiveZombies(600_000);
    await expectRolledBack(lease.id, queue, 'dlq', 'inserts', rescue);
    await expectRolledBack(lease.id, queue, 'stats', 'writes', rescue);

    const result = await rescue();
    expect(result.dlq).toContain(lease.id);
    await expectOnlyIn(db, lease.id, 'dlq');
    expect(await db.storage.getJob(lease.id)).toMatchObject({
      status: JobStatus.Zombie,
      failureReason: FailureReason.Zombie,
    });
  });

  it("invariant 2: a running row's retry, DLQ move and zombie sweep roll back with its attempt row when that insert fails", async () => {
    const queue = uniqueQueue('rb.attempts');
    const lease = await startJob(db.storage, queue);
    const history = async () => (await db.storage.getJob(lease.id, { attempts: true }))?.attempts;
    const retry = () => db.storage.rescheduleForRetry(lease, 0, 'Error: retried');
    const dead = () =>
      db.storage.moveToDlq(lease, { reason: FailureReason.FatalError, error: 'x', durationMs: 2 });
    await expectRolledBack(lease.id, queue, 'attempts', 'inserts', retry);
    await expectRolledBack(lease.id, queue, 'attempts', 'inserts', dead);
    await backdate(db, 'hot', 'heartbeat_utc', [lease.id], 3_600_000);
    const sweep = () => db.storage.archiveZombies(600_000);
    await expectRolledBack(lease.id, queue, 'attempts', 'inserts', sweep);
    expect(await history()).toEqual([]);

    // Without the failure, each move and its attempt row land together.
    expect((await sweep()).dlq).toContain(lease.id);
    expect(await history()).toHaveLength(1);
  });

  it('error text with NUL characters or of any length still reaches the DLQ and LastError (sanitised)', async () => {
    const queue = uniqueQueue('errtext');
    const retried = await startJob(db.storage, queue);
    expect(await db.storage.rescheduleForRetry(retried, 0, 'Error: a\u0000b')).toBe(1);
    const lastError = (await db.storage.getJob(retried.id))?.lastError ?? '';
    expect(lastError).toContain('Error: a');
    expect(lastError).not.toContain('\u0000');

    const lease = await startJob(db.storage, queue);
    const huge = `Error: nul\u0000 ${'x'.repeat(100_000)}`;
    expect(
      await db.storage.moveToDlq(lease, { reason: FailureReason.FatalError, error: huge }),
    ).toBe(1);
    const dead = await db.storage.getJob(lease.id);
    expect(dead?.pillar).toBe('dlq');
    expect(dead!.errorDetails!.startsWith('Error: nul')).toBe(true);
    expect(dead!.errorDetails).not.toContain('\u0000');
    expect(dead!.errorDetails!.length).toBeLessThan(huge.length);
  });

  it('moves of unknown ids change nothing and report zero', async () => {
    const unknown = '0190a000-0000-7000-8000-00000000dead';
    expect(
      await db.storage.moveToDlq({ id: unknown }, { reason: FailureReason.FatalError, error: 'x' }),
    ).toBe(0);
    expect(await db.storage.cancel([unknown])).toEqual({ cancelled: [], cancelRequested: [] });
    expect(await db.storage.resurrectMany([unknown])).toEqual([]);
    expect(await db.storage.purgeDlq([unknown])).toBe(0);
    expect(await pillarsOf(db, unknown)).toEqual([]);
  });

  it('cancel: pending and fetched → DLQ Cancelled (CancelledTotal), processing → cancel requested', async () => {
    const queue = uniqueQueue('cancel');
    const { id: pending } = await db.storage.enqueue({ queue, priority: 1 });
    const fetched = await startJob(db.storage, queue, { priority: 5 }, { fetchedOnly: true });
    const running = await startJob(db.storage, queue, { priority: 5 });
    const archivedLease = await startJob(db.storage, queue);
    await db.storage.archiveSucceeded([{ ...archivedLease, durationMs: 1 }]);
    const before = await countersOf(db.storage, queue);

    const result = await db.storage.cancel(
      [pending, fetched.id, running.id, archivedLease.id, '0190a000-0000-7000-8000-000000000000'],
      'operator',
    );
    expect([...result.cancelled].sort()).toEqual([pending, fetched.id].sort());
    expect(result.cancelRequested).toEqual([running.id]);

    for (const id of [pending, fetched.id]) {
      await expectOnlyIn(db, id, 'dlq');
      expect(await db.storage.getJob(id)).toMatchObject({
        status: JobStatus.Cancelled,
        failureReason: FailureReason.Cancelled,
      });
    }
    const runningView = await db.storage.getJob(running.id);
    expect(runningView).toMatchObject({ pillar: 'hot', status: JobStatus.Processing });
    expect(runningView?.cancelRequestedUtc).toBeInstanceOf(Date);
    await expectOnlyIn(db, archivedLease.id, 'archive');

    let after = await countersOf(db.storage, queue);
    expect(after.cancelledTotal).toBe(before.cancelledTotal + 2);
    expect(after.failedTotal).toBe(before.failedTotal);

    // The owner sees the request on its heartbeat and moves the job to DLQ as Cancelled.
    const beat = await db.storage.keepAlive(running.workerId, [running]);
    expect(beat.cancelRequested).toEqual([running.id]);
    expect(
      await db.storage.moveToDlq(running, { reason: FailureReason.Cancelled, error: 'cancelled' }),
    ).toBe(1);
    after = await countersOf(db.storage, queue);
    expect(after.cancelledTotal).toBe(before.cancelledTotal + 3);
    expect(after.failedTotal).toBe(before.failedTotal);
    expect((await db.storage.getJob(running.id))?.status).toBe(JobStatus.Cancelled);

    // Cancelling again changes nothing.
    expect(await db.storage.cancel([pending, running.id])).toEqual({
      cancelled: [],
      cancelRequested: [],
    });
  });

  it('resurrect with edits: payload, tags, priority applied; attempts reset; idempotency key not reinserted', async () => {
    const queue = uniqueQueue('edit');
    const key = `key-${queue}`;
    const { id } = await db.storage.enqueue({
      queue,
      payload: { v: 1 },
      tags: ['old'],
      priority: 5,
      idempotencyKey: key,
    });
    let lease = (await claim(db.storage, queue, 1)).leases[0];
    await db.storage.markAsProcessing([lease]);
    await db.storage.rescheduleForRetry(lease, 0, 'Error: once');
    lease = (await claim(db.storage, queue, 1)).leases[0];
    await db.storage.markAsProcessing([lease]);
    await db.storage.moveToDlq(lease, {
      reason: FailureReason.MaxRetriesExceeded,
      error: 'Error: twice',
    });
    const dead = await db.storage.getJob(id);
    expect(dead).toMatchObject({
      pillar: 'dlq',
      attemptCount: 2,
      idempotencyKey: key,
      priority: 5,
    });

    await ageInDlq([id]);
    const before = await countersOf(db.storage, queue);
    expect(
      await db.storage.resurrect(id, { payload: { v: 2 }, tags: ['new', 'x'], priority: 42 }, 'op'),
    ).toBe(1);
    const alive = await db.storage.getJob(id);
    expect(alive).toMatchObject({
      pillar: 'hot',
      status: JobStatus.Pending,
      attemptCount: 0,
      payload: { v: 2 },
      tags: ['new', 'x'],
      priority: 42,
      idempotencyKey: null,
      workerId: null,
      leaseId: null,
    });
    expect(alive!.createdAtUtc.getTime()).toBe(dead!.createdAtUtc.getTime());
    await expectEnqueuedNow([id]);
    expect((await countersOf(db.storage, queue)).resurrectedTotal).toBe(
      before.resurrectedTotal + 1,
    );
    // Not in the DLQ any more: a second resurrect is a no-op.
    expect(await db.storage.resurrect(id)).toBe(0);

    // The key was not reinserted, so a new job with it is created.
    const again = await db.storage.enqueue({ queue, idempotencyKey: key });
    expect(again.created).toBe(true);
    expect(again.id).not.toBe(id);

    // Without edits: original priority, payload and tags; an unknown id moves nothing.
    const other = await startJob(db.storage, uniqueQueue('edit.none'), {
      payload: { keep: true },
      tags: ['t'],
      priority: -3,
    });
    await db.storage.moveToDlq(other, { reason: FailureReason.FatalError, error: 'x' });
    await ageInDlq([other.id]);
    expect(await db.storage.resurrect(other.id)).toBe(1);
    await expectEnqueuedNow([other.id]);
    expect(await db.storage.getJob(other.id)).toMatchObject({
      payload: { keep: true },
      tags: ['t'],
      priority: -3,
      attemptCount: 0,
    });
    expect(await db.storage.resurrect('0190a000-0000-7000-8000-000000000001')).toBe(0);
  });

  it('resurrectByFilter and previewDlqFilter: matched, will-affect, oldest failure first', async () => {
    const queue = uniqueQueue('byfilter');
    const retried: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { id } = await db.storage.enqueue({ queue, tags: ['bulk'] });
      await db.storage.moveToDlq(
        { id },
        { reason: FailureReason.MaxRetriesExceeded, error: `e${i}` },
      );
      retried.push(id);
    }
    const fatal: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { id } = await db.storage.enqueue({ queue });
      await db.storage.moveToDlq({ id }, { reason: FailureReason.FatalError, error: 'fatal' });
      fatal.push(id);
    }
    // Make the failure order unambiguous: retried[0] failed first.
    for (let i = 0; i < retried.length; i++) {
      await backdate(db, 'dlq', 'failed_at_utc', [retried[i]], (retried.length - i) * 10_000);
    }

    const filter = { queue, reason: FailureReason.MaxRetriesExceeded };
    const preview = await db.storage.previewDlqFilter(filter, 3);
    expect(preview.matched).toBe(5);
    expect(preview.willAffect).toBe(3);
    expect(preview.sampleIds.length).toBeGreaterThan(0);
    expect(preview.sampleIds.every((id) => retried.includes(id))).toBe(true);
    expect(await db.storage.previewDlqFilter({ queue }, 100)).toMatchObject({
      matched: 7,
      willAffect: 7,
    });
    expect(await db.storage.previewDlqFilter({ queue, tag: 'bulk' }, 100)).toMatchObject({
      matched: 5,
    });

    await ageInDlq(retried);
    const before = await countersOf(db.storage, queue);
    const moved = await db.storage.resurrectByFilter(filter, 3, 'operator');
    expect([...moved].sort()).toEqual(retried.slice(0, 3).sort());
    await expectEnqueuedNow(moved);
    for (const id of moved) await expectOnlyIn(db, id, 'hot');
    for (const id of [...retried.slice(3), ...fatal]) await expectOnlyIn(db, id, 'dlq');
    expect((await countersOf(db.storage, queue)).resurrectedTotal).toBe(
      before.resurrectedTotal + 3,
    );
    expect(await db.storage.previewDlqFilter(filter, 10)).toMatchObject({
      matched: 2,
      willAffect: 2,
    });

    expect(await db.storage.resurrectByFilter({ ids: [fatal[0]] }, 10)).toEqual([fatal[0]]);
    expect(
      await db.storage.resurrectByFilter({ queue, reason: FailureReason.Timeout }, 10),
    ).toEqual([]);
  });

  it('invariant 9: two operators resurrecting one job at once re-insert it once', async () => {
    const queue = uniqueQueue('inv9');
    const other: JobStorage = await db.openAnother({ poolSize: 3 });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        const { id } = await db.storage.enqueue({ queue });
        await db.storage.moveToDlq({ id }, { reason: FailureReason.FatalError, error: 'x' });
        ids.push(id);
      }
      const before = await countersOf(db.storage, queue);
      for (const id of ids.slice(0, 4)) {
        const results = await Promise.all([
          db.storage.resurrect(id),
          other.resurrect(id, { priority: 1 }),
        ]);
        expect(results[0] + results[1]).toBe(1);
        await expectOnlyIn(db, id, 'hot');
      }
      // Overlapping bulk resurrects: each id moves once, reported by exactly one caller.
      const back = await claim(db.storage, queue, 10);
      expect(back.rows).toHaveLength(4);
      for (const lease of back.leases) {
        await db.storage.moveToDlq(lease, { reason: FailureReason.FatalError, error: 'again' });
      }
      const [r1, r2] = await Promise.all([
        db.storage.resurrectMany(ids.slice(0, 4)),
        other.resurrectMany(ids.slice(2, 6)),
      ]);
      expect(r1.filter((id) => r2.includes(id))).toEqual([]);
      expect([...r1, ...r2].sort()).toEqual([...ids].sort());
      for (const id of ids) await expectOnlyIn(db, id, 'hot');
      expect(await countRows(db, 'hot', { queue })).toBe(6);
      expect((await countersOf(db.storage, queue)).resurrectedTotal).toBe(
        before.resurrectedTotal + 4 + 6,
      );
    } finally {
      await other.close();
    }
  });
});
