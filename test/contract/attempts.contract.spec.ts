import { randomBytes } from 'node:crypto';
import { STORED_TEXT } from '../../libs/chokaq/src/common/stored-text';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import type { JobAttempt } from '../../libs/chokaq/src/interfaces/job-view.interface';
import type { JobLease } from '../../libs/chokaq/src/interfaces/job.interface';
import { MAX_ATTEMPT_ERROR } from '../../libs/chokaq/src/validation/limits';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import {
  backdate,
  claim,
  countRows,
  expectOnlyIn,
  expectValidationError,
  newWorkerId,
  startJob,
  uniqueQueue,
} from './helpers';

/**
 * Issue 17, part 2: the attempt history. A run that started and did not end in the archive leaves
 * one `JobAttempts` row, written with the move that ended it (retried, timeout, zombie, cancelled,
 * failed); the archive row is the successful attempt, so a job that succeeds at once writes
 * nothing. `getJob(id, { attempts: true })` reads the rows oldest first; a resurrect keeps them;
 * purge and retention delete them with the job's last row. Each test has its own database (the
 * rescue and retention act on every queue, and the table is counted whole).
 */
describeEachDialect('storage contract: attempt history', (fixture) => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await fixture.create();
  });
  afterEach(async () => {
    await db?.close();
  });

  const HOUR = 3_600_000;

  /** A job of its own type on `queue`, started by `workerId`. */
  async function start(queue: string, workerId: string): Promise<JobLease & { type: string }> {
    const type = `attempts.${randomBytes(4).toString('hex')}`;
    const lease = await startJob(db.storage, queue, { type }, { workerId });
    return { ...lease, type };
  }

  /** Claims the (due) job again as `workerId` and starts it: the next attempt. */
  async function runAgain(
    queue: string,
    type: string,
    id: string,
    workerId: string,
  ): Promise<JobLease> {
    const c = await claim(db.storage, { queues: [], types: [{ queue, type }] }, 1, workerId);
    expect(c.rows.map((r) => r.id)).toEqual([id]);
    expect(await db.storage.markAsProcessing(c.leases)).toEqual([id]);
    return c.leases[0];
  }

  async function attemptsOf(id: string): Promise<JobAttempt[]> {
    const view = await db.storage.getJob(id, { attempts: true });
    expect(view).not.toBeNull();
    return view!.attempts!;
  }

  /** What every attempt row holds whatever its outcome: its run's facts, in order. */
  function expectRuns(attempts: JobAttempt[], runs: Array<{ lease: JobLease; attempt: number }>) {
    expect(attempts.map((a) => [a.seq, a.attempt, a.workerId, a.leaseId])).toEqual(
      runs.map((r, i) => [i + 1, r.attempt, r.lease.workerId, r.lease.leaseId]),
    );
    for (const a of attempts) {
      expect(a.startedAtUtc).toBeInstanceOf(Date);
      expect(a.finishedAtUtc).toBeInstanceOf(Date);
      expect(a.finishedAtUtc.getTime()).toBeGreaterThanOrEqual(a.startedAtUtc!.getTime());
      expect(a.durationMs).toBeGreaterThanOrEqual(0);
      expect(a.durationMs).toBeLessThan(HOUR);
    }
  }

  it('a job retried twice then archived has two attempt rows (retried, with their errors, workers and leases) and its archive row; without the option nothing more is read', async () => {
    const queue = uniqueQueue('attempts.retried');
    const w1 = newWorkerId('one');
    const w2 = newWorkerId('two');
    const first = await start(queue, w1);
    expect(await db.storage.rescheduleForRetry(first, 0, 'Error: first\n    at a (a.js:1)')).toBe(
      1,
    );
    const second = await runAgain(queue, first.type, first.id, w2);
    expect(await db.storage.rescheduleForRetry(second, 0, 'Error: second')).toBe(1);
    const third = await runAgain(queue, first.type, first.id, newWorkerId('three'));
    expect(await db.storage.archiveSucceeded([{ ...third, durationMs: 3 }])).toHaveLength(1);

    const attempts = await attemptsOf(first.id);
    expectRuns(attempts, [
      { lease: first, attempt: 1 },
      { lease: second, attempt: 2 },
    ]);
    expect(attempts.map((a) => [a.outcome, a.error])).toEqual([
      ['retried', 'Error: first\n    at a (a.js:1)'],
      ['retried', 'Error: second'],
    ]);
    expect(await countRows(db, 'attempts', { job_id: first.id })).toBe(2);
    // The third, successful attempt is the archive row.
    await expectOnlyIn(db, first.id, 'archive');
    const archived = await db.storage.getJob(first.id);
    expect(archived).toMatchObject({
      pillar: 'archive',
      attemptCount: 3,
      workerId: third.workerId,
    });
    expect(archived).not.toHaveProperty('attempts');
    expect(await db.storage.getJob(first.id, { attempts: false })).not.toHaveProperty('attempts');
  });

  it('a job that succeeds at its first attempt writes no attempt row (claim-started or marked)', async () => {
    const queue = uniqueQueue('attempts.first');
    const before = await db.count('attempts');
    const marked = await start(queue, newWorkerId());
    await db.storage.enqueueMany([
      { queue, type: 'fast' },
      { queue, type: 'fast' },
    ]);
    const started = await claim(
      db.storage,
      { queues: [], types: [{ queue, type: 'fast' }] },
      2,
      undefined,
      { start: 2 },
    );
    const runs = [marked, ...started.leases];
    expect(
      await db.storage.archiveSucceeded(runs.map((l) => ({ ...l, durationMs: 1 }))),
    ).toHaveLength(3);
    expect(await db.count('attempts')).toBe(before);
    for (const run of runs) expect(await attemptsOf(run.id)).toEqual([]);
  });

  it('a job that exhausts its retries has a row for every attempt, the last one failed, and is in the DLQ', async () => {
    const queue = uniqueQueue('attempts.exhausted');
    const first = await start(queue, newWorkerId('a'));
    await db.storage.rescheduleForRetry(first, 0, 'Error: 1');
    const second = await runAgain(queue, first.type, first.id, newWorkerId('b'));
    await db.storage.rescheduleForRetry(second, 0, 'Error: 2');
    const last = await runAgain(queue, first.type, first.id, newWorkerId('c'));
    expect(
      await db.storage.moveToDlq(last, {
        reason: FailureReason.MaxRetriesExceeded,
        error: 'Error: 3',
        durationMs: 4,
      }),
    ).toBe(1);

    await expectOnlyIn(db, first.id, 'dlq');
    const attempts = await attemptsOf(first.id);
    expectRuns(attempts, [
      { lease: first, attempt: 1 },
      { lease: second, attempt: 2 },
      { lease: last, attempt: 3 },
    ]);
    expect(attempts.map((a) => [a.outcome, a.error])).toEqual([
      ['retried', 'Error: 1'],
      ['retried', 'Error: 2'],
      ['failed', 'Error: 3'],
    ]);
  });

  it("a zombie's attempt says zombie and names the worker that lost it, whether the job dies or is retried", async () => {
    const queue = uniqueQueue('attempts.zombie');
    const retryQueue = uniqueQueue('attempts.zombie-retry');
    await db.storage.updateQueue(retryQueue, { retryZombies: true });
    const lost = newWorkerId('lost');
    const dead = await start(queue, lost);
    const retried = await start(retryQueue, lost);
    await backdate(db, 'hot', 'heartbeat_utc', [dead.id, retried.id], HOUR);

    const result = await db.storage.archiveZombies(60_000);
    expect(result.dlq).toEqual([dead.id]);
    expect(result.retried).toEqual([retried.id]);

    for (const [run, pillar] of [
      [dead, 'dlq'],
      [retried, 'hot'],
    ] as const) {
      const view = await db.storage.getJob(run.id, { attempts: true });
      expect(view?.pillar).toBe(pillar);
      expectRuns(view!.attempts!, [{ lease: run, attempt: 1 }]);
      expect(view!.attempts!.map((a) => [a.outcome, a.workerId, a.error])).toEqual([
        ['zombie', lost, STORED_TEXT.zombie],
      ]);
    }
    // The retried zombie runs again: its next failure is the second row.
    const again = await runAgain(retryQueue, retried.type, retried.id, newWorkerId('next'));
    await db.storage.rescheduleForRetry(again, 0, 'Error: after the rescue');
    expect((await attemptsOf(retried.id)).map((a) => [a.seq, a.attempt, a.outcome])).toEqual([
      [1, 1, 'zombie'],
      [2, 2, 'retried'],
    ]);
  });

  it('a timed-out run says timeout; a run cancelled while it ran says cancelled; a job cancelled or dead-lettered before it started has no attempt', async () => {
    const queue = uniqueQueue('attempts.ends');
    const timedOut = await start(queue, newWorkerId());
    const timeoutText = 'ChokaQJobTimeoutError: job exceeded its execution timeout of 50 ms';
    await db.storage.moveToDlq(timedOut, {
      reason: FailureReason.Timeout,
      error: timeoutText,
      durationMs: 50,
    });
    expect((await attemptsOf(timedOut.id)).map((a) => [a.outcome, a.error])).toEqual([
      ['timeout', timeoutText],
    ]);

    const running = await start(queue, newWorkerId());
    const { id: pending } = await db.storage.enqueue({ queue, type: 'never-started' });
    const fetched = await startJob(db.storage, queue, {}, { fetchedOnly: true });
    expect(await db.storage.cancel([running.id, pending, fetched.id], 'ops')).toEqual({
      cancelled: expect.arrayContaining([pending, fetched.id]),
      cancelRequested: [running.id],
    });
    // The owner aborts the run and moves it, as the runtime does on a cancel request.
    await db.storage.moveToDlq(running, {
      reason: FailureReason.Cancelled,
      error: STORED_TEXT.cancelledWhileRunning,
    });
    expect((await attemptsOf(running.id)).map((a) => [a.outcome, a.workerId])).toEqual([
      ['cancelled', running.workerId],
    ]);
    expect(await db.storage.getJob(running.id)).toMatchObject({ status: JobStatus.Cancelled });
    expect(await attemptsOf(pending)).toEqual([]);
    expect(await attemptsOf(fetched.id)).toEqual([]);

    // An admin move by id of a job that never ran, and one of a running job.
    const { id: queued } = await db.storage.enqueue({ queue, type: 'queued' });
    await db.storage.moveToDlq({ id: queued }, { reason: FailureReason.FatalError, error: 'x' });
    expect(await attemptsOf(queued)).toEqual([]);
    const busy = await start(queue, newWorkerId('busy'));
    await db.storage.moveToDlq({ id: busy.id }, { reason: FailureReason.FatalError, error: 'y' });
    expect((await attemptsOf(busy.id)).map((a) => [a.outcome, a.workerId, a.error])).toEqual([
      ['failed', busy.workerId, 'y'],
    ]);
  });

  it('a resurrect keeps the history, and the next attempts continue it (seq goes on, the attempt number restarts)', async () => {
    const queue = uniqueQueue('attempts.resurrect');
    const first = await start(queue, newWorkerId('a'));
    await db.storage.rescheduleForRetry(first, 0, 'Error: 1');
    const second = await runAgain(queue, first.type, first.id, newWorkerId('b'));
    await db.storage.moveToDlq(second, { reason: FailureReason.FatalError, error: 'Error: 2' });
    expect(await db.storage.resurrect(first.id, {}, 'ops')).toBe(1);
    expect(await db.storage.getJob(first.id)).toMatchObject({ pillar: 'hot', attemptCount: 0 });
    expect((await attemptsOf(first.id)).map((a) => a.seq)).toEqual([1, 2]);

    const third = await runAgain(queue, first.type, first.id, newWorkerId('c'));
    await db.storage.rescheduleForRetry(third, 0, 'Error: 3');
    const fourth = await runAgain(queue, first.type, first.id, newWorkerId('d'));
    await db.storage.archiveSucceeded([{ ...fourth, durationMs: 1 }]);
    const attempts = await attemptsOf(first.id);
    expectRuns(attempts, [
      { lease: first, attempt: 1 },
      { lease: second, attempt: 2 },
      { lease: third, attempt: 1 },
    ]);
    expect(attempts.map((a) => a.outcome)).toEqual(['retried', 'failed', 'retried']);
  });

  it('purge and retention delete the attempt rows with the DLQ or archive row; other jobs keep theirs', async () => {
    const queue = uniqueQueue('attempts.retention');
    /** A job with one retried attempt, then archived or dead-lettered. */
    const withHistory = async (end: 'archive' | 'dlq'): Promise<string> => {
      const first = await start(queue, newWorkerId());
      await db.storage.rescheduleForRetry(first, 0, 'Error: once');
      const next = await runAgain(queue, first.type, first.id, newWorkerId());
      if (end === 'archive') {
        await db.storage.archiveSucceeded([{ ...next, durationMs: 1 }]);
      } else {
        await db.storage.moveToDlq(next, { reason: FailureReason.FatalError, error: 'x' });
      }
      return first.id;
    };
    const purged = await withHistory('dlq');
    const purgedByFilter = await withHistory('dlq');
    const oldArchived = await withHistory('archive');
    const oldDead = await withHistory('dlq');
    const kept = [await withHistory('archive'), await withHistory('dlq')];
    const rowsOf = (id: string) => countRows(db, 'attempts', { job_id: id });
    expect(await rowsOf(purged)).toBe(2);

    expect(await db.storage.purgeDlq([purged])).toBe(1);
    expect(await rowsOf(purged)).toBe(0);
    expect(await db.storage.purgeDlqByFilter({ ids: [purgedByFilter] }, 10)).toBe(1);
    expect(await rowsOf(purgedByFilter)).toBe(0);

    await backdate(db, 'archive', 'finished_at_utc', [oldArchived], 2 * HOUR);
    await backdate(db, 'dlq', 'failed_at_utc', [oldDead], 2 * HOUR);
    const result = await db.storage.applyRetention(
      { archiveMs: HOUR, dlqMs: HOUR, metricsMs: 7 * 24 * HOUR, batchSize: 1 },
      { action: 'retention.run', actor: 'ops' },
    );
    expect(result).toMatchObject({ archive: 1, dlq: 1 });
    expect(await rowsOf(oldArchived)).toBe(0);
    expect(await rowsOf(oldDead)).toBe(0);
    // Retried once, then archived (one row) or dead-lettered (two).
    expect([await rowsOf(kept[0]), await rowsOf(kept[1])]).toEqual([1, 2]);
    expect(await db.count('attempts')).toBe(3);
  });

  it(`keeps the first ${MAX_ATTEMPT_ERROR} characters of an attempt's error (the job's own error text is kept whole)`, async () => {
    const queue = uniqueQueue('attempts.long');
    const first = await start(queue, newWorkerId());
    const long = `Error: ${'x'.repeat(MAX_ATTEMPT_ERROR + 500)}`;
    await db.storage.rescheduleForRetry(first, 0, long);
    const [attempt] = await attemptsOf(first.id);
    expect(attempt.error).toBe(long.slice(0, MAX_ATTEMPT_ERROR));
    expect((await db.storage.getJob(first.id))?.lastError).toBe(long);
  });

  it('refuses options getJob does not have, or of the wrong type, before any SQL', async () => {
    const { id } = await db.storage.enqueue({ queue: uniqueQueue('attempts.options') });
    await expectValidationError(
      db.storage.getJob(id, { attempts: 'yes' } as unknown as { attempts: boolean }),
      'options.attempts',
    );
    await expectValidationError(
      db.storage.getJob(id, { attempt: true } as unknown as { attempts: boolean }),
      'options.attempt',
    );
    expect(await db.storage.getJob(id, {})).not.toHaveProperty('attempts');
    expect(
      await db.storage.getJob('0190a2b4-0000-7000-8000-000000000000', { attempts: true }),
    ).toBe(null);
  });
});
