import { RecordingLogger } from '../../../../test/runtime/support/silent-logger';
import { TestHandlers } from '../../../../test/runtime/support/handlers';
import { hotJob } from '../../../../test/runtime/support/hot-job';
import { queueInfo as queue } from '../../../../test/runtime/support/queue-info';
import { testOptions } from '../../../../test/runtime/support/options';
import { waitFor } from '../../../../test/support/wait-for';
import type { JobOutcome } from '../interfaces/job-outcome.interface';
import { FailureReason, JobStatus } from '../interfaces/job-status.enum';
import type { DlqMove, HotJob, JobLease, QueueInfo } from '../interfaces/job.interface';
import type { JobStore } from '../storage/job-storage';
import { CircuitBreakers } from './circuit-breaker';
import { CompletionBatcher } from './completion-batcher';
import { JobExecutor } from './job-executor';
import { JobProcessor } from './job-processor';
import { QueueControls } from './queue-controls';

const ZOMBIE_MS = 60_000;

/** A storage that records the worker-owned writes the processor makes and applies none of them. */
function recordingStorage(queues: QueueInfo[] = []) {
  const calls: string[] = [];
  const ids = (leases: readonly JobLease[]) => leases.map((l) => l.id).join(',');
  const renewal = { touched: 1, fails: false };
  const storage = {
    markAsProcessing: jest.fn(async (leases: readonly JobLease[]) => {
      calls.push(`markAsProcessing ${ids(leases)}`);
      return leases.map((l) => l.id);
    }),
    keepAlive: jest.fn(async (_w: string, leases: readonly JobLease[]) => {
      calls.push(`keepAlive ${ids(leases)}`);
      if (renewal.fails) throw new Error('connection lost');
      return { touched: renewal.touched, cancelRequested: [] };
    }),
    release: jest.fn(async (leases: readonly JobLease[], delayMs?: number) => {
      calls.push(`release ${ids(leases)} ${delayMs ?? 0}`);
      return leases.length;
    }),
    unstart: jest.fn(async (leases: readonly JobLease[], delayMs?: number) => {
      calls.push(`unstart ${ids(leases)} ${delayMs ?? 0}`);
      return leases.length;
    }),
    moveToDlq: jest.fn(async (lease: JobLease, move: DlqMove) => {
      calls.push(`moveToDlq ${lease.id} ${FailureReason[move.reason]}`);
      return 1;
    }),
    rescheduleForRetry: jest.fn(async (lease: JobLease) => {
      calls.push(`rescheduleForRetry ${lease.id}`);
      return 1;
    }),
    archiveSucceeded: jest.fn(async (items: readonly JobLease[]) =>
      items.map((i) => ({ id: i.id, leaseId: i.leaseId })),
    ),
    reportProgress: jest.fn(async () => 1),
    getQueues: jest.fn(async () => queues),
  };
  return { storage, calls, renewal };
}

/** Rows a claim started (Processing, attempt 1) under lease `l`. */
function started(...ids: string[]): HotJob[] {
  return ids.map((id) =>
    hotJob({ id, status: JobStatus.Processing, attemptCount: 1, leaseId: 'l', queue: 'q' }),
  );
}

/** A processor with `concurrency` slots whose handlers wait until the test releases them. */
function harness(concurrency: number, queues: QueueInfo[] = []) {
  const { storage, calls, renewal } = recordingStorage(queues);
  const ran: string[] = [];
  const finish = new Map<string, () => void>();
  const handlers = new TestHandlers().add(
    'q',
    (_payload, ctx) =>
      new Promise<void>((resolve) => {
        ran.push(ctx.id);
        finish.set(ctx.id, resolve);
      }),
  );
  let now = 0;
  const outcomes: JobOutcome[] = [];
  const logger = new RecordingLogger();
  const options = testOptions({
    worker: { concurrency },
    rescue: { zombieTimeoutMs: ZOMBIE_MS },
  });
  const controls = new QueueControls(storage);
  const processor = new JobProcessor({
    storage: storage as unknown as JobStore,
    handlers,
    options,
    workerId: 'w',
    executor: new JobExecutor([], logger),
    batcher: new CompletionBatcher(storage, logger, { flushDelayMs: 1 }),
    breakers: new CircuitBreakers(options.circuitBreaker),
    controls,
    logger,
    onOutcome: (o) => outcomes.push(o),
    startAhead: 16,
    monotonic: () => now,
  });
  const lease = { workerId: 'w', leaseId: 'l' };
  return {
    processor,
    storage,
    calls,
    renewal,
    ran,
    outcomes,
    controls,
    logger,
    lease,
    advance: (ms: number) => (now += ms),
    /** Lets the handler of `id` return. */
    finish: (id: string) => finish.get(id)!(),
  };
}

