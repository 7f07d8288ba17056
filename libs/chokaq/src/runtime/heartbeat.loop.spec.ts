import { RecordingLogger } from '../../../../test/runtime/support/silent-logger';
import { testOptions } from '../../../../test/runtime/support/options';
import { MAX_ENQUEUE_MANY } from '../validation/limits';
import { HeartbeatLoop } from './heartbeat.loop';

describe('HeartbeatLoop', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());
  const lease = { id: 'j1', workerId: 'w', leaseId: 'l' };

  it('beats every interval ±20 % with every owned lease, and reports cancel requests', async () => {
    const keepAlive = jest.fn(async () => ({ touched: 1, cancelRequested: ['j1'] }));
    const onCancelRequested = jest.fn();
    const loop = new HeartbeatLoop({
      storage: { keepAlive },
      options: testOptions({ heartbeat: { intervalMs: 1_000 } }),
      workerId: 'w',
      leases: () => [lease],
      onCancelRequested,
      onThresholdReached: jest.fn(),
      logger: new RecordingLogger(),
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(799);
    expect(keepAlive).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(3_700);
    expect(keepAlive.mock.calls.length).toBeGreaterThanOrEqual(3);
    expect(keepAlive.mock.calls.length).toBeLessThanOrEqual(5);
    expect(keepAlive).toHaveBeenCalledWith('w', [lease]);
    expect(onCancelRequested).toHaveBeenCalledWith(['j1']);
    await loop.stop();
    expect(jest.getTimerCount()).toBe(0);
  });

  it('a beat with no leases runs no statement and neither ends nor grows an outage streak', async () => {
    let owned = [lease];
    let down = true;
    const keepAlive = jest.fn(async () => {
      if (down) throw new Error('db down');
      return { touched: 1, cancelRequested: [] };
    });
    const logger = new RecordingLogger();
    const metrics = { heartbeatFailed: jest.fn() };
    const loop = new HeartbeatLoop({
      storage: { keepAlive },
      options: testOptions({ heartbeat: { intervalMs: 100, failureThreshold: 100 } }),
      workerId: 'w',
      leases: () => owned,
      onCancelRequested: jest.fn(),
      onThresholdReached: jest.fn(),
      logger,
      metrics,
    });
    await loop.tick();
    await loop.tick();
    expect(loop.consecutiveFailures).toBe(2);
    owned = [];
    await loop.tick();
    expect(keepAlive).toHaveBeenCalledTimes(2);
    expect(loop.consecutiveFailures).toBe(2);
    expect(logger.count('log', 'Heartbeat recovered')).toBe(0);
    owned = [lease];
    await loop.tick();
    down = false;
    await loop.tick();
    expect(logger.count('warn', 'Heartbeat failed')).toBe(1);
    expect(logger.count('log', 'Heartbeat recovered after 3 failed attempt(s)')).toBe(1);
    // Every failed statement counts in chokaq.jobs.heartbeat_failures (logged once, counted 3 times).
    expect(metrics.heartbeatFailed).toHaveBeenCalledTimes(3);
  });

  it('reacts once after failureThreshold consecutive failures, logs the outage once, recovers', async () => {
    let down = true;
    const keepAlive = jest.fn(async () => {
      if (down) throw new Error('db down');
      return { touched: 1, cancelRequested: [] };
    });
    const onThresholdReached = jest.fn();
    const logger = new RecordingLogger();
    const loop = new HeartbeatLoop({
      storage: { keepAlive },
      options: testOptions({ heartbeat: { intervalMs: 100, failureThreshold: 3 } }),
      workerId: 'w',
      leases: () => [lease],
      onCancelRequested: jest.fn(),
      onThresholdReached,
      logger,
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(1_500);
    expect(onThresholdReached).toHaveBeenCalledTimes(1);
    expect(loop.isDegraded).toBe(true);
    expect(logger.count('warn', 'Heartbeat failed: db down')).toBe(1);
    down = false;
    await jest.advanceTimersByTimeAsync(200);
    expect(loop.isDegraded).toBe(false);
    expect(logger.count('log', 'Heartbeat recovered')).toBe(1);
    await loop.stop();
  });

  it('writes the worker row on every beat after the leases, with or without leases', async () => {
    const order: string[] = [];
    let owned = [lease];
    const keepAlive = jest.fn(async () => {
      order.push('keepAlive');
      return { touched: 1, cancelRequested: [] };
    });
    const beat = jest.fn(async () => {
      order.push('row');
      return true;
    });
    const loop = new HeartbeatLoop({
      storage: { keepAlive },
      options: testOptions({ heartbeat: { intervalMs: 100 } }),
      workerId: 'w',
      leases: () => owned,
      onCancelRequested: jest.fn(),
      onThresholdReached: jest.fn(),
      logger: new RecordingLogger(),
      presence: { beat },
    });
    await loop.tick();
    owned = [];
    await loop.tick();
    expect(order).toEqual(['keepAlive', 'row', 'row']);
  });

  it('a failing keepAlive still lets the row be written (its own failures are not the outage)', async () => {
    const beat = jest.fn(async () => true);
    const loop = new HeartbeatLoop({
      storage: {
        keepAlive: jest.fn(async () => {
          throw new Error('db down');
        }),
      },
      options: testOptions({ heartbeat: { intervalMs: 100 } }),
      workerId: 'w',
      leases: () => [lease],
      onCancelRequested: jest.fn(),
      onThresholdReached: jest.fn(),
      logger: new RecordingLogger(),
      presence: { beat },
    });
    await loop.tick();
    expect(loop.consecutiveFailures).toBe(1);
    expect(beat).toHaveBeenCalledTimes(1);
  });

  it('ages from start() until a beat both renews its leases and writes the row', async () => {
    let now = 1_000;
    let keepAliveFails = false;
    let rowStored = true;
    const loop = new HeartbeatLoop({
      storage: {
        keepAlive: jest.fn(async () => {
          if (keepAliveFails) throw new Error('db down');
          return { touched: 1, cancelRequested: [] };
        }),
      },
      options: testOptions({ heartbeat: { intervalMs: 100, failureThreshold: 100 } }),
      workerId: 'w',
      leases: () => [lease],
      onCancelRequested: jest.fn(),
      onThresholdReached: jest.fn(),
      logger: new RecordingLogger(),
      presence: { beat: jest.fn(async () => rowStored) },
      clock: () => now,
    });
    expect(loop.ageMs()).toBeUndefined();
    loop.start();
    now += 250;
    expect(loop.ageMs()).toBe(250);
    await loop.tick();
    expect(loop.ageMs()).toBe(0);

    // A failed renewal, then a row that was not stored: neither beat counts, the age grows.
    now += 300;
    keepAliveFails = true;
    await loop.tick();
    now += 300;
    keepAliveFails = false;
    rowStored = false;
    await loop.tick();
    expect(loop.ageMs()).toBe(600);

    rowStored = true;
    await loop.tick();
    expect(loop.ageMs()).toBe(0);
    await loop.stop();
  });

  describe('details', () => {
    const make = (overrides: Partial<ConstructorParameters<typeof HeartbeatLoop>[0]> = {}) => {
      const keepAlive = jest.fn(async (_w: string, leases: readonly unknown[]) => ({
        touched: leases.length,
        cancelRequested: [] as string[],
      }));
      const deps = {
        storage: { keepAlive },
        options: testOptions({ heartbeat: { intervalMs: 60_000, failureThreshold: 2 } }),
        workerId: 'w',
        leases: () => [lease],
        onCancelRequested: jest.fn(),
        onThresholdReached: jest.fn(),
        logger: new RecordingLogger(),
        ...overrides,
      };
      return { loop: new HeartbeatLoop(deps), keepAlive, deps };
    };

    it('starts healthy, counts its beats, and reports no cancel request when none came', async () => {
      const { loop, deps } = make();
      expect(loop.isDegraded).toBe(false);
      await loop.tick();
      await loop.tick();
      expect(loop.beatCount).toBe(2);
      expect(deps.onCancelRequested).not.toHaveBeenCalled();
    });

    it('without a worker row, or without leases, a beat counts as complete', async () => {
      let now = 0;
      let owned = [lease];
      const { loop } = make({ leases: () => owned, clock: () => now });
      loop.start();
      now = 500;
      await loop.tick();
      expect(loop.ageMs()).toBe(0);
      owned = [];
      now = 900;
      await loop.tick();
      expect(loop.ageMs()).toBe(0);
      await loop.stop();
    });

    it('renews more leases than one call takes in consecutive chunks, never an empty one', async () => {
      const many = (n: number) =>
        Array.from({ length: n }, (_, i) => ({ id: `j${i}`, workerId: 'w', leaseId: `l${i}` }));
      let owned = many(MAX_ENQUEUE_MANY + 1);
      const { loop, keepAlive } = make({ leases: () => owned });
      await loop.tick();
      expect(keepAlive.mock.calls.map(([, chunk]) => chunk.length)).toEqual([MAX_ENQUEUE_MANY, 1]);
      expect(keepAlive.mock.calls[1][1]).toEqual([owned[MAX_ENQUEUE_MANY]]);
      keepAlive.mockClear();
      owned = many(MAX_ENQUEUE_MANY);
      await loop.tick();
      expect(keepAlive.mock.calls.map(([, chunk]) => chunk.length)).toEqual([MAX_ENQUEUE_MANY]);
    });

    it('beats at once when nudged', async () => {
      const { loop, keepAlive } = make();
      loop.start();
      await jest.advanceTimersByTimeAsync(10);
      expect(keepAlive).not.toHaveBeenCalled();
      loop.nudge();
      await jest.advanceTimersByTimeAsync(10);
      expect(keepAlive).toHaveBeenCalledTimes(1);
      await loop.stop();
    });

    it.each([
      [true, 'aborting running jobs (another process may take them over as zombies).'],
      [false, 'continuing degraded (heartbeat.cancelOnHeartbeatFailure is false).'],
    ])('says at the threshold what it does (cancelOnHeartbeatFailure %s)', async (abort, says) => {
      const logger = new RecordingLogger();
      const { loop } = make({
        storage: {
          keepAlive: jest.fn(async () => {
            throw new Error('db down');
          }),
        },
        options: testOptions({
          heartbeat: { intervalMs: 60_000, failureThreshold: 2, cancelOnHeartbeatFailure: abort },
        }),
        logger,
      });
      await loop.tick();
      await loop.tick();
      expect(logger.events('HeartbeatThresholdReached')).toEqual([
        expect.objectContaining({ workerId: 'w', failures: 2, abortRunning: abort }),
      ]);
      expect(logger.lines.find((l) => l.event === 'HeartbeatThresholdReached')?.message).toBe(
        `Heartbeat failed 2 times in a row; ${says}`,
      );
    });

    it('names its loop when a beat itself fails', async () => {
      const logger = new RecordingLogger();
      const { loop } = make({
        logger,
        presence: {
          beat: jest.fn(async () => {
            throw new Error('row write broke');
          }),
        },
      });
      loop.start();
      loop.nudge();
      await jest.advanceTimersByTimeAsync(10);
      expect(
        logger.lines.some((l) => l.message.startsWith('ChokaQ heartbeat failed: row write broke')),
      ).toBe(true);
      await loop.stop();
    });
  });
});
