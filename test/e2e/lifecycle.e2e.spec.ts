import { INestApplication, Injectable } from '@nestjs/common';
import {
  ChokaQAdmin,
  ChokaQFatalError,
  ChokaQThrottledError,
  ChokaQValidationError,
  FailureReason,
  JobClient,
  JobContext,
  JobHandler,
  JobStatus,
  defineJob,
} from '../../libs/chokaq/src';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';
import { TestSchema, describeEachDialect } from '../support/test-database';
import { Gate, waitFor } from '../support/wait-for';

const Ok = defineJob<{ n: number }>('e2e', 'ok');
const Flaky = defineJob<{ failTimes: number }>('e2e', 'flaky');
const Always = defineJob<Record<string, never>>('e2e', 'always');
const Fatal = defineJob<Record<string, never>>('e2e', 'fatal');
const Hang = defineJob<Record<string, never>>('e2e', 'hang');
const Throttled = defineJob<{ retryAfterMs: number }>('e2e', 'throttled');
const Blocker = defineJob<{ key: string }>('e2e', 'blocker');
const Counted = defineJob<{ n: number }>('budget', 'counted');

/** Shared state between the test and its handlers. */
@Injectable()
class Probe {
  readonly runs: Array<{ type: string; attempt: number; at: number; id: string }> = [];
  readonly gates = new Map<string, Gate>();
  readonly started = new Set<string>();
  running = 0;
  maxRunning = 0;

  gate(key: string): Gate {
    let gate = this.gates.get(key);
    if (!gate) this.gates.set(key, (gate = new Gate()));
    return gate;
  }
  record(ctx: JobContext): void {
    this.runs.push({ type: ctx.type, attempt: ctx.attempt, at: Date.now(), id: ctx.id });
  }
}

@Injectable()
class Handlers {
  constructor(private readonly probe: Probe) {}

  @JobHandler(Ok)
  async ok(_p: { n: number }, ctx: JobContext): Promise<void> {
    this.probe.record(ctx);
  }

  @JobHandler(Flaky)
  async flaky(p: { failTimes: number }, ctx: JobContext): Promise<void> {
    this.probe.record(ctx);
    if (ctx.attempt <= p.failTimes) throw new Error(`transient failure ${ctx.attempt}`);
  }

  @JobHandler(Always)
  async always(_p: unknown, ctx: JobContext): Promise<void> {
    this.probe.record(ctx);
    throw new Error('always broken');
  }

  @JobHandler(Fatal)
  async fatal(_p: unknown, ctx: JobContext): Promise<void> {
    this.probe.record(ctx);
    throw new ChokaQFatalError('payload can never work');
  }

  @JobHandler(Hang, { timeoutMs: 300 })
  async hang(_p: unknown, ctx: JobContext): Promise<void> {
    this.probe.record(ctx);
    await new Promise(() => undefined); // never settles, ignores its signal
  }

  @JobHandler(Throttled)
  async throttled(p: { retryAfterMs: number }, ctx: JobContext): Promise<void> {
    this.probe.record(ctx);
    if (ctx.attempt === 1) throw new ChokaQThrottledError(p.retryAfterMs);
  }

  /** Cooperative: waits for its gate or its signal. */
  @JobHandler(Blocker)
  async blocker(p: { key: string }, ctx: JobContext): Promise<void> {
    this.probe.record(ctx);
    this.probe.started.add(p.key);
    await Promise.race([
      this.probe.gate(p.key).promise,
      new Promise((_, reject) => {
        const abort = () => reject(ctx.signal.reason ?? new Error('aborted'));
        if (ctx.signal.aborted) abort();
        else ctx.signal.addEventListener('abort', abort, { once: true });
      }),
    ]);
  }

  @JobHandler(Counted)
  async counted(_p: { n: number }, ctx: JobContext): Promise<void> {
    this.probe.record(ctx);
    this.probe.running++;
    this.probe.maxRunning = Math.max(this.probe.maxRunning, this.probe.running);
    await new Promise((resolve) => setTimeout(resolve, 40));
    this.probe.running--;
  }
}