describe('JobProcessor with rows started ahead', () => {
  it('runs what fits in the reserved slots and enters the rest as slots free, with no statement', async () => {
    const h = harness(2);
    expect(h.processor.reserveStartSlots(2)).toBe(2);
    h.processor.accept(started('a', 'b', 'c', 'd'), h.lease, 2);
    await waitFor('the two reserved runs', () => h.ran.length === 2);
    expect(h.ran).toEqual(['a', 'b']);
    expect(h.processor.startedAheadCount).toBe(2);
    // Waiting rows are not unwritten completions, and they take a freed slot before any claim.
    expect(h.processor.unwrittenCount).toBe(0);
    expect(h.processor.waitingCount).toBe(2);
    h.finish('a');
    await waitFor('c entered in a freed slot', () => h.ran.length === 3);
    expect(h.ran).toEqual(['a', 'b', 'c']);
    expect(h.processor.reserveStartSlots(2)).toBe(0);
    h.finish('b');
    h.finish('c');
    await waitFor('d entered', () => h.ran.length === 4);
    expect(h.calls.filter((c) => !c.startsWith('moveToDlq'))).toEqual([]);
    expect(h.storage.markAsProcessing).not.toHaveBeenCalled();
  });

  it('moves a row started ahead whose job is cancelled to the DLQ without running it', async () => {
    const h = harness(1);
    h.processor.accept(started('a', 'b'), h.lease, h.processor.reserveStartSlots(1));
    await waitFor('a running', () => h.ran.length === 1);
    expect(h.processor.cancel(['b'])).toBe(1);
    await waitFor('b in the DLQ', () => h.outcomes.some((o) => o.id === 'b'));
    expect(h.calls).toEqual(['moveToDlq b Cancelled']);
    expect(h.outcomes).toEqual([
      expect.objectContaining({ id: 'b', outcome: 'cancelled', reason: FailureReason.Cancelled }),
    ]);
    expect(h.processor.startedAheadCount).toBe(0);
    h.finish('a');
    await waitFor('a settled', () => h.outcomes.some((o) => o.id === 'a'));
    expect(h.ran).toEqual(['a']);
  });

  it('unstarts every row still waiting at shutdown, in one write, without running them', async () => {
    const h = harness(1);
    h.processor.accept(started('a', 'b', 'c'), h.lease, h.processor.reserveStartSlots(1));
    await waitFor('a running', () => h.ran.length === 1);
    h.processor.close();
    expect(await h.processor.releaseBuffered()).toBe(2);
    expect(h.calls).toEqual(['unstart b,c 0']);
    expect(h.outcomes.map((o) => [o.id, o.outcome])).toEqual([
      ['b', 'released'],
      ['c', 'released'],
    ]);
    h.finish('a');
    await h.processor.waitIdle(Date.now() + 5_000);
    expect(h.ran).toEqual(['a']);
  });

  it('is idle only once every run it dispatched has settled, and says so when the deadline passes first', async () => {
    const h = harness(2);
    h.processor.accept(started('a', 'b'), h.lease, h.processor.reserveStartSlots(2));
    await waitFor('both running', () => h.ran.length === 2);
    expect(await h.processor.waitIdle(Date.now() + 50)).toBe(false);
    let idle: boolean | undefined;
    const waiting = h.processor.waitIdle(Date.now() + 5_000).then((v) => (idle = v));
    h.finish('a');
    await waitFor('a settled', () => h.outcomes.some((o) => o.id === 'a'));
    // One run still in flight: not idle yet.
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBeUndefined();
    h.finish('b');
    await waiting;
    expect(idle).toBe(true);
    expect(h.outcomes.map((o) => o.id).sort()).toEqual(['a', 'b']);
  });

  it('unstarts the waiting rows of a queue paused meanwhile', async () => {
    const h = harness(1, [queue('q', { isPaused: true })]);
    h.processor.accept(started('a', 'b'), h.lease, h.processor.reserveStartSlots(1));
    await waitFor('a running', () => h.ran.length === 1);
    await h.controls.refresh();
    expect(await h.processor.releaseHeld()).toBe(1);
    expect(h.calls).toEqual(['unstart b 0']);
  });

  it('renews a row that waited past half its zombie timeout before running it', async () => {
    const h = harness(1);
    h.processor.accept(started('a', 'b'), h.lease, h.processor.reserveStartSlots(1));
    await waitFor('a running', () => h.ran.length === 1);
    h.advance(ZOMBIE_MS / 2);
    h.finish('a');
    await waitFor('b entered', () => h.ran.length === 2);
    expect(h.calls).toEqual(['keepAlive b']);
  });

  it('drops unrun a row whose lease a rescue took while this process stalled', async () => {
    const h = harness(1);
    h.processor.accept(started('a', 'b'), h.lease, h.processor.reserveStartSlots(1));
    await waitFor('a running', () => h.ran.length === 1);
    h.advance(ZOMBIE_MS);
    h.renewal.touched = 0;
    h.finish('a');
    await waitFor('b dropped', () => h.outcomes.some((o) => o.id === 'b'));
    expect(h.outcomes.find((o) => o.id === 'b')).toMatchObject({
      outcome: 'released',
      applied: false,
    });
    expect(h.ran).toEqual(['a']);
    expect(h.processor.conflicts).toBe(1);
    expect(h.processor.leases().map((l) => l.id)).not.toContain('b');
  });

  it('renews, before running them, the rows of a claim that returned after half a zombie timeout', async () => {
    // The claim was sent, then this process stalled: a rescue may have taken every row it started,
    // those in the reserved slots included.
    const h = harness(2);
    const sentAt = 0;
    h.advance(ZOMBIE_MS);
    h.renewal.touched = 0;
    h.processor.accept(started('a', 'b', 'c'), h.lease, h.processor.reserveStartSlots(2), sentAt);
    await waitFor('all three dropped', () => h.outcomes.length === 3);
    expect(h.ran).toEqual([]);
    expect(h.calls).toEqual(['keepAlive a', 'keepAlive b', 'keepAlive c']);
    expect(h.processor.conflicts).toBe(3);
    expect(h.processor.leases()).toEqual([]);
  });

  it('runs the rows of a late claim that are still its own after renewing them', async () => {
    const h = harness(1);
    h.advance(ZOMBIE_MS);
    h.processor.accept(started('a'), h.lease, h.processor.reserveStartSlots(1), 0);
    await waitFor('a running', () => h.ran.length === 1);
    expect(h.calls).toEqual(['keepAlive a']);
  });

  it('never runs a stale row whose renewal failed, and stops renewing it without a conflict', async () => {
    const h = harness(1);
    h.processor.accept(started('a', 'b'), h.lease, h.processor.reserveStartSlots(1));
    await waitFor('a running', () => h.ran.length === 1);
    h.advance(ZOMBIE_MS);
    h.renewal.fails = true;
    h.finish('a');
    await waitFor('b given up', () => h.outcomes.some((o) => o.id === 'b'));
    expect(h.outcomes.find((o) => o.id === 'b')).toMatchObject({
      outcome: 'released',
      applied: false,
    });
    expect(h.ran).toEqual(['a']);
    expect(h.processor.conflicts).toBe(0);
    expect(h.processor.leases().map((l) => l.id)).not.toContain('b');
  });

  it('hands back every waiting row of a type whose circuit opened, with its delay', async () => {
    const h = harness(1);
    const breakers = (h.processor as unknown as { deps: { breakers: CircuitBreakers } }).deps
      .breakers;
    h.processor.accept(started('a', 'b', 'c'), h.lease, h.processor.reserveStartSlots(1));
    await waitFor('a running', () => h.ran.length === 1);
    for (let i = 0; i < 1_000; i++) breakers.recordFailure('q/t', false);
    expect(breakers.allClosed()).toBe(false);
    h.finish('a');
    await waitFor('b and c handed back', () => h.calls.some((c) => c.startsWith('unstart')));
    expect(h.calls).toEqual([expect.stringMatching(/^unstart b,c [1-9]\d*$/)]);
    expect(h.ran).toEqual(['a']);
  });
});
