import { hotJob } from '../../../../test/runtime/support/hot-job';
import type { JobOutcome } from '../interfaces/job-outcome.interface';
import { FailureReason, JobStatus } from '../interfaces/job-status.enum';
import type { HotJob } from '../interfaces/job.interface';
import { JobEvents } from './job-events';
import {
  announceCancelled,
  outcomeEvents,
  progressEvent,
  stalledEvent,
  startedEvent,
} from './lifecycle-events';

const now = new Date('2026-12-01T10:00:00Z');

const job = (): HotJob =>
  hotJob(
    {
      id: 'j1',
      queue: 'emails',
      type: 'welcome',
      payload: { to: 'a@b.c' },
      tags: ['x'],
      attemptCount: 0,
      workerId: 'w1',
      leaseId: 'l1',
    },
    now,
  );

function outcome(patch: Partial<JobOutcome>): JobOutcome {
  return {
    id: 'j1',
    leaseId: 'l1',
    queue: 'emails',
    type: 'welcome',
    outcome: 'succeeded',
    attempt: 1,
    applied: true,
    ...patch,
  };
}

const names = (o: JobOutcome) => outcomeEvents(o, job(), now).map((e) => e.name);

describe('lifecycle events of an outcome', () => {
  it('emits nothing for a move the storage did not apply, or for a job handed back', () => {
    expect(names(outcome({ applied: false }))).toEqual([]);
    expect(names(outcome({ applied: undefined }))).toEqual([]);
    expect(names(outcome({ outcome: 'released' }))).toEqual([]);
  });

  it('a success is one succeeded event, in the archive', () => {
    const [e] = outcomeEvents(outcome({ durationMs: 12 }), job(), now);
    expect(e).toMatchObject({ name: 'succeeded', pillar: 'archive', attempt: 1, durationMs: 12 });
    expect(e.job).toMatchObject({
      status: JobStatus.Succeeded,
      pillar: 'archive',
      finishedAtUtc: now,
      durationMs: 12,
      payload: { to: 'a@b.c' },
    });
    expect(Object.isFrozen(e)).toBe(true);
  });

  it('a failed run that will be retried is failed (willRetry) then retried', () => {
    const events = outcomeEvents(
      outcome({ outcome: 'retried', durationMs: 5, error: 'Error: x', retryDelayMs: 100 }),
      job(),
      now,
    );
    expect(events.map((e) => [e.name, e.willRetry, e.retryDelayMs])).toEqual([
      ['failed', true, undefined],
      ['retried', undefined, 100],
    ]);
    expect(events[1].job).toMatchObject({ status: JobStatus.Pending, lastError: 'Error: x' });
  });

  it('a retry of a job that never ran (no duration) is only retried', () => {
    expect(names(outcome({ outcome: 'retried', error: 'x' }))).toEqual(['retried']);
  });

  it('a failed run that goes to the DLQ is failed then dead, with its reason', () => {
    const events = outcomeEvents(
      outcome({ outcome: 'failed', durationMs: 5, error: 'e', reason: FailureReason.Timeout }),
      job(),
      now,
    );
    expect(events.map((e) => [e.name, e.willRetry, e.reason])).toEqual([
      ['failed', false, FailureReason.Timeout],
      ['dead', undefined, FailureReason.Timeout],
    ]);
    expect(events[1].job).toMatchObject({
      pillar: 'dlq',
      status: JobStatus.Failed,
      failureReason: FailureReason.Timeout,
      errorDetails: 'e',
      failedAtUtc: now,
    });
  });

  it('a job that reached the DLQ without running (no handler) is only dead', () => {
    expect(names(outcome({ outcome: 'failed', reason: FailureReason.NoHandler }))).toEqual([
      'dead',
    ]);
  });

  it('a cancellation is cancelled, never failed or dead', () => {
    const [e, ...rest] = outcomeEvents(
      outcome({ outcome: 'cancelled', durationMs: 3, reason: FailureReason.Cancelled }),
      job(),
      now,
    );
    expect(rest).toEqual([]);
    expect(e).toMatchObject({ name: 'cancelled', pillar: 'dlq' });
    expect(e.job.status).toBe(JobStatus.Cancelled);
  });

  it('started and progress describe the running row', () => {
    expect(startedEvent(job(), 1, now)).toMatchObject({
      name: 'started',
      attempt: 1,
      job: { status: JobStatus.Processing, attemptCount: 1, startedAtUtc: now },
    });
    expect(progressEvent(job(), 2, 40, 'halfway')).toMatchObject({
      name: 'progress',
      attempt: 2,
      progress: 40,
      note: 'halfway',
      job: { progress: 40 },
    });
  });

  describe('stalled', () => {
    const zombie = (): HotJob => ({
      ...job(),
      status: JobStatus.Processing,
      attemptCount: 2,
      workerId: 'lost-worker',
      heartbeatUtc: new Date('2026-12-01T09:00:00Z'),
      payload: null,
    });

    it('a zombie moved to the DLQ: pillar dlq, status and reason Zombie, naming the lost worker', () => {
      const e = stalledEvent({ pillar: 'dlq', job: zombie() }, 'Zombie: gone', now);
      expect(e).toMatchObject({
        name: 'stalled',
        pillar: 'dlq',
        attempt: 2,
        error: 'Zombie: gone',
        reason: FailureReason.Zombie,
        lostWorkerId: 'lost-worker',
      });
      expect(e.job).toMatchObject({
        id: 'j1',
        queue: 'emails',
        type: 'welcome',
        pillar: 'dlq',
        status: JobStatus.Zombie,
        failureReason: FailureReason.Zombie,
        errorDetails: 'Zombie: gone',
        failedAtUtc: now,
        // The DLQ keeps the worker that had it.
        workerId: 'lost-worker',
        payload: null,
      });
      expect(Object.isFrozen(e)).toBe(true);
    });

    it('a zombie returned to Pending: pillar hot, no reason, the job no longer owned', () => {
      const e = stalledEvent({ pillar: 'hot', job: zombie() }, 'Zombie: gone', now);
      expect(e).toMatchObject({
        name: 'stalled',
        pillar: 'hot',
        attempt: 2,
        error: 'Zombie: gone',
        lostWorkerId: 'lost-worker',
      });
      expect(e.reason).toBeUndefined();
      expect(e.job).toMatchObject({
        pillar: 'hot',
        status: JobStatus.Pending,
        workerId: null,
        leaseId: null,
        heartbeatUtc: null,
        lastError: 'Zombie: gone',
        attemptCount: 2,
        failureReason: null,
      });
    });

    it('a row without a worker (written by hand) names none', () => {
      const e = stalledEvent({ pillar: 'dlq', job: { ...zombie(), workerId: null } }, 'x', now);
      expect('lostWorkerId' in e).toBe(false);
    });
  });
});

