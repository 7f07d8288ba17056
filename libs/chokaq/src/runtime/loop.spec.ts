import { IDLE_TICK, Loop } from './loop';
import { RecordingLogger } from '../../../../test/runtime/support/silent-logger';

describe('Loop', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('never overlaps ticks, however slow a tick is', async () => {
    let active = 0;
    let maxActive = 0;
    let ticks = 0;
    const loop = new Loop({
      name: 'slow',
      logger: new RecordingLogger(),
      intervalMs: () => 10,
      tick: async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        ticks++;
        await new Promise((resolve) => setTimeout(resolve, 100));
        active--;
      },
    });
    loop.start();
    loop.nudge();
    await jest.advanceTimersByTimeAsync(1_000);
    loop.nudge();
    loop.nudge();
    await jest.advanceTimersByTimeAsync(1_000);
    const stopped = loop.stop();
    await jest.advanceTimersByTimeAsync(200);
    await stopped;
    expect(maxActive).toBe(1);
    expect(ticks).toBeGreaterThan(5);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('a jittered interval beyond the longest timer waits, not 1 ms (Node clamps longer timers)', async () => {
    const tick = jest.fn(async () => undefined);
    // heartbeat.intervalMs at its limit (2^31 − 1) plus +20 % jitter.
    const loop = new Loop({
      name: 'long',
      logger: new RecordingLogger(),
      intervalMs: () => Math.round((2 ** 31 - 1) * 1.2),
      tick,
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(tick).toHaveBeenCalledTimes(1);
    await loop.stop();
    expect(jest.getTimerCount()).toBe(0);
  });

  it('sleeps the interval, and a nudge runs the next tick at once', async () => {
    const tick = jest.fn(async () => undefined);
    const loop = new Loop({
      name: 'poll',
      logger: new RecordingLogger(),
      intervalMs: () => 1_000,
      tick,
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(tick).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(500);
    expect(tick).toHaveBeenCalledTimes(1);
    loop.nudge();
    await jest.advanceTimersByTimeAsync(0);
    expect(tick).toHaveBeenCalledTimes(2);
    await loop.stop();
    expect(jest.getTimerCount()).toBe(0);
  });

  it('logs an outage once, backs off, and logs the recovery once', async () => {
    const logger = new RecordingLogger();
    let fail = true;
    const tick = jest.fn(async () => {
      if (fail) throw new Error('db down');
    });
    const loop = new Loop({
      name: 'fetcher',
      logger,
      intervalMs: () => 10,
      tick,
      errorBackoff: { baseMs: 10, maxMs: 100 },
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(2_000);
    const failedCalls = tick.mock.calls.length;
    expect(failedCalls).toBeGreaterThan(3);
    expect(failedCalls).toBeLessThan(60); // backoff, not a hot loop
    expect(logger.count('warn', 'fetcher failed: db down')).toBe(1);
    fail = false;
    await jest.advanceTimersByTimeAsync(200);
    expect(logger.count('log', 'fetcher recovered')).toBe(1);
    expect(loop.consecutiveFailures).toBe(0);
    await loop.stop();
  });

  it('an idle tick neither ends an outage nor hides it: one failure line, one recovery line', async () => {
    const logger = new RecordingLogger();
    const script = ['fail', 'idle', 'fail', 'idle', 'idle', 'fail', 'ok', 'ok'];
    let n = 0;
    const loop = new Loop({
      name: 'fetcher',
      logger,
      intervalMs: () => 10,
      errorBackoff: { baseMs: 10, maxMs: 100 },
      tick: async () => {
        const step = script[Math.min(n++, script.length - 1)];
        if (step === 'fail') throw new Error('db down');
        return step === 'idle' ? IDLE_TICK : undefined;
      },
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(loop.consecutiveFailures).toBe(1);
    await jest.advanceTimersByTimeAsync(2_000);
    expect(n).toBeGreaterThanOrEqual(script.length);
    expect(logger.count('warn', 'fetcher failed: db down')).toBe(1);
    expect(logger.count('log', 'fetcher recovered after 3 failed attempt(s)')).toBe(1);
    expect(loop.consecutiveFailures).toBe(0);
    await loop.stop();
  });

  it('stop() waits for the tick in flight and is idempotent', async () => {
    let finished = false;
    const loop = new Loop({
      name: 'x',
      logger: new RecordingLogger(),
      intervalMs: () => 10,
      tick: async () => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        finished = true;
      },
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(1);
    const stopped = Promise.all([loop.stop(), loop.stop()]);
    await jest.advanceTimersByTimeAsync(50);
    await stopped;
    expect(finished).toBe(true);
    expect(loop.running).toBe(false);
    expect(jest.getTimerCount()).toBe(0);
  });
});