describeEachDialect('job lifecycle through a Nest app', ({ name: dialect }) => {
  let db: TestSchema;
  let app: INestApplication;
  let jobs: JobClient;
  let admin: ChokaQAdmin;
  let probe: Probe;

  beforeEach(async () => {
    db = e2eDatabase(dialect);
    app = await bootApp(db, { providers: [Probe, Handlers] });
    jobs = app.get(JobClient);
    admin = app.get(ChokaQAdmin);
    probe = app.get(Probe);
  });

  afterEach(async () => {
    for (const gate of probe.gates.values()) gate.open();
    await closeAndCheck(app, db);
    await db.close();
  });

  const settled = (id: string) =>
    waitFor(`job ${id} to leave the hot table`, async () => {
      const job = await jobs.getJob(id);
      return job && job.pillar !== 'hot' ? job : undefined;
    });

  it('runs a job to success and archives it', async () => {
    const id = await jobs.enqueue(Ok, { n: 1 }, { tags: ['a'], createdBy: 'test' });
    const job = await settled(id);
    expect(job).toMatchObject({
      pillar: 'archive',
      status: JobStatus.Succeeded,
      attemptCount: 1,
      queue: 'e2e',
      type: 'ok',
    });
    expect(job.tags).toEqual(['a']);
    expect(await db.count('archive')).toBe(1);
    expect(probe.runs).toHaveLength(1);
  });

  it('retries transient failures with their LastError, then succeeds', async () => {
    const id = await jobs.enqueue(Flaky, { failTimes: 2 });
    const job = await settled(id);
    expect(job).toMatchObject({ pillar: 'archive', attemptCount: 3 });
    expect(job.lastError).toContain('transient failure 2');
    expect(probe.runs.map((r) => r.attempt)).toEqual([1, 2, 3]);
    const summary = await admin.getSummary();
    expect(summary.retriedTotal).toBe(2);
    expect(summary.succeededTotal).toBe(1);
  });

  it('moves exhausted jobs to the DLQ as MaxRetriesExceeded', async () => {
    const id = await jobs.enqueue(Always, {});
    const job = await settled(id);
    expect(job).toMatchObject({
      pillar: 'dlq',
      status: JobStatus.Failed,
      failureReason: FailureReason.MaxRetriesExceeded,
      attemptCount: 3,
    });
    expect(job.errorDetails).toContain('always broken');
    expect(probe.runs).toHaveLength(3);
  });

  it('moves a fatal error to the DLQ on the first attempt', async () => {
    const id = await jobs.enqueue(Fatal, {});
    const job = await settled(id);
    expect(job).toMatchObject({
      pillar: 'dlq',
      failureReason: FailureReason.FatalError,
      attemptCount: 1,
    });
    expect(probe.runs).toHaveLength(1);
  });

  it('moves a handler past its timeout to the DLQ as Timeout', async () => {
    const id = await jobs.enqueue(Hang, {});
    const job = await settled(id);
    expect(job).toMatchObject({
      pillar: 'dlq',
      failureReason: FailureReason.Timeout,
      attemptCount: 1,
    });
  });

  it('retries a throttled job after retryAfterMs', async () => {
    const id = await jobs.enqueue(Throttled, { retryAfterMs: 600 });
    const job = await settled(id);
    expect(job).toMatchObject({ pillar: 'archive', attemptCount: 2 });
    const [first, second] = probe.runs;
    expect(second.at - first.at).toBeGreaterThanOrEqual(550);
  });

  it('cancels a pending job and a running one', async () => {
    await admin.pauseQueue('e2e');
    const pending = await jobs.enqueue(Ok, { n: 1 });
    const cancelledPending = await jobs.cancel(pending, 'tester');
    expect(cancelledPending.cancelled).toEqual([pending]);
    expect(await jobs.getJob(pending)).toMatchObject({
      pillar: 'dlq',
      status: JobStatus.Cancelled,
      failureReason: FailureReason.Cancelled,
    });
    await admin.resumeQueue('e2e');

    const running = await jobs.enqueue(Blocker, { key: 'cancel-me' });
    await waitFor('the blocker to start', () => probe.started.has('cancel-me'));
    const result = await jobs.cancel(running);
    expect(result.cancelRequested).toEqual([running]);
    const job = await settled(running);
    expect(job).toMatchObject({
      pillar: 'dlq',
      status: JobStatus.Cancelled,
      failureReason: FailureReason.Cancelled,
    });
  });

  it('respects pause/resume and maxWorkers while the worker runs', async () => {
    await admin.pauseQueue('budget');
    await admin.setMaxWorkers('budget', 2);
    await jobs.enqueueMany(
      Counted,
      Array.from({ length: 12 }, (_, n) => ({ payload: { n } })),
    );
    // Paused: several poll cycles pass and nothing is claimed.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(probe.runs).toHaveLength(0);
    expect(await db.count('hot', "status = 0 AND queue = 'budget'")).toBe(12);
    await admin.resumeQueue('budget');
    await waitFor(
      '12 budget jobs archived',
      async () => (await db.count('archive', "queue = 'budget'")) === 12,
    );
    expect(probe.maxRunning).toBeLessThanOrEqual(2);
    expect(probe.maxRunning).toBeGreaterThanOrEqual(1);
    const [queue] = (await admin.listQueues()).filter((q) => q.name === 'budget');
    expect(queue).toMatchObject({ isPaused: false, maxWorkers: 2 });
  });

  it('returns the existing id for a duplicate active idempotency key', async () => {
    await admin.pauseQueue('e2e');
    const a = await jobs.enqueue(Ok, { n: 1 }, { idempotencyKey: 'once' });
    const b = await jobs.enqueue(Ok, { n: 2 }, { idempotencyKey: 'once' });
    expect(b).toBe(a);
    expect(await db.count('hot')).toBe(1);
    await admin.resumeQueue('e2e');
    await settled(a);
  });

  it('resurrects a DLQ job with edits through the admin', async () => {
    const id = await jobs.enqueue(Flaky, { failTimes: 5 });
    await settled(id);
    expect(await admin.resurrect(id, { payload: { failTimes: 0 } }, 'operator')).toBe(true);
    const job = await settled(id);
    expect(job).toMatchObject({ pillar: 'archive' });
    expect((await admin.getSummary()).resurrectedTotal).toBe(1);
  });

  it('refuses a concurrency the options refuse, with ChokaQValidationError, and keeps the old one', () => {
    const before = admin.workerStats()?.concurrency;
    for (const bad of [0, -1, 1.5, 10_001, Number.NaN]) {
      expect(() => admin.setConcurrency(bad)).toThrow(ChokaQValidationError);
    }
    expect(() => admin.setConcurrency(0)).toThrow(
      'concurrency must be an integer from 1 to 10000 (got 0)',
    );
    expect(admin.workerStats()?.concurrency).toBe(before);
  });

  it('shuts down gracefully: buffered jobs back to Pending, cooperative running ones handed back', async () => {
    // The buffer of Fetched rows is what this checks: on PostgreSQL a worker that starts ahead
    // (test/faults/start-ahead.spec.ts) buffers none, so this app does not.
    await app.close();
    app = await bootApp(db, {
      providers: [Probe, Handlers],
      options: { worker: { startAhead: 0 } },
    });
    jobs = app.get(JobClient);
    admin = app.get(ChokaQAdmin);
    probe = app.get(Probe);
    admin.setConcurrency(2);
    const ids = await jobs.enqueueMany(
      Blocker,
      Array.from({ length: 6 }, (_, i) => ({ payload: { key: `s${i}` } })),
    );
    await waitFor('two blockers running', () => probe.started.size === 2);
    await waitFor('the rest buffered', async () => (await db.count('hot', 'status = 1')) === 4);
    await app.close();
    // Nothing left Fetched or Processing; every job back to Pending (cooperative aborts keep their attempt).
    expect(await db.count('hot', 'status IN (1, 2)')).toBe(0);
    expect(await db.count('hot', 'status = 0')).toBe(6);
    const attempts = await db.query<{ attempt_count: number }>(
      `SELECT attempt_count FROM ${db.table('hot')} ORDER BY attempt_count DESC`,
    );
    expect(attempts.map((r) => Number(r.attempt_count))).toEqual([1, 1, 0, 0, 0, 0]);
    expect(ids).toHaveLength(6);
    // A second app picks them up.
    app = await bootApp(db, { providers: [Probe, Handlers] });
    probe = app.get(Probe);
    for (let i = 0; i < 6; i++) probe.gate(`s${i}`).open();
    await waitFor('all six archived', async () => (await db.count('archive')) === 6);
  });
});
