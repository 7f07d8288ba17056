import { hotJob } from '../../../../test/runtime/support/hot-job';
import { testOptions } from '../../../../test/runtime/support/options';
import { RecordingLogger } from '../../../../test/runtime/support/silent-logger';
import { ChokaQFatalError } from '../errors';
import type { JobOutcome } from '../interfaces/job-outcome.interface';
import { FailureReason, JobStatus } from '../interfaces/job-status.enum';
import type { HotJob, JobLease } from '../interfaces/job.interface';
import type { HandlerTransaction } from '../storage/job-storage';
import { DbClock } from './db-clock';
import { JobFinaliser, type ClaimedJob } from './job-finaliser';

/**
 * Verdict → storage, against a fake storage: which write each run result leads to, what the
 * circuit breaker hears, what counts as a conflict, and that the lease is handed back (before the
 * outcome) exactly once per run. The real storage is exercised by the runtime and fault suites.
 */
describe('JobFinaliser', () => {
  const retry = testOptions().retry; // 3 attempts, 50 ms base, ×2, no jitter

  function claimedJob(overrides: Partial<HotJob> = {}): ClaimedJob {
    const now = new Date();
    const job = hotJob(
      {
        status: JobStatus.Processing,
        leaseId: 'l1',
        startedAtUtc: now,
        ...overrides,
      },
      now,
    );
    return { job, lease: { id: job.id, workerId: 'w', leaseId: job.leaseId ?? 'l1' } };
  }

  function harness() {
    const events: string[] = [];
    const outcomes: JobOutcome[] = [];
    const settled: JobLease[] = [];
    const storage = {
      rescheduleForRetry: jest.fn(async (_lease: JobLease, _delayMs: number, _error: string) => 1),
      moveToDlq: jest.fn(async () => 1),
      release: jest.fn(async (leases: readonly JobLease[]) => leases.length),
      unstart: jest.fn(async (leases: readonly JobLease[]) => leases.length),
    };
    const batcher = { add: jest.fn(async () => true) };
    const breakers = {
      recordSuccess: jest.fn(),
      recordFailure: jest.fn(),
      releaseProbe: jest.fn(),
    };
    const logger = new RecordingLogger();
    const metrics = { conflict: jest.fn() };
    const finaliser = new JobFinaliser({
      storage,
      batcher,
      breakers,
      retry,
      clock: new DbClock(),
      logger,
      metrics,
      onSettled: (lease) => {
        settled.push(lease);
        events.push(`settled ${lease.leaseId}`);
      },
    });
    const emit = (o: JobOutcome) => {
      outcomes.push(o);
      events.push(`outcome ${o.leaseId}`);
    };
    return {
      finaliser,
      storage,
      batcher,
      breakers,
      logger,
      metrics,
      events,
      outcomes,
      settled,
      emit,
    };
  }

  afterEach(() => jest.useRealTimers());

  describe("a transactional handler's success", () => {
    function transaction(archive: () => Promise<boolean>) {
      return {
        manager: {},
        queryRunner: {},
        archive: jest.fn(archive),
        rollback: jest.fn(async () => undefined),
        abandon: jest.fn(async () => undefined),
      } as unknown as HandlerTransaction & { archive: jest.Mock; abandon: jest.Mock };
    }

    it('archives and commits in its own transaction, not through the batcher', async () => {
      const h = harness();
      const claimed = claimedJob();
      const tx = transaction(async () => true);
      await h.finaliser.finalise(
        claimed,
        { result: { kind: 'succeeded', durationMs: 9, transaction: tx }, attempt: 1, probe: false },
        h.emit,
      );
      expect(tx.archive).toHaveBeenCalledWith({ ...claimed.lease, durationMs: 9 });
      expect(h.batcher.add).not.toHaveBeenCalled();
      expect(h.finaliser.conflicts).toBe(0);
      expect(h.events).toEqual(['settled l1', 'outcome l1']);
      expect(h.outcomes[0]).toMatchObject({ outcome: 'succeeded', applied: true });
    });

    it('a lease lost by the archive is a conflict: rolled back, not applied', async () => {
      const h = harness();
      await h.finaliser.finalise(
        claimedJob(),
        {
          result: { kind: 'succeeded', durationMs: 9, transaction: transaction(async () => false) },
          attempt: 1,
          probe: false,
        },
        h.emit,
      );
      expect(h.finaliser.conflicts).toBe(1);
      expect(h.metrics.conflict).toHaveBeenCalledWith(expect.anything(), 'succeeded');
      expect(h.outcomes[0]).toMatchObject({ outcome: 'succeeded', applied: false });
    });

    it('a failed commit runs the failure policy, as a throw would', async () => {
      const h = harness();
      const tx = transaction(async () => {
        throw new Error('connection lost during COMMIT');
      });
      await h.finaliser.finalise(
        claimedJob(),
        { result: { kind: 'succeeded', durationMs: 9, transaction: tx }, attempt: 1, probe: false },
        h.emit,
      );
      expect(tx.abandon).toHaveBeenCalled();
      expect(h.storage.rescheduleForRetry).toHaveBeenCalledTimes(1);
      expect(h.storage.rescheduleForRetry.mock.calls[0][2]).toContain(
        'connection lost during COMMIT',
      );
      expect(h.outcomes).toEqual([expect.objectContaining({ outcome: 'retried', applied: true })]);
    });
  });

  it('a failed run with attempts left is rescheduled after the backoff delay, then settled and reported', async () => {
    const h = harness();
    const claimed = claimedJob();
    await h.finaliser.finalise(
      claimed,
      {
        result: { kind: 'failed', error: new Error('boom'), durationMs: 7 },
        attempt: 2,
        probe: true,
      },
      h.emit,
    );
    // Attempt 2 of 3 failed: the next waits base × multiplier¹ = 100 ms.
    expect(h.storage.rescheduleForRetry).toHaveBeenCalledTimes(1);
    const [lease, delayMs, error] = h.storage.rescheduleForRetry.mock.calls[0];
    expect(lease).toEqual(claimed.lease);
    expect(delayMs).toBe(100);
    expect(error).toContain('boom');
    expect(h.breakers.recordFailure).toHaveBeenCalledWith('q/t', true);
    expect(h.outcomes).toEqual([
      {
        id: 'job-1',
        leaseId: 'l1',
        queue: 'q',
        type: 't',
        outcome: 'retried',
        attempt: 2,
        durationMs: 7,
        error,
        applied: true,
        retryDelayMs: 100,
      },
    ]);
    expect(h.events).toEqual(['settled l1', 'outcome l1']);
    expect(h.finaliser.conflicts).toBe(0);
  });

  it('a failed run on its last attempt goes to the DLQ as MaxRetriesExceeded', async () => {
    const h = harness();
    await h.finaliser.finalise(
      claimedJob(),
      {
        result: { kind: 'failed', error: new Error('boom'), durationMs: 7 },
        attempt: 3,
        probe: false,
      },
      h.emit,
    );
    expect(h.storage.rescheduleForRetry).not.toHaveBeenCalled();
    expect(h.storage.moveToDlq).toHaveBeenCalledWith(
      expect.objectContaining({ id: 'job-1', leaseId: 'l1' }),
      expect.objectContaining({ reason: FailureReason.MaxRetriesExceeded, durationMs: 7 }),
    );
    expect(h.outcomes[0]).toMatchObject({
      outcome: 'failed',
      reason: FailureReason.MaxRetriesExceeded,
      applied: true,
    });
  });

  it("the handler's maxAttempts wins over retry.maxAttempts", async () => {
    const h = harness();
    await h.finaliser.finalise(
      claimedJob(),
      {
        result: { kind: 'failed', error: new Error('boom'), durationMs: 1 },
        attempt: 1,
        probe: false,
        maxAttempts: 1,
      },
      h.emit,
    );
    expect(h.outcomes[0]).toMatchObject({ reason: FailureReason.MaxRetriesExceeded });
  });

  it('a fatal error goes to the DLQ at once and does not count against the circuit', async () => {
    const h = harness();
    await h.finaliser.finalise(
      claimedJob(),
      {
        result: { kind: 'failed', error: new ChokaQFatalError('bad payload'), durationMs: 1 },
        attempt: 1,
        probe: true,
      },
      h.emit,
    );
    expect(h.outcomes[0]).toMatchObject({ outcome: 'failed', reason: FailureReason.FatalError });
    expect(h.breakers.recordFailure).not.toHaveBeenCalled();
    expect(h.breakers.releaseProbe).toHaveBeenCalledWith('q/t');
  });

  it('a job older than retry.maxJobAgeMs on the database clock is not retried', async () => {
    const h = harness();
    const enqueuedAtUtc = new Date(Date.now() - retry.maxJobAgeMs - 1_000);
    await h.finaliser.finalise(
      claimedJob({ enqueuedAtUtc }),
      {
        result: { kind: 'failed', error: new Error('boom'), durationMs: 1 },
        attempt: 1,
        probe: false,
      },
      h.emit,
    );
    expect(h.outcomes[0]).toMatchObject({ reason: FailureReason.RetryLifetimeExpired });
  });

  it('zero rows: a state transition conflict, counted, logged, and the outcome says not applied', async () => {
    const h = harness();
    h.storage.rescheduleForRetry.mockResolvedValueOnce(0);
    h.storage.moveToDlq.mockResolvedValueOnce(0);
    await h.finaliser.finalise(
      claimedJob(),
      {
        result: { kind: 'failed', error: new Error('boom'), durationMs: 1 },
        attempt: 1,
        probe: false,
      },
      h.emit,
    );
    await h.finaliser.finalise(
      claimedJob({ leaseId: 'l2' }),
      { result: { kind: 'timeout', timeoutMs: 5, durationMs: 5 }, attempt: 1, probe: false },
      h.emit,
    );
    expect(h.finaliser.conflicts).toBe(2);
    expect(h.outcomes.map((o) => [o.outcome, o.applied])).toEqual([
      ['retried', false],
      ['failed', false],
    ]);
    expect(h.logger.count('warn', 'state transition conflict')).toBe(2);
    // …and counted in chokaq.jobs.state_transition_conflicts by the outcome that was refused.
    expect(h.metrics.conflict.mock.calls).toEqual([
      [expect.objectContaining({ queue: 'q', type: 't' }), 'retried'],
      [expect.objectContaining({ queue: 'q', type: 't' }), 'failed'],
    ]);
    // A refused write is over all the same: the run's lease is handed back.
    expect(h.settled.map((l) => l.leaseId)).toEqual(['l1', 'l2']);
  });

  it('a success is archived through the batcher; a refused archive is a conflict', async () => {
    const h = harness();
    await h.finaliser.finalise(
      claimedJob(),
      { result: { kind: 'succeeded', durationMs: 3 }, attempt: 2, probe: true },
      h.emit,
    );
    h.batcher.add.mockResolvedValueOnce(false);
    await h.finaliser.finalise(
      claimedJob({ leaseId: 'l2' }),
      { result: { kind: 'succeeded', durationMs: 4 }, attempt: 2, probe: false },
      h.emit,
    );
    expect(h.batcher.add.mock.calls).toEqual([
      [{ id: 'job-1', workerId: 'w', leaseId: 'l1', durationMs: 3 }],
      [{ id: 'job-1', workerId: 'w', leaseId: 'l2', durationMs: 4 }],
    ]);
    expect(h.breakers.recordSuccess.mock.calls).toEqual([
      ['q/t', true],
      ['q/t', false],
    ]);
    expect(h.outcomes.map((o) => [o.leaseId, o.outcome, o.applied])).toEqual([
      ['l1', 'succeeded', true],
      ['l2', 'succeeded', false],
    ]);
    expect(h.finaliser.conflicts).toBe(1);
    expect(h.metrics.conflict.mock.calls).toEqual([
      [expect.objectContaining({ queue: 'q', type: 't' }), 'succeeded'],
    ]);
    expect(h.events).toEqual(['settled l1', 'outcome l1', 'settled l2', 'outcome l2']);
  });

  it('timeout, cancel and heartbeat-failure aborts go to the DLQ with their reasons', async () => {
    const h = harness();
    await h.finaliser.finalise(
      claimedJob(),
      { result: { kind: 'timeout', timeoutMs: 5, durationMs: 6 }, attempt: 2, probe: true },
      h.emit,
    );
    await h.finaliser.finalise(
      claimedJob(),
      { result: { kind: 'aborted', cause: 'cancelled', durationMs: 1 }, attempt: 2, probe: false },
      h.emit,
    );
    await h.finaliser.finalise(
      claimedJob(),
      {
        result: { kind: 'aborted', cause: 'heartbeat-failure', durationMs: 1 },
        attempt: 2,
        probe: false,
      },
      h.emit,
    );
    expect(h.outcomes.map((o) => [o.outcome, o.reason])).toEqual([
      ['failed', FailureReason.Timeout],
      ['cancelled', FailureReason.Cancelled],
      ['failed', FailureReason.HeartbeatFailure],
    ]);
    expect(h.breakers.recordFailure).toHaveBeenCalledTimes(1); // only the timeout
    expect(h.breakers.releaseProbe).toHaveBeenCalledTimes(2);
  });

  it('a handler stopped by shutdown goes back to Pending at once as released, attempt kept', async () => {
    const h = harness();
    await h.finaliser.finalise(
      claimedJob(),
      {
        result: {
          kind: 'failed',
          error: new Error('stopped'),
          durationMs: 1,
          abortedBy: 'shutdown',
        },
        attempt: 2,
        probe: true,
      },
      h.emit,
    );
    expect(h.storage.rescheduleForRetry.mock.calls[0][1]).toBe(0);
    expect(h.outcomes[0]).toMatchObject({ outcome: 'released', applied: true, retryDelayMs: 0 });
    expect(h.breakers.releaseProbe).toHaveBeenCalledWith('q/t');
    expect(h.breakers.recordFailure).not.toHaveBeenCalled();
  });

  it('an abandoned run writes nothing, is handed back, and is reported released', async () => {
    const h = harness();
    await h.finaliser.finalise(
      claimedJob(),
      { result: { kind: 'abandoned', durationMs: 9 }, attempt: 2, probe: true },
      h.emit,
    );
    expect(h.storage.rescheduleForRetry).not.toHaveBeenCalled();
    expect(h.storage.moveToDlq).not.toHaveBeenCalled();
    expect(h.outcomes[0]).toMatchObject({
      outcome: 'released',
      applied: false,
      error: 'abandoned at shutdown',
    });
    expect(h.events).toEqual(['settled l1', 'outcome l1']);
    expect(h.breakers.releaseProbe).toHaveBeenCalledWith('q/t');
  });

  it('a release writes once for many runs; rows missing from its count are conflicts', async () => {
    const h = harness();
    h.storage.release.mockResolvedValueOnce(1);
    const runs = [claimedJob({ id: 'a', leaseId: 'la' }), claimedJob({ id: 'b', leaseId: 'lb' })];
    await h.finaliser.release(runs, 1_000, h.emit);
    expect(h.storage.release).toHaveBeenCalledTimes(1);
    expect(h.storage.release).toHaveBeenCalledWith(
      runs.map((r) => r.lease),
      1_000,
    );
    expect(h.finaliser.conflicts).toBe(1);
    // The count says how many, not which: attributed to (queue, type) only when the runs share one.
    expect(h.metrics.conflict.mock.calls).toEqual([[{ queue: 'q', type: 't' }, 'released', 1]]);
    expect(h.outcomes.map((o) => [o.id, o.outcome, o.applied, o.error])).toEqual([
      ['a', 'released', true, 'circuit of q/t is open'],
      ['b', 'released', true, 'circuit of q/t is open'],
    ]);
    expect(h.settled.map((l) => l.leaseId)).toEqual(['la', 'lb']);

    const mixed = [claimedJob({ id: 'c', type: 'u' }), claimedJob({ id: 'd' })];
    h.storage.release.mockResolvedValueOnce(0);
    await h.finaliser.release(mixed, 0, () => undefined);
    expect(h.metrics.conflict.mock.calls[1]).toEqual([undefined, 'released', 2]);
    const otherQueue = [claimedJob({ id: 'e', queue: 'x' }), claimedJob({ id: 'f' })];
    h.storage.release.mockResolvedValueOnce(1);
    await h.finaliser.release(otherQueue, 0, () => undefined);
    expect(h.metrics.conflict.mock.calls[2]).toEqual([undefined, 'released', 1]);
  });

  it('a failing write is tried 3 times with backoff, then left to the rescue loop', async () => {
    jest.useFakeTimers();
    const h = harness();
    h.storage.moveToDlq.mockRejectedValue(new Error('db down'));
    const done = h.finaliser.dlq(claimedJob(), FailureReason.NoHandler, 'none', h.emit);
    await jest.advanceTimersByTimeAsync(249);
    expect(h.storage.moveToDlq).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(1); // 250 ms, then 500 ms
    expect(h.storage.moveToDlq).toHaveBeenCalledTimes(2);
    await jest.advanceTimersByTimeAsync(500);
    await done;
    expect(h.storage.moveToDlq).toHaveBeenCalledTimes(3);
    expect(h.outcomes[0]).toMatchObject({ outcome: 'failed', applied: false });
    expect(h.finaliser.conflicts).toBe(0); // not reached is not refused
    expect(h.logger.count('error', 'failed 3 time(s)')).toBe(1);
    expect(h.logger.events('TransitionWriteFailed')).toEqual([
      expect.objectContaining({ operation: 'moveToDlq', attempts: 3 }),
    ]);
    expect(h.settled).toHaveLength(1);
  });

  it('after abandon() a failing write is not tried again', async () => {
    const h = harness();
    h.storage.moveToDlq.mockRejectedValue(new Error('db down'));
    h.finaliser.abandon();
    await h.finaliser.dlq(claimedJob(), FailureReason.NoHandler, 'none', h.emit);
    expect(h.storage.moveToDlq).toHaveBeenCalledTimes(1);
    expect(h.logger.events('TransitionWriteFailed')).toEqual([
      expect.objectContaining({ operation: 'moveToDlq', attempts: 1 }),
    ]);
    expect(h.outcomes[0]).toMatchObject({ applied: false });
  });

  describe('log events', () => {
    const failed = (attempt: number, error: unknown = new Error('boom')) => ({
      result: { kind: 'failed' as const, error, durationMs: 7 },
      attempt,
      probe: false,
    });

    it('a retry is one JobRetryScheduled line with the first line of the error', async () => {
      const h = harness();
      await h.finaliser.finalise(claimedJob(), failed(2), h.emit);
      expect(h.logger.lines.map((l) => [l.level, l.event])).toEqual([
        ['warn', 'JobRetryScheduled'],
      ]);
      expect(h.logger.events('JobRetryScheduled')[0]).toMatchObject({
        eventId: 2000,
        jobId: 'job-1',
        queue: 'q',
        type: 't',
        attempt: 2,
        delayMs: 100,
        error: 'Error: boom',
      });
    });

    it('a DLQ move is one JobDeadLettered line naming the reason', async () => {
      const h = harness();
      await h.finaliser.finalise(
        claimedJob(),
        failed(1, new ChokaQFatalError('bad payload')),
        h.emit,
      );
      expect(h.logger.lines.map((l) => [l.level, l.event])).toEqual([['error', 'JobDeadLettered']]);
      const [record] = h.logger.events('JobDeadLettered');
      expect(record).toMatchObject({
        eventId: 2001,
        jobId: 'job-1',
        attempt: 1,
        reason: 'FatalError',
      });
      expect(record.error).toContain('bad payload');
      expect(record.error).not.toContain('\n');
      expect(record.message).toContain('moved to the DLQ (FatalError) after attempt 1');
    });

    it('a cancel while running is a JobCancelledWhileRunning line at log level', async () => {
      const h = harness();
      await h.finaliser.finalise(
        claimedJob(),
        {
          result: { kind: 'aborted', cause: 'cancelled', durationMs: 1 },
          attempt: 2,
          probe: false,
        },
        h.emit,
      );
      expect(h.logger.lines.map((l) => [l.level, l.event])).toEqual([
        ['log', 'JobCancelledWhileRunning'],
      ]);
    });

    it('a refused move logs the conflict only, and a shutdown release logs nothing', async () => {
      const h = harness();
      h.storage.moveToDlq.mockResolvedValueOnce(0);
      await h.finaliser.finalise(claimedJob(), failed(3), h.emit);
      await h.finaliser.finalise(
        claimedJob({ leaseId: 'l2' }),
        {
          result: {
            kind: 'failed',
            error: new Error('stop'),
            durationMs: 1,
            abortedBy: 'shutdown',
          },
          attempt: 1,
          probe: false,
        },
        h.emit,
      );
      expect(h.logger.lines.map((l) => l.event)).toEqual(['StateTransitionConflict']);
      expect(h.logger.events('StateTransitionConflict')[0]).toMatchObject({
        operation: 'moveToDlq',
        jobId: 'job-1',
      });
    });
  });

  describe('details a user or an operator reads', () => {
    const failedAt = (attempt: number, error: unknown = new Error('boom')) => ({
      result: { kind: 'failed' as const, error, durationMs: 7 },
      attempt,
      probe: false,
    });
    const messages = (h: ReturnType<typeof harness>) => h.logger.lines.map((l) => l.message);

    it('a retry line names the attempt that ran, not the row’s count, and the headline of the error', async () => {
      const h = harness();
      const error = new Error('boom');
      error.stack = 'Error: boom';
      await h.finaliser.finalise(claimedJob({ attemptCount: 7 }), failedAt(2, error), h.emit);
      expect(messages(h)).toEqual([
        'Job job-1 (q/t) failed attempt 2; retry in 100 ms: Error: boom',
      ]);
      expect(h.breakers.recordFailure).toHaveBeenCalledTimes(1);
      expect(h.breakers.releaseProbe).not.toHaveBeenCalled();
    });

    it('a timeout is stored and reported with its limit', async () => {
      const h = harness();
      await h.finaliser.finalise(
        claimedJob(),
        { result: { kind: 'timeout', timeoutMs: 500, durationMs: 501 }, attempt: 1, probe: false },
        h.emit,
      );
      const error = 'ChokaQJobTimeoutError: job exceeded its execution timeout of 500 ms';
      expect(h.storage.moveToDlq.mock.calls[0]).toEqual([
        expect.anything(),
        { reason: FailureReason.Timeout, error, durationMs: 501 },
      ]);
      expect(h.outcomes[0]).toMatchObject({ outcome: 'failed', error });
    });

    it('an abandoned run says it is left to the rescue loop', async () => {
      const h = harness();
      await h.finaliser.finalise(
        claimedJob(),
        { result: { kind: 'abandoned', durationMs: 1 }, attempt: 1, probe: false },
        h.emit,
      );
      expect(messages(h)).toEqual([
        'Job job-1 (q/t) was still running at the end of the shutdown grace period; it is left ' +
          'to the rescue loop.',
      ]);
    });

    it('a cancel names whether the handler ran, and a refused cancel counts as cancelled', async () => {
      const h = harness();
      await h.finaliser.cancelledBeforeRun(claimedJob(), h.emit);
      await h.finaliser.finalise(
        claimedJob({ leaseId: 'l2' }),
        {
          result: { kind: 'aborted', cause: 'cancelled', durationMs: 1 },
          attempt: 2,
          probe: false,
        },
        h.emit,
      );
      expect(messages(h)).toEqual([
        'Job job-1 (q/t) was cancelled before its handler ran (attempt 2) and moved to the DLQ',
        'Job job-1 (q/t) was cancelled while running (attempt 2) and moved to the DLQ',
      ]);
      h.storage.moveToDlq.mockResolvedValueOnce(0);
      await h.finaliser.cancelledBeforeRun(claimedJob({ leaseId: 'l3' }), h.emit);
      expect(h.metrics.conflict).toHaveBeenCalledWith(expect.anything(), 'cancelled');
    });

    it('a refused or failed reschedule is reported under its own operation', async () => {
      jest.useFakeTimers();
      const h = harness();
      h.storage.rescheduleForRetry.mockResolvedValueOnce(0);
      await h.finaliser.finalise(claimedJob(), failedAt(1), h.emit);
      expect(h.logger.events('StateTransitionConflict')).toEqual([
        expect.objectContaining({ operation: 'rescheduleForRetry', jobId: 'job-1' }),
      ]);
      h.storage.rescheduleForRetry.mockRejectedValue(new Error('db down'));
      const done = h.finaliser.finalise(claimedJob({ leaseId: 'l2' }), failedAt(1), h.emit);
      await jest.advanceTimersByTimeAsync(250 + 499);
      expect(h.storage.rescheduleForRetry).toHaveBeenCalledTimes(3); // 1 refused, then 2 tries
      await jest.advanceTimersByTimeAsync(1);
      await done;
      expect(h.storage.rescheduleForRetry).toHaveBeenCalledTimes(4);
      expect(h.logger.events('TransitionWriteFailed')).toEqual([
        expect.objectContaining({ operation: 'rescheduleForRetry', jobId: 'job-1', attempts: 3 }),
      ]);
      expect(messages(h).at(-1)).toBe(
        'rescheduleForRetry of job job-1 failed 3 time(s): db down. The job is left to the rescue loop.',
      );
    });

    it('a release due at once passes no delay and reports no circuit; a full count is no conflict', async () => {
      const h = harness();
      const runs = [claimedJob({ id: 'a' }), claimedJob({ id: 'b' })];
      await h.finaliser.release(runs, 0, h.emit);
      expect(h.storage.release).toHaveBeenCalledWith(
        runs.map((r) => r.lease),
        undefined,
      );
      expect(h.finaliser.conflicts).toBe(0);
      expect(h.metrics.conflict).not.toHaveBeenCalled();
      expect(h.outcomes.map((o) => ['error' in o, o.applied, o.retryDelayMs])).toEqual([
        [false, true, 0],
        [false, true, 0],
      ]);
    });

    it('started rows are unstarted; a failed release is not applied, not a conflict, and logged without a job', async () => {
      const h = harness();
      await h.finaliser.release([claimedJob({ id: 'a' })], 0, h.emit, true);
      expect(h.storage.unstart).toHaveBeenCalledTimes(1);
      expect(h.storage.release).not.toHaveBeenCalled();
      h.finaliser.abandon();
      h.storage.release.mockRejectedValueOnce(new Error('db down'));
      await h.finaliser.release([claimedJob({ id: 'b' })], 0, h.emit);
      expect(h.outcomes.at(-1)).toMatchObject({ id: 'b', applied: false });
      expect(h.finaliser.conflicts).toBe(0);
      expect(messages(h)).toEqual([
        'release failed 1 time(s): db down. The job is left to the rescue loop.',
      ]);
      h.storage.unstart.mockRejectedValueOnce(new Error('db down'));
      await h.finaliser.release([claimedJob({ id: 'c' })], 0, h.emit, true);
      expect(h.logger.events('TransitionWriteFailed').at(-1)).toMatchObject({
        operation: 'unstart',
      });
    });
  });

  it('a transactional archive logs a conflict only when the lease was lost', async () => {
    const tx = (archived: boolean) =>
      ({
        manager: {},
        queryRunner: {},
        archive: jest.fn(async () => archived),
        rollback: jest.fn(async () => undefined),
        abandon: jest.fn(async () => undefined),
      }) as unknown as HandlerTransaction;
    const h = harness();
    const run = (archived: boolean, leaseId: string) =>
      h.finaliser.finalise(
        claimedJob({ leaseId }),
        {
          result: { kind: 'succeeded', durationMs: 1, transaction: tx(archived) },
          attempt: 1,
          probe: false,
        },
        h.emit,
      );
    await run(true, 'l1');
    expect(h.logger.lines).toEqual([]);
    await run(false, 'l2');
    expect(h.logger.lines.map((l) => l.message)).toEqual([
      'archive of job job-1 changed no row: the lease no longer matches (state transition ' +
        "conflict); the handler's transaction was rolled back",
    ]);
    expect(h.logger.events('StateTransitionConflict')).toEqual([
      expect.objectContaining({ operation: 'archiveInTransaction', jobId: 'job-1' }),
    ]);
  });
});
