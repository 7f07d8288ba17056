import { RecordingLogger } from '../../../../test/runtime/support/silent-logger';
import { testOptions } from '../../../../test/runtime/support/options';
import { queueInfo } from '../../../../test/runtime/support/queue-info';
import type { HandlerLookup } from '../interfaces/handler.interface';
import type { ClaimedJobs, RateLimit } from '../interfaces/job.interface';
import type { JobStore } from '../storage/job-storage';
import { FetcherLoop, MIN_RATE_RETRY_MS } from './fetcher.loop';
import type { JobProcessor } from './job-processor';
import { IDLE_TICK, type TickResult } from './loop';
import { QueueControls } from './queue-controls';

const POLL_MS = 1_000;

/**
 * A fetcher over a storage whose claims come back empty (with `claimed` as they say), with five
 * free slots: how long it waits before the next claim.
 */
async function nextDelay(
  claimed: ClaimedJobs,
  { reports, rateLimit }: { reports: boolean | undefined; rateLimit: RateLimit | null },
): Promise<TickResult> {
  const storage = {
    reportsRateLimitWait: reports,
    fetchNextBatch: jest.fn(async () => claimed),
    getQueues: jest.fn(async () => [queueInfo('geo', { rateLimit })]),
  };
  const processor = {
    waitingCount: 0,
    unwrittenCount: 0,
    releaseHeld: async () => 0,
    reserveStartSlots: (max: number) => Math.min(max, 5),
    startsAhead: () => false,
    now: () => 0,
    noteClaim: () => undefined,
    accept: () => undefined,
  };
  const handlers = { handled: () => ({ queues: ['geo'], types: [] }) };
  const fetcher = new FetcherLoop({
    storage: storage as unknown as JobStore,
    handlers: handlers as unknown as HandlerLookup,
    options: testOptions({ worker: { pollIntervalMs: POLL_MS } }),
    workerId: 'w',
    processor: processor as unknown as JobProcessor,
    controls: new QueueControls(storage),
    logger: new RecordingLogger(),
    maxUnwritten: 100,
  });
  // One cycle, as the loop runs it (the cycle is private: the loop owns the timers).
  return (fetcher as unknown as { tick(): Promise<TickResult> }).tick();
}

const held = (waitMs: number): ClaimedJobs => Object.assign([], { rateLimitWaitMs: waitMs });

describe('FetcherLoop after a claim a rate limit cut short', () => {
  it('claims again when the storage says the limit frees up, if sooner than the poll', async () => {
    const rateLimit = { max: 10, perMs: 1_000 };
    expect(await nextDelay(held(300), { reports: true, rateLimit })).toBe(300);
    expect(await nextDelay(held(5_000), { reports: true, rateLimit })).toBeUndefined();
  });

  it('trusts a storage that reports waits: no wait reported, the poll interval', async () => {
    const rateLimit = { max: 10, perMs: 1_000 };
    expect(await nextDelay([], { reports: true, rateLimit })).toBeUndefined();
  });

  it('retries at the emission interval where the storage cannot say (SQL Server), at least 20 ms', async () => {
    expect(await nextDelay([], { reports: undefined, rateLimit: { max: 10, perMs: 1_000 } })).toBe(
      100,
    );
    expect(await nextDelay([], { reports: false, rateLimit: { max: 1_000, perMs: 1 } })).toBe(
      MIN_RATE_RETRY_MS,
    );
    expect(
      await nextDelay([], { reports: undefined, rateLimit: { max: 1, perMs: 60_000 } }),
    ).toBeUndefined();
    expect(await nextDelay([], { reports: undefined, rateLimit: null })).toBeUndefined();
  });
});

describe('FetcherLoop starting ahead', () => {
  /** One cycle over a processor that starts ahead (room 6) with two free slots. */
  async function claimOf(budgeted: readonly string[], { slots = 2, room = 6 } = {}) {
    const fetchNextBatch = jest.fn(async (_request: unknown) => [] as ClaimedJobs);
    const storage = {
      fetchNextBatch,
      getQueues: jest.fn(async () => budgeted.map((name) => queueInfo(name, { maxWorkers: 1 }))),
    };
    const processor = {
      waitingCount: 0,
      unwrittenCount: 0,
      releaseHeld: async () => 0,
      reserveStartSlots: (max: number) => Math.min(max, slots),
      startsAhead: (isBudgeted: boolean) => !isBudgeted,
      aheadRoom: (_reserved: number, max: number) => Math.min(max, room),
      now: () => 0,
      noteClaim: jest.fn(),
      accept: jest.fn(),
    };
    const fetcher = new FetcherLoop({
      storage: storage as unknown as JobStore,
      handlers: { handled: () => ({ queues: ['geo'], types: [] }) } as unknown as HandlerLookup,
      options: testOptions({ worker: { pollIntervalMs: POLL_MS, prefetch: 100 } }),
      workerId: 'w',
      processor: processor as unknown as JobProcessor,
      controls: new QueueControls(storage),
      logger: new RecordingLogger(),
      maxUnwritten: 100,
    });
    const delay = await (fetcher as unknown as { tick(): Promise<TickResult> }).tick();
    return { delay, request: fetchNextBatch.mock.calls[0]?.[0], processor };
  }

  it('starts the free slots plus the room ahead in one claim marked ahead', async () => {
    const { request, processor } = await claimOf([]);
    expect(request).toMatchObject({ limit: 8, start: 8, ahead: true });
    // Only the reserved slots are handed to accept as reserved: the rest waits for slots.
    expect(processor.accept).toHaveBeenCalledWith([], expect.anything(), 2, 0);
  });

  it('starts exactly the free slots when a handled queue has a budget or a rate limit', async () => {
    const { request } = await claimOf(['geo']);
    expect(request).toMatchObject({ limit: 2, start: 2 });
    expect(request).not.toHaveProperty('ahead');
  });

  it('claims nothing into the buffer while rows started ahead cover the slots', async () => {
    const { request, delay } = await claimOf([], { slots: 0, room: 0 });
    expect(request).toBeUndefined();
    expect(delay).toBe(IDLE_TICK);
  });
});
