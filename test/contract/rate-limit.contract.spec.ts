import { ChokaQAdmin } from '../../libs/chokaq/src/admin/chokaq-admin.service';
import { JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { rateAllowance } from '../../libs/chokaq/src/storage/shared/rate-window';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import { testOptions } from '../runtime/support/options';
import { busiestWindow } from '../support/rate-windows';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import {
  Claim,
  claim,
  closeClaimers,
  expectValidationError,
  newWorkerId,
  openClaimers,
  retryUnavailable,
  uniqueQueue,
} from './helpers';

/** The shortened window of these tests: at most 5 starts in any 500 ms (database clock). */
const MAX = 5;
const PER_MS = 500;

/**
 * A queue's rate limit (issue 17, part 3), through the claim with the database's clock: at most
 * `max` starts in any window of `perMs`, measured on the rows' start times, across claimers;
 * held-back rows stay Pending with no attempt spent; it holds together with `MaxWorkers`; removing
 * it frees the queue at once. Windows are shortened (5 per 500 ms) rather than the clock faked.
 */
describeEachDialect('storage contract: rate limits', (fixture) => {
  let db: TestDatabase;
  let admin: ChokaQAdmin;
  beforeAll(async () => {
    db = await fixture.create();
    admin = new ChokaQAdmin(db.storage, testOptions(), new WorkerRegistry());
  });
  afterAll(async () => {
    await db?.close();
  });

  /** A claim that starts every row it takes (the only kind that claims a rate-limited queue). */
  const claimStarting = (queue: string, limit: number, storage = db.storage): Promise<Claim> =>
    claim(storage, queue, limit, newWorkerId(), { start: limit });

  /** The start times (epoch ms, database clock) of the given jobs. */
  async function startTimes(ids: readonly string[]): Promise<number[]> {
    const jobs = await Promise.all(ids.map((id) => db.storage.getJob(id)));
    return jobs.map((j) => j!.startedAtUtc!.getTime());
  }

  it('starts at most max per window; the rest stay Pending with no attempt spent; the claim says when the next start is due', async () => {
    const queue = uniqueQueue('rate');
    const ids = (await db.storage.enqueueMany(Array.from({ length: 12 }, () => ({ queue })))).map(
      (r) => r.id,
    );
    const info = await admin.setRateLimit(queue, { max: MAX, perMs: PER_MS });
    expect(info.rateLimit).toEqual({ max: MAX, perMs: PER_MS });
    expect((await admin.listQueues()).find((q) => q.name === queue)?.rateLimit).toEqual({
      max: MAX,
      perMs: PER_MS,
    });

    const first = await claimStarting(queue, 12);
    expect(first.rows).toHaveLength(MAX);
    expect(first.rows.every((r) => r.status === JobStatus.Processing)).toBe(true);
    const held = await claimStarting(queue, 12);
    expect(held.rows).toHaveLength(0);
    expect(held.rows.rateLimitWaitMs).toBeGreaterThan(0);
    expect(held.rows.rateLimitWaitMs).toBeLessThanOrEqual(PER_MS);
    // Held back: still Pending, never attempted.
    const claimed = new Set(first.rows.map((r) => r.id));
    for (const id of ids.filter((x) => !claimed.has(x))) {
      expect(await db.storage.getJob(id)).toMatchObject({
        status: JobStatus.Pending,
        attemptCount: 0,
      });
    }

    // The next window: 5 more, no earlier than one window after the first starts.
    const second = await waitFor('the next window', async () => {
      const c = await claimStarting(queue, 12);
      return c.rows.length > 0 ? c : undefined;
    });
    expect(second.rows).toHaveLength(MAX);
    const third = await waitFor('the window after', async () => {
      const c = await claimStarting(queue, 12);
      return c.rows.length > 0 ? c : undefined;
    });
    expect(third.rows).toHaveLength(2);
    const times = await startTimes(ids);
    expect(busiestWindow(times, PER_MS)).toBeLessThanOrEqual(MAX);
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(2 * PER_MS);
  });

  it('a limited queue is never buffered: a claim that would leave rows Fetched takes none of it; a stale "unlimited" hint skips it', async () => {
    const queue = uniqueQueue('rate.buffer');
    await db.storage.enqueueMany(Array.from({ length: 3 }, () => ({ queue })));
    await admin.setRateLimit(queue, { max: MAX, perMs: PER_MS });
    expect((await claim(db.storage, queue, 3)).rows).toHaveLength(0);
    expect((await claim(db.storage, queue, 3, newWorkerId(), { start: 1 })).rows).toHaveLength(0);
    expect(
      (await claim(db.storage, queue, 3, newWorkerId(), { start: 3, budgetedQueues: [] })).rows,
    ).toHaveLength(0);
    expect((await claimStarting(queue, 3)).rows).toHaveLength(3);
  });

  it('holds together with MaxWorkers: the smaller of the free budget and the allowance', async () => {
    const queue = uniqueQueue('rate.budget');
    await db.storage.enqueueMany(Array.from({ length: 10 }, () => ({ queue })));
    await admin.setMaxWorkers(queue, 2);
    await admin.setRateLimit(queue, { max: MAX, perMs: 60_000 });
    const a = await claimStarting(queue, 10);
    expect(a.rows).toHaveLength(2);
    expect((await claimStarting(queue, 10)).rows).toHaveLength(0);
    await db.storage.archiveSucceeded(a.leases.map((l) => ({ ...l, durationMs: 1 })));
    const b = await claimStarting(queue, 10);
    expect(b.rows).toHaveLength(2);
    await db.storage.archiveSucceeded(b.leases.map((l) => ({ ...l, durationMs: 1 })));
    // Budget free (2), allowance 1 left in this minute-long window.
    const c = await claimStarting(queue, 10);
    expect(c.rows).toHaveLength(1);
    await db.storage.archiveSucceeded(c.leases.map((l) => ({ ...l, durationMs: 1 })));
    const held = await claimStarting(queue, 10);
    expect(held.rows).toHaveLength(0);
    expect(held.rows.rateLimitWaitMs).toBeGreaterThan(50_000);

    // Removing the limit frees the queue at once (the budget still holds).
    const cleared = await admin.setRateLimit(queue, null);
    expect(cleared).toMatchObject({ rateLimit: null, maxWorkers: 2 });
    const d = await claimStarting(queue, 10);
    expect(d.rows).toHaveLength(2);
    expect(d.rows.rateLimitWaitMs).toBeUndefined();
  });

  it('concurrent claimers never overspend: every sliding window of their start times holds at most max', async () => {
    const queue = uniqueQueue('rate.many');
    const total = 3 * MAX;
    const ids = (
      await db.storage.enqueueMany(Array.from({ length: total }, () => ({ queue })))
    ).map((r) => r.id);
    await admin.setRateLimit(queue, { max: MAX, perMs: PER_MS });
    const storages = await openClaimers(db, 4, 2);
    try {
      let started = 0;
      const began = Date.now();
      // Every claimer claims as fast as it can until the queue is drained (bounded).
      await Promise.all(
        storages.map(async (s) => {
          while (started < total && Date.now() - began < 10_000) {
            const c = await retryUnavailable(() => claimStarting(queue, 3, s));
            started += c.rows.length;
          }
        }),
      );
      expect(started).toBe(total);
    } finally {
      await closeClaimers(db, storages);
    }
    const times = await startTimes(ids);
    expect(busiestWindow(times, PER_MS)).toBeLessThanOrEqual(MAX);
    // Three windows' worth: the last burst starts two windows after the first, not much later.
    const span = Math.max(...times) - Math.min(...times);
    expect(span).toBeGreaterThanOrEqual(2 * PER_MS);
    expect(span).toBeLessThan(2 * PER_MS + 1_500);
  });

  /** Writes a queue's rate-window state, its instants as offsets (ms) from the database's now. */
  async function writeRateState(
    queue: string,
    nowMs: number,
    state: {
      windowStart: number | null;
      windowLast: number | null;
      windowCount: number | null;
      prevLast: number | null;
      prevCount: number | null;
    },
  ): Promise<void> {
    const at = (offset: number | null) =>
      offset === null ? null : db.dialect === 'sqlite' ? nowMs + offset : new Date(nowMs + offset);
    const c = (name: string) => db.column(name);
    await db.sql(
      `UPDATE ${db.table('queues')} SET ${c('rate_window_start')} = ${db.param(1)}, ` +
        `${c('rate_window_last')} = ${db.param(2)}, ${c('rate_window_count')} = ${db.param(3)}, ` +
        `${c('rate_prev_last')} = ${db.param(4)}, ${c('rate_prev_count')} = ${db.param(5)} ` +
        `WHERE ${c('name')} = ${db.param(6)}`,
      [
        at(state.windowStart),
        at(state.windowLast),
        state.windowCount,
        at(state.prevLast),
        state.prevCount,
        queue,
      ],
    );
  }

  it('a trickle across a window edge: the previous window still counts while its last start is recent', async () => {
    // One start, a pause, four more late in the window, the window's edge passes, a claim: the
    // five recent starts leave no allowance, not a fresh five. States are written, not waited
    // for, with a one-minute window so that no edge is near while the test runs.
    const PER = 60_000;
    const queue = uniqueQueue('rate.trickle');
    await db.storage.enqueueMany(Array.from({ length: 12 }, () => ({ queue })));
    await admin.setRateLimit(queue, { max: MAX, perMs: PER });
    // The window opened 65 s ago (it has rolled over), its last start 10 s ago.
    await writeRateState(queue, (await db.storage.now()).getTime(), {
      windowStart: -65_000,
      windowLast: -10_000,
      windowCount: MAX,
      prevLast: null,
      prevCount: null,
    });
    expect((await claimStarting(queue, 12)).rows).toHaveLength(0);

    // The next window opened 10 s ago with one start; the previous one's four ended 20 s ago:
    // one more start would make six within one window.
    await writeRateState(queue, (await db.storage.now()).getTime(), {
      windowStart: -10_000,
      windowLast: -10_000,
      windowCount: 1,
      prevLast: -20_000,
      prevCount: MAX - 1,
    });
    expect((await claimStarting(queue, 12)).rows).toHaveLength(0);

    // Once the previous window's last start is a window old, only the current one counts.
    await writeRateState(queue, (await db.storage.now()).getTime(), {
      windowStart: -10_000,
      windowLast: -10_000,
      windowCount: 1,
      prevLast: -70_000,
      prevCount: MAX - 1,
    });
    expect((await claimStarting(queue, 12)).rows).toHaveLength(MAX - 1);
  });

  it('the claim’s allowance is the shared rule’s, over random window states', async () => {
    const PER = 60_000;
    const queue = uniqueQueue('rate.rule');
    await db.storage.enqueueMany(Array.from({ length: 10 }, () => ({ queue })));
    // Offsets (s) at least 5 s from every edge the rule compares (now - 60 s, now - 120 s).
    const offsets = [-170_000, -130_000, -110_000, -75_000, -45_000, -25_000, -5_000, null];
    // mulberry32: a small seeded generator whose low bits are as random as its high ones.
    let seed = 0x2f6b1d3a;
    const random = (n: number): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4_294_967_296) * n);
    };
    for (let round = 0; round < 60; round++) {
      const max = 1 + random(8);
      await admin.setRateLimit(queue, { max, perMs: PER });
      const pick = () => offsets[random(offsets.length)];
      const count = () => (random(4) === 0 ? null : random(9));
      const start = pick();
      const state = {
        windowStart: start,
        windowLast: start === null ? null : Math.min(-1_000, start + 1_000 + random(3) * 10_000),
        windowCount: count(),
        prevLast: pick(),
        prevCount: count(),
      };
      const now = (await db.storage.now()).getTime();
      await writeRateState(queue, now, state);
      const ms = (o: number | null) => (o === null ? null : now + o);
      const expected = rateAllowance(
        {
          max,
          perMs: PER,
          windowStartMs: ms(state.windowStart),
          windowLastMs: ms(state.windowLast),
          windowCount: state.windowCount,
          prevLastMs: ms(state.prevLast),
          prevCount: state.prevCount,
        },
        now,
      );
      const c = await claimStarting(queue, 10);
      expect({ round, state, max, started: c.rows.length }).toEqual({
        round,
        state,
        max,
        started: Math.min(expected, 10),
      });
      // Back to Pending, attempts refunded, for the next round.
      if (c.leases.length > 0) await db.storage.unstart(c.leases);
    }
  });

  it('refuses a bad limit with a typed validation error, and audits a change like other controls', async () => {
    const queue = uniqueQueue('rate.bad');
    for (const rateLimit of [
      { max: 0, perMs: 1_000 },
      { max: 1.5, perMs: 1_000 },
      { max: 10, perMs: 0 },
      { max: 10, perMs: 86_400_001 },
      { max: 1_000_001, perMs: 1_000 },
    ]) {
      await expectValidationError(admin.setRateLimit(queue, rateLimit), 'patch.rateLimit');
    }
    await expectValidationError(
      admin.setRateLimit(queue, undefined as unknown as null),
      'patch.rateLimit',
    );
    await admin.setRateLimit(queue, { max: 3, perMs: 2_000 }, 'ops@example.com');
    const [entry] = (await admin.getAuditLog({ limit: 1 })).items;
    expect(entry).toMatchObject({
      actor: 'ops@example.com',
      action: 'queue.update',
      target: queue,
      details: { rateLimit: { max: 3, perMs: 2_000 } },
    });
  });
});
