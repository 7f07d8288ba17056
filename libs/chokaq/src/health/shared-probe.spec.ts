import { deferred } from '../../../../test/support/wait-for';
import { SharedProbe } from './shared-probe';

describe('SharedProbe', () => {
  afterEach(() => jest.useRealTimers());

  it('answers with the read and how long it took', async () => {
    let now = 100;
    const probe = new SharedProbe<number>(() => now);
    const outcome = await probe.run(async () => {
      now += 7;
      return 42;
    }, 1_000);
    expect(outcome).toEqual({ kind: 'answered', value: 42, elapsedMs: 7 });
  });

  it('reports a failed read as an Error, never rejecting', async () => {
    const probe = new SharedProbe<number>();
    const outcome = await probe.run(() => Promise.reject('connection reset'), 1_000);
    expect(outcome).toMatchObject({ kind: 'failed', error: new Error('connection reset') });
  });

  it('times out each wait on its own, and shares the read in flight until it settles', async () => {
    jest.useFakeTimers();
    const probe = new SharedProbe<string>();
    const hung = deferred<string>();
    const read = jest.fn(() => hung.promise);

    const first = probe.run(read, 1_000);
    await jest.advanceTimersByTimeAsync(600);
    const second = probe.run(read, 1_000);
    await jest.advanceTimersByTimeAsync(400);
    expect(await first).toMatchObject({ kind: 'timeout' });
    await jest.advanceTimersByTimeAsync(600);
    expect(await second).toMatchObject({ kind: 'timeout' });
    // One read for both waits, however long the database hangs.
    expect(read).toHaveBeenCalledTimes(1);
    expect(jest.getTimerCount()).toBe(0);

    const third = probe.run(read, 1_000);
    hung.resolve('late');
    expect(await third).toMatchObject({ kind: 'answered', value: 'late' });
    expect(read).toHaveBeenCalledTimes(1);

    // Settled: the next wait starts a new read.
    read.mockImplementation(async () => 'fresh');
    expect(await probe.run(read, 1_000)).toMatchObject({ kind: 'answered', value: 'fresh' });
    expect(read).toHaveBeenCalledTimes(2);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('starts a new read after a failed one', async () => {
    const probe = new SharedProbe<number>();
    const read = jest.fn().mockRejectedValueOnce(new Error('down')).mockResolvedValueOnce(1);
    expect((await probe.run(read, 1_000)).kind).toBe('failed');
    expect(await probe.run(read, 1_000)).toMatchObject({ kind: 'answered', value: 1 });
  });
});
