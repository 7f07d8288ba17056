import { ChokaQFatalError, ChokaQThrottledError } from '../../libs/chokaq/src/errors';
import { type JobOutcome } from '../../libs/chokaq/src/interfaces/job-outcome.interface';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { ChokaQWorker, type ChokaQWorkerDeps } from '../../libs/chokaq/src/runtime/chokaq-worker';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { deferred, waitFor } from '../support/wait-for';
import { TestHandlers } from './support/handlers';
import { testOptions } from './support/options';
import { RecordingLogger } from './support/silent-logger';
import { openTestDatabase } from '../support/test-database';

/** Rejects when `signal` aborts (checking first: the abort may precede the handler). */
function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

function timeoutCount(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}

describe('ChokaQWorker on SQLite', () => {
  let storage: JobStorage;
  let cleanup: () => Promise<void>;
  let workers: ChokaQWorker[];
  let logger: RecordingLogger;

  beforeEach(async () => {
    const db = await openTestDatabase('sqlite');
    storage = db.storage;
    // The storage first, so an error closing it fails the test; then the file goes.
    cleanup = async () => {
      await storage.close();
      await db.close();
    };
    workers = [];
    logger = new RecordingLogger();
  });

  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop().catch(() => undefined)));
    await cleanup();
  });

  function worker(
    handlers: TestHandlers,
    overrides: Parameters<typeof testOptions>[0] = {},
    extra: Partial<ChokaQWorkerDeps> = {},
  ) {
    const w = new ChokaQWorker({
      storage,
      handlers,
      options: testOptions(overrides),
      logger,
      ...extra,
    });
    workers.push(w);
    return w;
  }

  it('archives a successful job (drain as the testing helper)', async () => {
    const seen: unknown[] = [];
    const w = worker(
      new TestHandlers().add('mail', (payload, ctx) =>
        seen.push({ payload, attempt: ctx.attempt }),
      ),
    );
    const { id } = await storage.enqueue({
      queue: 'mail',
      type: 'welcome.v1',
      payload: { to: 'a@b.c' },
    });
    const outcomes = await w.drain(['mail']);
    expect(outcomes).toEqual([
      expect.objectContaining({ id, outcome: 'succeeded', attempt: 1, applied: true }),
    ]);
    expect(seen).toEqual([{ payload: { to: 'a@b.c' }, attempt: 1 }]);
    expect(await storage.getJob(id)).toMatchObject({ pillar: 'archive', attemptCount: 1 });
    expect(w.running).toBe(false);
  });

  it('counts a refused archive once as a state transition conflict', async () => {
    // The handler's own row is rescued as a zombie while it runs, so its success finds the lease
    // gone and the archive is refused: one conflict, however many layers see the refusal.
    const w = worker(
      new TestHandlers().add('mail', async (_payload, ctx) => {
        await waitFor('the running job rescued', async () =>
          (await storage.archiveZombies(1)).dlq.includes(ctx.id),
        );
      }),
    );
    const { id } = await storage.enqueue({ queue: 'mail' });
    const outcomes = await w.drain(['mail']);
    expect(outcomes).toEqual([
      expect.objectContaining({ id, outcome: 'succeeded', applied: false }),
    ]);
    expect(await storage.getJob(id)).toMatchObject({ pillar: 'dlq' });
    expect(w.stats().conflicts).toBe(1);
  });

  it('counts a completion waiting for its batch once as finalising', async () => {
    const w = worker(
      new TestHandlers().add('mail', () => undefined),
      { worker: { pollIntervalMs: 10 } },
      // A batch that is not written until stop() flushes it.
      { completionBatch: { flushDelayMs: 60_000 } },
    );
    await storage.enqueue({ queue: 'mail' });
    await w.start();
    await waitFor('the completion queued for its batch', () => w.stats().finalising > 0);
    expect(w.stats()).toMatchObject({ running: 0, finalising: 1 });
    await w.stop();
    expect(w.stats().finalising).toBe(0);
  });

  it('retries transient failures with the expected backoff, keeps LastError, then succeeds', async () => {
    const runs: Array<{ at: number; lastError: string | null }> = [];
    const handlers = new TestHandlers().add('flaky', async (_p, ctx) => {
      const job = await storage.getJob(ctx.id);
      runs.push({ at: Date.now(), lastError: job!.lastError });
      if (ctx.attempt < 3) throw new Error(`transient ${ctx.attempt}`);
    });
    const w = worker(handlers, {
      retry: { baseDelayMs: 150, multiplier: 2, jitterMs: 0, maxAttempts: 3 },
    });
    const { id } = await storage.enqueue({ queue: 'flaky' });
    await w.start();
    await waitFor('job archived', async () => (await storage.getJob(id))?.pillar === 'archive', {
      timeoutMs: 10_000,
    });
    expect(runs).toHaveLength(3);
    expect(runs[0].lastError).toBeNull();
    expect(runs[1].lastError).toContain('transient 1');
    expect(runs[2].lastError).toContain('transient 2');
    // First retry waits baseDelayMs, the second base × multiplier (poll interval adds a little).
    expect(runs[1].at - runs[0].at).toBeGreaterThanOrEqual(140);
    expect(runs[1].at - runs[0].at).toBeLessThan(400);
    expect(runs[2].at - runs[1].at).toBeGreaterThanOrEqual(290);
    expect((await storage.getSummary()).retriedTotal).toBe(2);
  });

  it('moves a job whose attempts are exhausted to DLQ MaxRetriesExceeded', async () => {
    const w = worker(
      new TestHandlers().add(
        'bad',
        () => {
          throw new Error('always');
        },
        { maxAttempts: 2 },
      ),
      {
        retry: { baseDelayMs: 10 },
      },
    );
    const { id } = await storage.enqueue({ queue: 'bad' });
    await w.start();
    const job = await waitFor(
      'job in DLQ',
      async () => {
        const j = await storage.getJob(id);
        return j?.pillar === 'dlq' ? j : null;
      },
      { timeoutMs: 5_000 },
    );
    expect(job).toMatchObject({ failureReason: FailureReason.MaxRetriesExceeded, attemptCount: 2 });
    expect(job.errorDetails).toContain('always');
  });

  it('moves a fatal error to DLQ FatalError on the first attempt, whatever was thrown', async () => {
    const handlers = new TestHandlers()
      .add('fatal', () => {
        throw new ChokaQFatalError('malformed');
      })
      .add(
        'weird',
        () => {
          throw undefined;
        },
        { maxAttempts: 1 },
      )
      .add(
        'circular',
        () => {
          const o: Record<string, unknown> = {};
          o.self = o;
          throw o;
        },
        { maxAttempts: 1 },
      );
    const w = worker(handlers);
    const fatal = await storage.enqueue({ queue: 'fatal' });
    const weird = await storage.enqueue({ queue: 'weird' });
    const circular = await storage.enqueue({ queue: 'circular' });
    const outcomes = await w.drain();
    const byId = new Map(outcomes.map((o) => [o.id, o]));
    expect(byId.get(fatal.id)).toMatchObject({
      outcome: 'failed',
      attempt: 1,
      reason: FailureReason.FatalError,
    });
    expect(byId.get(weird.id)).toMatchObject({
      outcome: 'failed',
      reason: FailureReason.MaxRetriesExceeded,
    });
    expect(byId.get(circular.id)).toMatchObject({
      outcome: 'failed',
      reason: FailureReason.MaxRetriesExceeded,
    });
    expect((await storage.getJob(fatal.id))!.errorDetails).toContain('malformed');
    expect((await storage.getJob(weird.id))!.errorDetails).toContain('undefined was thrown');
  });

  it('times out a handler that never settles: DLQ Timeout, slot freed for the next job', async () => {
    const handlers = new TestHandlers()
      .add('slow', () => new Promise(() => undefined), { type: 'hang', timeoutMs: 150 })
      .add('slow', () => 'ok', { type: 'quick' });
    const w = worker(handlers, { worker: { concurrency: 1 } });
    const hang = await storage.enqueue({ queue: 'slow', type: 'hang', priority: 100 });
    const quick = await storage.enqueue({ queue: 'slow', type: 'quick', priority: 1 });
    await w.start();
    await waitFor(
      'quick archived',
      async () => (await storage.getJob(quick.id))?.pillar === 'archive',
      { timeoutMs: 5_000 },
    );
    expect(await storage.getJob(hang.id)).toMatchObject({
      pillar: 'dlq',
      failureReason: FailureReason.Timeout,
    });
    expect(w.stats().running).toBe(0);
  });

  it('retries a throttled job after exactly retryAfterMs, spending the attempt', async () => {
    const handlers = new TestHandlers().add('api', (_p, ctx) => {
      if (ctx.attempt === 1) throw new ChokaQThrottledError(400, '429 from upstream');
    });
    const w = worker(handlers);
    const { id } = await storage.enqueue({ queue: 'api' });
    const first = await w.drain();
    expect(first).toEqual([
      expect.objectContaining({ id, outcome: 'retried', retryDelayMs: 400, attempt: 1 }),
    ]);
    const pending = await storage.getJob(id);
    const dbNow = await storage.now();
    expect(pending).toMatchObject({ status: JobStatus.Pending, attemptCount: 1 });
    const wait = pending!.scheduledAtUtc!.getTime() - dbNow.getTime();
    expect(wait).toBeGreaterThan(250);
    expect(wait).toBeLessThanOrEqual(400);
    expect(await w.drain()).toEqual([]); // not due yet
    const second = await waitFor(
      'throttled job due again',
      async () => {
        const out = await w.drain();
        return out.length > 0 ? out : null;
      },
      { timeoutMs: 3_000 },
    );
    expect(second).toEqual([expect.objectContaining({ id, outcome: 'succeeded', attempt: 2 })]);
  });

  it('cancels a running job through the heartbeat: signal aborted, DLQ Cancelled', async () => {
    const started = deferred();
    let aborted = false;
    const handlers = new TestHandlers().add('long', async (_p, ctx) => {
      started.resolve();
      await untilAborted(ctx.signal).catch((e) => {
        aborted = true;
        throw e;
      });
    });
    const w = worker(handlers);
    const { id } = await storage.enqueue({ queue: 'long' });
    await w.start();
    await started.promise;
    const result = await storage.cancel([id]);
    expect(result.cancelRequested).toEqual([id]);
    const job = await waitFor(
      'cancelled job in DLQ',
      async () => {
        const j = await storage.getJob(id);
        return j?.pillar === 'dlq' ? j : null;
      },
      { timeoutMs: 5_000 },
    );
    expect(job.failureReason).toBe(FailureReason.Cancelled);
    expect(aborted).toBe(true);
  });

  it('cancelLocal aborts at once, without waiting for a heartbeat', async () => {
    const started = deferred();
    const handlers = new TestHandlers().add('long', async (_p, ctx) => {
      started.resolve();
      await untilAborted(ctx.signal);
    });
    const w = worker(handlers, { heartbeat: { intervalMs: 60_000 } });
    const outcomes: JobOutcome[] = [];
    w.onOutcome((o) => outcomes.push(o));
    const { id } = await storage.enqueue({ queue: 'long' });
    await w.start();
    await started.promise;
    await storage.cancel([id]);
    expect(w.cancelLocal(id)).toBe(true);
    await waitFor('outcome', () => outcomes.length === 1, { timeoutMs: 2_000 });
    expect(outcomes[0]).toMatchObject({
      outcome: 'cancelled',
      reason: FailureReason.Cancelled,
      applied: true,
    });
  });

  it('respects a paused queue and runs it once resumed', async () => {
    const ran: string[] = [];
    const handlers = new TestHandlers()
      .add('paused', () => ran.push('paused'))
      .add('other', () => ran.push('other'));
    const w = worker(handlers);
    await storage.updateQueue('paused', { isPaused: true });
    const p = await storage.enqueue({ queue: 'paused' });
    await w.start();
    // A later job of another queue is the synchronisation point: several poll cycles have passed.
    const o = await storage.enqueue({ queue: 'other' });
    w.nudge('other');
    await waitFor(
      'other archived',
      async () => (await storage.getJob(o.id))?.pillar === 'archive',
      { timeoutMs: 5_000 },
    );
    await waitFor('no buffered job', () => w.stats().buffered === 0, { timeoutMs: 1_000 });
    expect(await storage.getJob(p.id)).toMatchObject({ pillar: 'hot', status: JobStatus.Pending });
    expect(ran).toEqual(['other']);
    await storage.updateQueue('paused', { isPaused: false });
    await waitFor(
      'paused job archived after resume',
      async () => (await storage.getJob(p.id))?.pillar === 'archive',
      { timeoutMs: 5_000 },
    );
  });

  it('respects MaxWorkers of a queue across the process', async () => {
    let active = 0;
    let maxActive = 0;
    const handlers = new TestHandlers().add('budget', async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((resolve) => setTimeout(resolve, 40));
      active--;
    });
    const w = worker(handlers, { worker: { concurrency: 6, prefetch: 20 } });
    await storage.updateQueue('budget', { maxWorkers: 2 });
    const ids = (
      await storage.enqueueMany(Array.from({ length: 8 }, () => ({ queue: 'budget' })))
    ).map((r) => r.id);
    await w.start();
    await waitFor(
      'all archived',
      async () => (await storage.getSummary()).archived === ids.length,
      { timeoutMs: 10_000 },
    );
    expect(maxActive).toBe(2);
  });

  it('releases an open circuit without spending an attempt', async () => {
    const handlers = new TestHandlers().add('cb', () => {
      throw new Error('downstream down');
    });
    const w = worker(handlers, {
      circuitBreaker: {
        failureThreshold: 1,
        windowMs: 60_000,
        breakDurationMs: 5_000,
        halfOpenProbes: 1,
      },
      retry: { baseDelayMs: 60_000 },
    });
    const first = await storage.enqueue({ queue: 'cb' });
    expect(await w.drain()).toEqual([
      expect.objectContaining({ id: first.id, outcome: 'retried' }),
    ]);
    const second = await storage.enqueue({ queue: 'cb' });
    const out = await w.drain();
    expect(out).toEqual([
      expect.objectContaining({ id: second.id, outcome: 'released', applied: true }),
    ]);
    expect(out[0].retryDelayMs).toBeGreaterThan(4_000);
    expect(await storage.getJob(second.id)).toMatchObject({
      status: JobStatus.Pending,
      attemptCount: 0,
    });
    expect(w.stats().circuits).toEqual({ 'cb/cb': 'open' });
  });

  it('moves a job whose handler disappeared after the claim to DLQ NoHandler', async () => {
    const inner = new TestHandlers().add('gone', () => 'ok');
    const handlers = {
      handled: () => inner.handled(),
      resolve: () => undefined,
      zombieRetryRules: () => [],
    };
    const w = new ChokaQWorker({ storage, handlers, options: testOptions(), logger });
    workers.push(w);
    const { id } = await storage.enqueue({ queue: 'gone' });
    expect(await w.drain()).toEqual([
      expect.objectContaining({ id, outcome: 'failed', reason: FailureReason.NoHandler }),
    ]);
    expect(await storage.getJob(id)).toMatchObject({ pillar: 'dlq', attemptCount: 0 });
  });

  it('stops gracefully: buffered back to Pending, cooperative run back to Pending with its attempt, finished run archived', async () => {
    const running = { coop: deferred(), finisher: deferred() };
    const handlers = new TestHandlers()
      .add(
        's',
        async (_p, ctx) => {
          running.coop.resolve();
          await untilAborted(ctx.signal);
        },
        { type: 'coop' },
      )
      .add(
        's',
        async (_p, ctx) => {
          running.finisher.resolve();
          // Ignores the signal's reason but finishes its unit of work shortly after the abort.
          await new Promise<void>((resolve) =>
            ctx.signal.addEventListener('abort', () => setTimeout(resolve, 50)),
          );
        },
        { type: 'finisher' },
      )
      .add('s', () => new Promise(() => undefined), { type: 'never' });
    const timersBefore = timeoutCount();
    const w = worker(handlers, {
      worker: { concurrency: 2, prefetch: 10, batchSize: 10, shutdownGracePeriodMs: 2_000 },
    });
    const coop = await storage.enqueue({ queue: 's', type: 'coop', priority: 100 });
    const finisher = await storage.enqueue({ queue: 's', type: 'finisher', priority: 90 });
    const buffered = await storage.enqueueMany(
      Array.from({ length: 4 }, () => ({ queue: 's', type: 'never', priority: 1 })),
    );
    await w.start();
    await Promise.all([running.coop.promise, running.finisher.promise]);
    await waitFor('four buffered', () => w.stats().buffered === 4, { timeoutMs: 2_000 });
    const t0 = Date.now();
    await w.stop();
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(w.running).toBe(false);
    expect(w.stats()).toMatchObject({ buffered: 0, running: 0, finalising: 0 });
    expect(await storage.getJob(coop.id)).toMatchObject({
      status: JobStatus.Pending,
      attemptCount: 1,
    });
    expect((await storage.getJob(coop.id))!.lastError).toContain('shutdown');
    expect(await storage.getJob(finisher.id)).toMatchObject({ pillar: 'archive' });
    for (const { id } of buffered) {
      expect(await storage.getJob(id)).toMatchObject({
        status: JobStatus.Pending,
        attemptCount: 0,
        workerId: null,
      });
    }
    expect(timeoutCount()).toBeLessThanOrEqual(timersBefore);
    await w.stop(); // idempotent
  });

  it('leaves a handler still running after the grace period to rescue, and stop() still resolves', async () => {
    const started = deferred();
    const w = worker(
      new TestHandlers().add('stuck', () => {
        started.resolve();
        return new Promise(() => undefined);
      }),
      { worker: { shutdownGracePeriodMs: 200 } },
    );
    const outcomes: JobOutcome[] = [];
    w.onOutcome((o) => outcomes.push(o));
    const { id } = await storage.enqueue({ queue: 'stuck' });
    await w.start();
    await started.promise;
    const t0 = Date.now();
    w.beginStop();
    await w.stop();
    expect(Date.now() - t0).toBeLessThan(1_500);
    expect(outcomes).toEqual([
      expect.objectContaining({ id, outcome: 'released', applied: false }),
    ]);
    expect(await storage.getJob(id)).toMatchObject({ status: JobStatus.Processing });
  });

  it('survives an outage of the storage: logs it once, recovers, loses nothing', async () => {
    const handlers = new TestHandlers().add('o', () => 'ok');
    let down = false;
    const flaky = new Proxy(storage, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop === 'fetchNextBatch' || prop === 'getQueues') {
          return (...args: unknown[]) =>
            down
              ? Promise.reject(new Error('connection reset'))
              : (value as (...a: unknown[]) => unknown).apply(target, args);
        }
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const w = new ChokaQWorker({ storage: flaky, handlers, options: testOptions(), logger });
    workers.push(w);
    down = true;
    await w.start();
    const { id } = await storage.enqueue({ queue: 'o' });
    await waitFor('outage logged', () => logger.count('warn', 'connection reset') > 0, {
      timeoutMs: 2_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 300)); // several failed polls
    down = false;
    await waitFor(
      'archived after recovery',
      async () => (await storage.getJob(id))?.pillar === 'archive',
      { timeoutMs: 5_000 },
    );
    expect(logger.count('warn', 'connection reset')).toBe(1);
    expect(logger.count('log', 'recovered')).toBe(1);
  });

  it('reports its state and the age of its last complete heartbeat for health checks', async () => {
    let rowsDown = false;
    const flaky = new Proxy(storage, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop === 'upsertWorker') {
          return (...args: unknown[]) =>
            rowsDown
              ? Promise.reject(new Error('connection reset'))
              : (value as (...a: unknown[]) => unknown).apply(target, args);
        }
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const w = new ChokaQWorker({
      storage: flaky,
      handlers: new TestHandlers().add('h', () => 'ok'),
      options: testOptions({ heartbeat: { intervalMs: 50 } }),
      logger,
    });
    workers.push(w);
    expect(w.health()).toMatchObject({ state: 'starting', heartbeatAgeMs: null });

    await w.start();
    expect(w.health()).toMatchObject({
      workerId: w.workerId,
      state: 'running',
      heartbeatAgeMs: expect.any(Number),
      heartbeatIntervalMs: 50,
      heartbeatFailures: 0,
      buffered: 0,
      running: 0,
      concurrency: testOptions().worker.concurrency,
    });
    // Its row cannot be written: no beat completes, and the age grows past several intervals;
    // once the row is written again, a beat completes and the age starts over.
    rowsDown = true;
    await waitFor('a stale heartbeat', () => w.health().heartbeatAgeMs! > 500, {
      timeoutMs: 5_000,
    });
    rowsDown = false;
    await waitFor('a fresh heartbeat', () => w.health().heartbeatAgeMs! < 500, {
      timeoutMs: 5_000,
    });

    w.beginStop();
    expect(w.health().state).toBe('draining');
    await w.stop();
    expect(w.health().state).toBe('stopped');
  });

  it('stops claiming while completions wait to be written: unwritten runs are bounded', async () => {
    // Archive writes stall (a slow or locked database) while handlers keep finishing at once.
    const gate = deferred<void>();
    const stalled = new Proxy(storage, {
      get(target, key, receiver) {
        if (key === 'archiveSucceeded') {
          return async (...args: Parameters<JobStorage['archiveSucceeded']>) => {
            await gate.promise;
            return target.archiveSucceeded(...args);
          };
        }
        const value = Reflect.get(target, key, receiver) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await storage.enqueueMany(Array.from({ length: 60 }, () => ({ queue: 'fast' })));
    let ran = 0;
    const w = worker(
      new TestHandlers().add('fast', () => {
        ran++;
      }),
      { worker: { concurrency: 4, prefetch: 10, batchSize: 5, pollIntervalMs: 10 } },
      // The bound is max(prefetch, one full write): 10 here.
      { storage: stalled, completionBatch: { maxBatch: 5, maxWrite: 10 } },
    );
    await w.start();
    await waitFor('the prefetch bound reached', () => ran >= 10, { timeoutMs: 10_000 });
    // Give the fetcher many more polls: it must not claim past prefetch while nothing is written.
    const fetched = async () => (await storage.getQueueStats()).find((q) => q.queue === 'fast')!;
    await new Promise((resolve) => setTimeout(resolve, 200));
    const held = await fetched();
    expect(held.fetched + held.processing).toBeLessThanOrEqual(10);
    expect(ran).toBeLessThanOrEqual(10);
    gate.resolve();
    await waitFor('all archived', async () => (await fetched()).succeededTotal === 60, {
      timeoutMs: 20_000,
    });
    expect(ran).toBe(60);
  });

  it('starts claimed jobs in the claim when slots are free, and through the buffer when they are not', async () => {
    const calls = { markAsProcessing: 0, started: 0 };
    const counting = new Proxy(storage, {
      get(target, key, receiver) {
        if (key === 'markAsProcessing') {
          return (...args: Parameters<JobStorage['markAsProcessing']>) => {
            calls.markAsProcessing++;
            return target.markAsProcessing(...args);
          };
        }
        if (key === 'fetchNextBatch') {
          return async (...args: Parameters<JobStorage['fetchNextBatch']>) => {
            const rows = await target.fetchNextBatch(...args);
            calls.started += rows.filter((r) => r.status === JobStatus.Processing).length;
            return rows;
          };
        }
        const value = Reflect.get(target, key, receiver) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const gate = deferred<void>();
    const attempts: number[] = [];
    let failedOnce = false;
    const w = worker(
      new TestHandlers()
        .add('quick', (_payload, ctx) => {
          attempts.push(ctx.attempt);
          if (!failedOnce) {
            failedOnce = true;
            throw new Error('first run fails');
          }
        })
        .add('slow', () => gate.promise),
      { worker: { concurrency: 2, prefetch: 10, batchSize: 5, pollIntervalMs: 10 } },
      { storage: counting },
    );
    await w.start();
    // Free slots: the claim starts the job itself; its retry is claimed and started the same way.
    const { id } = await storage.enqueue({ queue: 'quick' });
    await waitFor('the quick job archived', async () => {
      return (await storage.getJob(id))?.pillar === 'archive';
    });
    expect(attempts).toEqual([1, 2]);
    expect(await storage.getJob(id)).toMatchObject({ attemptCount: 2 });
    expect(calls).toEqual({ markAsProcessing: 0, started: 2 });

    // Both slots busy: further claims fill the buffer, and those jobs start via markAsProcessing.
    await storage.enqueueMany(Array.from({ length: 5 }, () => ({ queue: 'slow' })));
    await waitFor('slots full and the rest buffered', async () => {
      const stats = (await storage.getQueueStats()).find((q) => q.queue === 'slow');
      return stats?.processing === 2 && stats.fetched === 3;
    });
    gate.resolve();
    await waitFor('all slow jobs archived', async () => {
      return (await storage.getQueueStats()).find((q) => q.queue === 'slow')?.succeededTotal === 5;
    });
    expect(calls.markAsProcessing).toBeGreaterThan(0);
  });
});
