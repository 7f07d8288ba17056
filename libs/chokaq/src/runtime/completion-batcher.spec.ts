import { RecordingLogger } from '../../../../test/runtime/support/silent-logger';
import type { CompletedJob } from '../interfaces/job.interface';
import { CompletionBatcher } from './completion-batcher';

const item = (id: string): CompletedJob => ({ id, workerId: 'w', leaseId: 'l', durationMs: 5 });

/** A storage `archiveSucceeded` that archives every run it is given. */
const archivingAll = () =>
  jest.fn(async (items: readonly CompletedJob[]) =>
    items.map(({ id, leaseId }) => ({ id, leaseId })),
  );

/** A storage whose every write waits until the test opens its gate; records each write's size. */
function gatedStorage() {
  const gate: Array<() => void> = [];
  const sizes: number[] = [];
  const archiveSucceeded = jest.fn(async (items: readonly CompletedJob[]) => {
    sizes.push(items.length);
    await new Promise<void>((resolve) => gate.push(resolve));
    return items.map(({ id, leaseId }) => ({ id, leaseId }));
  });
  return { archiveSucceeded, sizes, gate };
}

describe('CompletionBatcher', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('flushes a batch after the short timer, in one call', async () => {
    const archiveSucceeded = archivingAll();
    const batcher = new CompletionBatcher({ archiveSucceeded }, new RecordingLogger(), {
      flushDelayMs: 20,
    });
    const done = [batcher.add(item('a')), batcher.add(item('b'))];
    expect(batcher.pendingLeases().map((l) => l.id)).toEqual(['a', 'b']);
    await jest.advanceTimersByTimeAsync(19);
    expect(archiveSucceeded).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(1);
    await expect(Promise.all(done)).resolves.toEqual([true, true]);
    expect(archiveSucceeded).toHaveBeenCalledTimes(1);
    expect(batcher.size).toBe(0);
  });

  it('flushes at once when the batch is full', async () => {
    const archiveSucceeded = archivingAll();
    const batcher = new CompletionBatcher({ archiveSucceeded }, new RecordingLogger(), {
      maxBatch: 2,
      flushDelayMs: 1_000,
    });
    const done = Promise.all([batcher.add(item('a')), batcher.add(item('b'))]);
    await jest.advanceTimersByTimeAsync(0);
    await expect(done).resolves.toEqual([true, true]);
  });

  it('writes what piled up during a slow write in one larger write, up to maxWrite', async () => {
    const { archiveSucceeded, sizes, gate } = gatedStorage();
    const batcher = new CompletionBatcher({ archiveSucceeded }, new RecordingLogger(), {
      maxBatch: 2,
      maxWrite: 5,
      flushDelayMs: 1_000,
    });
    const done = ['a', 'b'].map((id) => batcher.add(item(id)));
    await jest.advanceTimersByTimeAsync(0);
    expect(sizes).toEqual([2]);
    // Seven more arrive while the first write is in flight.
    done.push(...['c', 'd', 'e', 'f', 'g', 'h', 'i'].map((id) => batcher.add(item(id))));
    expect(batcher.size).toBe(9);
    for (let i = 0; i < 3; i++) {
      gate.shift()?.();
      await jest.advanceTimersByTimeAsync(0);
    }
    await expect(Promise.all(done)).resolves.toEqual(Array(9).fill(true));
    expect(sizes).toEqual([2, 5, 2]);
  });

  it('holds a completion that arrives during a write until its own trigger, then writes a full batch', async () => {
    const { archiveSucceeded, sizes, gate } = gatedStorage();
    const batcher = new CompletionBatcher({ archiveSucceeded }, new RecordingLogger(), {
      maxBatch: 3,
      flushDelayMs: 20,
    });
    const done = ['a', 'b', 'c'].map((id) => batcher.add(item(id)));
    await jest.advanceTimersByTimeAsync(0);
    done.push(batcher.add(item('d')));
    gate.shift()?.();
    await jest.advanceTimersByTimeAsync(5);
    // The first write is over; 'd' has waited 5 of its 20 ms and is not written alone.
    expect(sizes).toEqual([3]);
    done.push(batcher.add(item('e')), batcher.add(item('f')));
    await jest.advanceTimersByTimeAsync(0);
    expect(sizes).toEqual([3, 3]);
    gate.shift()?.();
    await expect(Promise.all(done)).resolves.toEqual(Array(6).fill(true));
  });

  it('writes a partial batch that arrived during a write at its delay', async () => {
    const { archiveSucceeded, sizes, gate } = gatedStorage();
    const batcher = new CompletionBatcher({ archiveSucceeded }, new RecordingLogger(), {
      maxBatch: 2,
      flushDelayMs: 20,
    });
    const first = [batcher.add(item('a')), batcher.add(item('b'))];
    await jest.advanceTimersByTimeAsync(0);
    const late = batcher.add(item('c'));
    await jest.advanceTimersByTimeAsync(10);
    gate.shift()?.();
    await jest.advanceTimersByTimeAsync(9);
    expect(sizes).toEqual([2]);
    await jest.advanceTimersByTimeAsync(1);
    gate.shift()?.();
    await expect(Promise.all([...first, late])).resolves.toEqual([true, true, true]);
    expect(sizes).toEqual([2, 1]);
  });

  it('reports a refused completion (lease lost) as false', async () => {
    const batcher = new CompletionBatcher(
      { archiveSucceeded: async () => [{ id: 'a', leaseId: 'l' }] },
      new RecordingLogger(),
    );
    const done = Promise.all([batcher.add(item('a')), batcher.add(item('b'))]);
    await jest.advanceTimersByTimeAsync(20);
    await expect(done).resolves.toEqual([true, false]);
    expect(batcher.refusedCount).toBe(1);
  });

  it('decides per run: of two completions of one id, only the one the storage archived succeeds', async () => {
    const batcher = new CompletionBatcher(
      { archiveSucceeded: async () => [{ id: 'a', leaseId: 'new' }] },
      new RecordingLogger(),
    );
    const stale = batcher.add({ ...item('a'), leaseId: 'old' });
    const current = batcher.add({ ...item('a'), leaseId: 'new' });
    await jest.advanceTimersByTimeAsync(20);
    await expect(Promise.all([stale, current])).resolves.toEqual([false, true]);
    expect(batcher.refusedCount).toBe(1);
  });

  it('keeps items covered by the heartbeat during an outage and retries, logging once', async () => {
    let down = true;
    const logger = new RecordingLogger();
    const archiveSucceeded = jest.fn(async (items: readonly CompletedJob[]) => {
      if (down) throw new Error('db down');
      return items.map(({ id, leaseId }) => ({ id, leaseId }));
    });
    const batcher = new CompletionBatcher({ archiveSucceeded }, logger, {
      retryBaseMs: 50,
      retryMaxMs: 100,
    });
    const done = batcher.add(item('a'));
    await jest.advanceTimersByTimeAsync(1_000);
    expect(archiveSucceeded.mock.calls.length).toBeGreaterThan(3);
    expect(batcher.pendingLeases().map((l) => l.id)).toEqual(['a']);
    expect(logger.count('warn', 'db down')).toBe(1);
    down = false;
    await jest.advanceTimersByTimeAsync(200);
    await expect(done).resolves.toBe(true);
    expect(logger.count('log', 'recovered')).toBe(1);
  });

  it('flush writes everything queued, in writes of maxWrite, and leaves no timer behind', async () => {
    const archiveSucceeded = archivingAll();
    const batcher = new CompletionBatcher({ archiveSucceeded }, new RecordingLogger(), {
      maxBatch: 2,
      maxWrite: 2,
      flushDelayMs: 1_000,
    });
    await batcher.flush();
    expect(archiveSucceeded).not.toHaveBeenCalled();
    const done = ['a', 'b', 'c', 'd', 'e'].map((id) => batcher.add(item(id)));
    await batcher.flush();
    expect(archiveSucceeded.mock.calls.map(([items]) => items.length)).toEqual([2, 2, 1]);
    expect(batcher.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
    await expect(Promise.all(done)).resolves.toEqual(Array(5).fill(true));
    await jest.advanceTimersByTimeAsync(5_000);
    expect(archiveSucceeded).toHaveBeenCalledTimes(3);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('an idle batcher keeps no timer: nothing queued after a write arms nothing', async () => {
    const archiveSucceeded = archivingAll();
    const batcher = new CompletionBatcher({ archiveSucceeded }, new RecordingLogger(), {
      flushDelayMs: 20,
    });
    const done = batcher.add(item('a'));
    await jest.advanceTimersByTimeAsync(20);
    await expect(done).resolves.toBe(true);
    expect(jest.getTimerCount()).toBe(0);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(archiveSucceeded).toHaveBeenCalledTimes(1);
  });

  it('flush rejects with the storage error and keeps the items for a retry', async () => {
    const batcher = new CompletionBatcher(
      {
        archiveSucceeded: async () => {
          throw new Error('db down');
        },
      },
      new RecordingLogger(),
    );
    void batcher.add(item('a'));
    await expect(batcher.flush()).rejects.toThrow('db down');
    expect(batcher.pendingLeases().map((l) => l.id)).toEqual(['a']);
  });

  it('backs off exponentially between failed writes: base, then twice the base', async () => {
    jest.spyOn(Math, 'random').mockReturnValue(0.5); // no jitter
    try {
      const at: number[] = [];
      const archiveSucceeded = jest.fn(async () => {
        at.push(Date.now());
        throw new Error('db down');
      });
      const batcher = new CompletionBatcher({ archiveSucceeded }, new RecordingLogger(), {
        flushDelayMs: 10,
        retryBaseMs: 100,
        retryMaxMs: 10_000,
      });
      void batcher.add(item('a'));
      await jest.advanceTimersByTimeAsync(10 + 100 + 200 + 1);
      expect(at.slice(1).map((t, i) => t - at[i])).toEqual([100, 200]);
    } finally {
      jest.spyOn(Math, 'random').mockRestore();
    }
  });

  it('logs a refused completion by its job, and a normal write logs nothing', async () => {
    const logger = new RecordingLogger();
    const batcher = new CompletionBatcher(
      {
        archiveSucceeded: async () => [
          { id: 'a', leaseId: 'l' },
          { id: 'c', leaseId: 'l' },
        ],
      },
      logger,
    );
    const done = Promise.all(['a', 'b', 'c'].map((id) => batcher.add(item(id))));
    await jest.advanceTimersByTimeAsync(20);
    await expect(done).resolves.toEqual([true, false, true]);
    expect(batcher.refusedCount).toBe(1);
    expect(logger.events('StateTransitionConflict')).toEqual([
      expect.objectContaining({ operation: 'archiveSucceeded', jobId: 'b' }),
    ]);
    expect(logger.lines.map((l) => l.message)).toEqual([
      'Job b succeeded but its archive was refused: the lease no longer matches (cancelled, ' +
        'rescued or resurrected meanwhile).',
    ]);
  });

  it('logs an outage once, in words that say what happens next', async () => {
    const logger = new RecordingLogger();
    const batcher = new CompletionBatcher(
      {
        archiveSucceeded: async () => {
          throw new Error('db down');
        },
      },
      logger,
      { retryBaseMs: 50, retryMaxMs: 50 },
    );
    void batcher.add(item('a'));
    await jest.advanceTimersByTimeAsync(500);
    expect(logger.lines.map((l) => l.message)).toEqual([
      'Archiving 1 completion(s) failed: db down. Retrying with backoff; further failures are ' +
        'counted, not logged, until it recovers.',
    ]);
  });

  describe('close', () => {
    it('writes what is queued and returns', async () => {
      const archiveSucceeded = jest.fn(async (items: readonly CompletedJob[]) =>
        items.map(({ id, leaseId }) => ({ id, leaseId })),
      );
      const batcher = new CompletionBatcher({ archiveSucceeded }, new RecordingLogger());
      const done = batcher.add(item('a'));
      await batcher.close(Date.now() + 1_000);
      await expect(done).resolves.toBe(true);
      expect(archiveSucceeded).toHaveBeenCalledTimes(1);
      expect(jest.getTimerCount()).toBe(0);
    });

    it('retries with backoff until the storage takes the batch', async () => {
      let failures = 2;
      const archiveSucceeded = jest.fn(async (items: readonly CompletedJob[]) => {
        if (failures-- > 0) throw new Error('db down');
        return items.map(({ id, leaseId }) => ({ id, leaseId }));
      });
      const batcher = new CompletionBatcher({ archiveSucceeded }, new RecordingLogger(), {
        retryBaseMs: 100,
        retryMaxMs: 1_000,
      });
      const done = batcher.add(item('a'));
      const closing = batcher.close(Date.now() + 10_000);
      await jest.advanceTimersByTimeAsync(1_000);
      await closing;
      await expect(done).resolves.toBe(true);
      expect(batcher.size).toBe(0);
    });

    it('gives up before the deadline: the rest resolves false and is logged once, with its count', async () => {
      const logger = new RecordingLogger();
      const archiveSucceeded = jest.fn(async () => {
        throw new Error('db down');
      });
      const batcher = new CompletionBatcher({ archiveSucceeded }, logger, {
        retryBaseMs: 100,
        retryMaxMs: 100_000,
      });
      const done = [batcher.add(item('a')), batcher.add(item('b'))];
      const start = Date.now();
      const deadline = start + 1_000;
      let closed = false;
      const closing = batcher.close(deadline).then(() => (closed = true));
      await jest.advanceTimersByTimeAsync(699);
      expect(closed).toBe(false);
      // Waits of 100, 200, 400 ms fit; the next (800 ms) would end past the deadline.
      await jest.advanceTimersByTimeAsync(1);
      await closing;
      expect(Date.now() - start).toBe(700);
      expect(archiveSucceeded.mock.calls.length).toBeGreaterThanOrEqual(4);
      await expect(Promise.all(done)).resolves.toEqual([false, false]);
      expect(batcher.size).toBe(0);
      expect(jest.getTimerCount()).toBe(0);
      expect(logger.events('CompletionsUnwritten')).toEqual([
        expect.objectContaining({ count: 2, error: 'db down' }),
      ]);
      expect(
        logger.count('error', 'Could not write 2 completion(s) before shutdown: db down.'),
      ).toBe(1);
      expect(logger.count('error', 'the rescue loop will treat them as zombies')).toBe(1);
    });
  });
});