describe('announceCancelled', () => {
  const view = (pillar: 'dlq' | 'hot', reason: FailureReason | null): Record<string, unknown> => ({
    ...job(),
    pillar,
    failureReason: reason,
    errorDetails: 'cancelled',
    attemptCount: 0,
  });

  it('reads nothing when no one listens for cancelled', () => {
    const events = new JobEvents({ maxQueuedPerListener: 10 });
    events.listen(() => undefined, { events: ['dead'] });
    const read = jest.fn();
    announceCancelled(events, ['j1'], read, () => undefined);
    expect(read).not.toHaveBeenCalled();
  });

  it('emits for a job still cancelled in the DLQ, and skips one that moved on', async () => {
    const events = new JobEvents({ maxQueuedPerListener: 10 });
    const heard: string[] = [];
    events.listen((e) => heard.push(`${e.job.id}#${e.attempt}`), { events: ['cancelled'] });
    const views: Record<string, unknown> = {
      a: { ...view('dlq', FailureReason.Cancelled), id: 'a' },
      b: { ...view('hot', null), id: 'b' }, // resurrected meanwhile
      c: null, // purged meanwhile
    };
    let reads = 0;
    announceCancelled(
      events,
      ['a', 'b', 'c'],
      async (id) => (reads++, views[id] as never),
      (e) => {
        throw e;
      },
    );
    // Reads and deliveries take a few turns of the event loop; wait for them, boundedly.
    for (let turn = 0; turn < 100 && (reads < 3 || heard.length < 1); turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(reads).toBe(3);
    expect(heard).toEqual(['a#1']);
  });
});
