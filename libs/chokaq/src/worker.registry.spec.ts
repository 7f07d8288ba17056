import { ChokaQWorkerDisabledError } from './errors';
import { JobOutcome } from './interfaces/job-outcome.interface';
import { ChokaQWorker } from './runtime/chokaq-worker';
import { WorkerRegistry } from './worker.registry';

/** The part of a worker the registry touches; `running` flips as `start`/`beginStop` would. */
function fakeWorker(running: boolean) {
  const outcomes: JobOutcome[] = [];
  const fake = {
    running,
    nudge: jest.fn(),
    cancelLocal: jest.fn(() => true),
    setConcurrency: jest.fn(),
    drain: jest.fn(async () => outcomes),
  };
  return { fake, worker: fake as unknown as ChokaQWorker, outcomes };
}

describe('WorkerRegistry', () => {
  it('with no worker: nudge and cancelLocal do nothing, setConcurrency and drain refuse with a typed error', async () => {
    const registry = new WorkerRegistry();
    expect(registry.localWorker).toBeUndefined();
    expect(() => registry.nudge('mail')).not.toThrow();
    expect(() => registry.cancelLocal(['a'])).not.toThrow();
    expect(() => registry.setConcurrency(3)).toThrow(ChokaQWorkerDisabledError);
    expect(() => registry.setConcurrency(3)).toThrow('Cannot set the concurrency');
    // No drain factory yet: the application was not initialised, so no handler is known.
    await expect(registry.drain()).rejects.toThrow(ChokaQWorkerDisabledError);
    await expect(registry.drain()).rejects.toThrow('Cannot drain jobs');
  });

  it('forwards every read to the running worker it was given', async () => {
    const registry = new WorkerRegistry();
    const { fake, worker, outcomes } = fakeWorker(true);
    registry.setWorker(worker);
    expect(registry.localWorker).toBe(worker);
    registry.nudge('mail');
    expect(fake.nudge).toHaveBeenCalledWith('mail');
    registry.cancelLocal(['a', 'b']);
    expect(fake.cancelLocal.mock.calls).toEqual([['a'], ['b']]);
    registry.setConcurrency(7);
    expect(fake.setConcurrency).toHaveBeenCalledWith(7);
    await expect(registry.drain(['mail'], { timeoutMs: 5 })).resolves.toBe(outcomes);
    expect(fake.drain).toHaveBeenCalledWith(['mail'], { timeoutMs: 5 });
  });

  it('a worker that began to stop is no longer local: no nudge, no cancel, no resize', () => {
    const registry = new WorkerRegistry();
    const { fake, worker } = fakeWorker(true);
    registry.setWorker(worker);
    fake.running = false;
    expect(registry.localWorker).toBeUndefined();
    registry.nudge();
    registry.cancelLocal(['a']);
    expect(fake.nudge).not.toHaveBeenCalled();
    expect(fake.cancelLocal).not.toHaveBeenCalled();
    expect(() => registry.setConcurrency(2)).toThrow(ChokaQWorkerDisabledError);
    // A health check still sees it (draining) until shutdown is over.
    expect(registry.startedWorker).toBe(worker);
    registry.clear();
    expect(registry.startedWorker).toBeUndefined();
  });

  it('builds the drain worker on the first drain only, once, and prefers a started worker', async () => {
    const registry = new WorkerRegistry();
    const drainOnly = fakeWorker(false);
    const build = jest.fn(() => drainOnly.worker);
    registry.setDrainWorkerFactory(build);
    // A cancel before any drain has nothing to reach and builds nothing.
    registry.cancelLocal(['a']);
    expect(build).not.toHaveBeenCalled();

    await registry.drain(['mail']);
    await registry.drain();
    expect(build).toHaveBeenCalledTimes(1);
    expect(drainOnly.fake.drain).toHaveBeenCalledTimes(2);
    // Never started, so not local; a cancel still aborts its runs at once.
    expect(registry.localWorker).toBeUndefined();
    registry.cancelLocal(['a']);
    expect(drainOnly.fake.cancelLocal).toHaveBeenCalledWith('a');

    const started = fakeWorker(true);
    registry.setWorker(started.worker);
    await registry.drain();
    expect(started.fake.drain).toHaveBeenCalledTimes(1);
    expect(drainOnly.fake.drain).toHaveBeenCalledTimes(2);
  });

  it('close() refuses drains while the drain worker still takes cancels; clear() forgets every worker', async () => {
    const registry = new WorkerRegistry();
    const drainOnly = fakeWorker(false);
    registry.setDrainWorkerFactory(() => drainOnly.worker);
    await registry.drain();

    registry.close();
    registry.close();
    await expect(registry.drain()).rejects.toThrow(ChokaQWorkerDisabledError);
    registry.cancelLocal(['a']);
    expect(drainOnly.fake.cancelLocal).toHaveBeenCalledTimes(1);

    registry.clear();
    registry.clear();
    registry.cancelLocal(['b']);
    expect(drainOnly.fake.cancelLocal).toHaveBeenCalledTimes(1);
    await expect(registry.drain()).rejects.toThrow(ChokaQWorkerDisabledError);
    expect(drainOnly.fake.drain).toHaveBeenCalledTimes(1);
  });

  it('clear() drops the running worker too', async () => {
    const registry = new WorkerRegistry();
    const { fake, worker } = fakeWorker(true);
    registry.setWorker(worker);
    registry.clear();
    expect(registry.localWorker).toBeUndefined();
    registry.nudge('mail');
    expect(fake.nudge).not.toHaveBeenCalled();
    expect(() => registry.setConcurrency(2)).toThrow(ChokaQWorkerDisabledError);
    await expect(registry.drain()).rejects.toThrow(ChokaQWorkerDisabledError);
    expect(fake.drain).not.toHaveBeenCalled();
  });
});
