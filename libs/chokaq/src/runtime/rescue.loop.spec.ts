import { RecordingLogger } from '../../../../test/runtime/support/silent-logger';
import { testOptions } from '../../../../test/runtime/support/options';
import { STORED_TEXT } from '../common/stored-text';
import type { JobEvent, JobEventName } from '../interfaces/job-event.interface';
import { FailureReason, JobStatus } from '../interfaces/job-status.enum';
import type { HotJob, RescuedZombie, ZombieRescueResult } from '../interfaces/job.interface';
import type { JobEventSink } from './job-events';
import { RescueLoop } from './rescue.loop';

function row(id: string, workerId: string | null): HotJob {
  const t = new Date('2026-12-01T10:00:00Z');
  return {
    id,
    queue: 'emails',
    type: 'welcome',
    payload: null,
    tags: [],
    idempotencyKey: null,
    group: null,
    priority: 10,
    status: JobStatus.Processing,
    attemptCount: 1,
    workerId,
    leaseId: 'l',
    heartbeatUtc: t,
    scheduledAtUtc: null,
    createdAtUtc: t,
    enqueuedAtUtc: t,
    startedAtUtc: t,
    lastUpdatedUtc: t,
    createdBy: null,
    lastModifiedBy: null,
    lastError: null,
    cancelRequestedUtc: null,
    progress: null,
    progressNote: null,
    traceContext: null,
    payloadVersion: 1,
    batchId: null,
    waitingOn: null,
  };
}

function sweep(jobs: RescuedZombie[]): ZombieRescueResult {
  return {
    dlq: jobs.filter((j) => j.pillar === 'dlq').map((j) => j.job.id),
    retried: jobs.filter((j) => j.pillar === 'hot').map((j) => j.job.id),
    jobs,
  };
}

class Sink implements JobEventSink {
  readonly events: JobEvent[] = [];
  constructor(private readonly heard: JobEventName[]) {}
  hasListeners(name: JobEventName): boolean {
    return this.heard.includes(name);
  }
  get listening(): boolean {
    return this.heard.length > 0;
  }
  emit(event: JobEvent): void {
    this.events.push(event);
  }
}

describe('RescueLoop', () => {
  const handlers = { zombieRetryRules: () => [] };

  function loop(result: ZombieRescueResult, events?: JobEventSink, cancelled: string[] = []) {
    const logger = new RecordingLogger();
    const storage = {
      recoverAbandoned: jest.fn(async () => 0),
      archiveZombies: jest.fn(async () => result),
      checkDependencies: jest.fn(async () => ({ settled: 0, cancelled })),
    };
    return {
      logger,
      storage,
      loop: new RescueLoop(storage, testOptions(), logger, handlers, events),
    };
  }

  it('names the lost workers whose jobs it declared zombies, with their counts and ids', async () => {
    const { logger, loop: rescue } = loop(
      sweep([
        { pillar: 'dlq', job: row('a1', 'host-a:1:aa') },
        { pillar: 'dlq', job: row('a2', 'host-a:1:aa') },
        { pillar: 'dlq', job: row('b1', 'host-b:2:bb') },
        { pillar: 'hot', job: row('c1', 'host-c:3:cc') },
      ]),
    );
    await rescue.tick();
    expect(logger.lines.filter((l) => l.level === 'warn').map((l) => l.message)).toEqual([
      'Rescue: 3 zombie job(s) moved to the DLQ, of lost worker(s) host-a:1:aa (2: a1, a2), host-b:2:bb (1: b1)',
      'Rescue: 1 zombie job(s) returned to Pending (retryZombies), of lost worker(s) host-c:3:cc (1: c1)',
    ]);
    expect(rescue.totals).toEqual({ recovered: 0, zombies: 3, zombiesRetried: 1 });
  });

  it('runs the dependency check after the zombies and names the waiting jobs it cancelled', async () => {
    const { logger, storage, loop: rescue } = loop(sweep([]), undefined, ['d1', 'd2']);
    await rescue.tick();
    expect(storage.checkDependencies).toHaveBeenCalledTimes(1);
    expect(storage.archiveZombies.mock.invocationCallOrder[0]).toBeLessThan(
      storage.checkDependencies.mock.invocationCallOrder[0],
    );
    expect(logger.lines.filter((l) => l.level === 'warn').map((l) => l.message)).toEqual([
      'Rescue: 2 waiting job(s) moved to the DLQ because a dependency failed or was removed (d1, d2)',
    ]);
  });

  it('lists at most ten ids per worker', async () => {
    const jobs = Array.from({ length: 12 }, (_, i) => ({
      pillar: 'dlq' as const,
      job: row(`j${i}`, 'w'),
    }));
    const { logger, loop: rescue } = loop(sweep(jobs));
    await rescue.tick();
    expect(logger.lines[0].message).toBe(
      'Rescue: 12 zombie job(s) moved to the DLQ, of lost worker(s) w (12: j0, j1, j2, j3, j4, j5, j6, j7, j8, j9, …)',
    );
  });

  it('emits one stalled event per rescued zombie after the sweep returned, only when heard', async () => {
    const result = sweep([
      { pillar: 'dlq', job: row('d', 'lost') },
      { pillar: 'hot', job: row('h', 'lost') },
    ]);
    const heard = new Sink(['stalled']);
    const { loop: rescue, storage } = loop(result, heard);
    await rescue.tick();
    expect(storage.archiveZombies).toHaveBeenCalledTimes(1);
    expect(heard.events.map((e) => [e.name, e.job.id, e.pillar, e.lostWorkerId])).toEqual([
      ['stalled', 'd', 'dlq', 'lost'],
      ['stalled', 'h', 'hot', 'lost'],
    ]);
    expect(heard.events[0]).toMatchObject({
      reason: FailureReason.Zombie,
      error: STORED_TEXT.zombie,
    });

    const deaf = new Sink(['succeeded']);
    await loop(result, deaf).loop.tick();
    expect(deaf.events).toEqual([]);
  });

  it('a sweep that rescued nothing logs and emits nothing', async () => {
    const heard = new Sink(['stalled']);
    const { logger, loop: rescue } = loop(sweep([]), heard);
    await rescue.tick();
    expect(logger.lines).toEqual([]);
    expect(heard.events).toEqual([]);
  });
});
