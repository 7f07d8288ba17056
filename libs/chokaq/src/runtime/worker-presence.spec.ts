import { RecordingLogger } from '../../../../test/runtime/support/silent-logger';
import type { WorkerHeartbeat } from '../interfaces/worker.interface';
import { WorkerPresence } from './worker-presence';

describe('WorkerPresence', () => {
  const report: Omit<WorkerHeartbeat, 'starting'> = {
    workerId: 'w1',
    host: 'h',
    pid: 1,
    libraryVersion: '1.2.3',
    concurrency: 4,
    running: 0,
    handled: { queues: ['q'], types: [] },
    circuits: {},
    draining: false,
  };

  function presence(fail: () => boolean) {
    const logger = new RecordingLogger();
    const storage = {
      upsertWorker: jest.fn(async (_: WorkerHeartbeat) => {
        if (fail()) throw new Error('db down');
      }),
      markWorkerStopped: jest.fn(async () => 1),
    };
    return {
      logger,
      storage,
      presence: new WorkerPresence({ storage, report: () => report, logger }),
    };
  }

  it('reports starting until one report was stored, then plain beats', async () => {
    let down = true;
    const { storage, logger, presence: p } = presence(() => down);
    await p.beat();
    await p.beat();
    down = false;
    await p.beat();
    await p.beat();
    expect(storage.upsertWorker.mock.calls.map(([r]) => r.starting)).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(storage.upsertWorker.mock.calls[3][0]).toEqual({ ...report, starting: false });
    expect(p.reportCount).toBe(2);
    // The outage is logged once, and its end once.
    expect(logger.count('warn', 'Could not write')).toBe(1);
    expect(logger.count('log', 'after 2 failed attempt(s)')).toBe(1);
  });

  it('never rejects, says whether it stored the row, and marks it stopped only when it wrote one', async () => {
    const never = presence(() => true);
    await expect(never.presence.beat()).resolves.toBe(false);
    await never.presence.stopped();
    expect(never.storage.markWorkerStopped).not.toHaveBeenCalled();

    const ok = presence(() => false);
    await expect(ok.presence.beat()).resolves.toBe(true);
    await ok.presence.stopped();
    expect(ok.storage.markWorkerStopped).toHaveBeenCalledWith('w1');
    ok.storage.markWorkerStopped.mockRejectedValueOnce(new Error('db down'));
    await expect(ok.presence.stopped()).resolves.toBeUndefined();
    expect(ok.logger.count('warn', 'Could not mark this worker stopped')).toBe(1);
  });
});
