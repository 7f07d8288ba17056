import { RecurringLoop } from '../../libs/chokaq/src/runtime/recurring.loop';
import { CronSchedule } from '../../libs/chokaq/src/runtime/cron-schedule';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { RecordingLogger } from './support/silent-logger';
import { openTestDatabase } from '../support/test-database';

describe('RecurringLoop on SQLite', () => {
  let storage: JobStorage;
  let cleanup: () => Promise<void>;
  const logger = new RecordingLogger();
  beforeEach(async () => {
    const db = await openTestDatabase('sqlite');
    storage = db.storage;
    // The storage first, so an error closing it fails the test; then the file goes.
    cleanup = async () => {
      await storage.close();
      await db.close();
    };
  });
  afterEach(() => cleanup());

  const spec = {
    name: 'report',
    cron: '* * * * * *',
    queue: 'reports',
    payload: { kind: 'daily' },
  };

  it('registers the definition with the next slot from the database clock', async () => {
    const loop = new RecurringLoop(storage, [spec], logger);
    const before = await storage.now();
    await loop.tick();
    const [record] = await storage.getRecurringJobs();
    expect(record).toMatchObject({
      name: 'report',
      queue: 'reports',
      type: 'reports',
      misfirePolicy: 'skip',
    });
    expect(record.nextSlotUtc.getTime()).toBeGreaterThan(before.getTime());
    expect(record.nextSlotUtc.getTime()).toBeLessThanOrEqual(before.getTime() + 2_000);
  });

  it('enqueues a due slot once across two processes (compare-and-set)', async () => {
    // A yearly cron with a slot due now: the next slot is far away, so the race is only on this one.
    const yearly = {
      name: 'yearly',
      cron: '0 0 1 1 *',
      queue: 'reports',
      payload: { kind: 'yearly' },
    };
    const now = await storage.now();
    await storage.upsertRecurringJob({
      ...yearly,
      timeZone: 'UTC',
      type: 'reports',
      misfirePolicy: 'skip',
      nextSlotUtc: new Date(now.getTime() - 1_000),
    });
    const a = new RecurringLoop(storage, [yearly], logger);
    const b = new RecurringLoop(storage, [yearly], logger);
    await Promise.all([a.tick(), b.tick()]);
    expect(a.enqueuedCount + b.enqueuedCount).toBe(1);
    const page = await storage.listActive({ filter: { queue: 'reports' } });
    expect(page.items).toHaveLength(1);
    expect((await storage.getJob(page.items[0].id))?.payload).toEqual({ kind: 'yearly' });
    const [record] = await storage.getRecurringJobs();
    expect(record.nextSlotUtc.getTime()).toBeGreaterThan(now.getTime());
  });

  async function withMissedSlots(misfire: 'skip' | 'none') {
    const now = await storage.now();
    const cron = '*/1 * * * *';
    await storage.upsertRecurringJob({
      name: 'missed',
      cron,
      timeZone: 'UTC',
      queue: 'm',
      type: 'm',
      payload: {},
      misfirePolicy: misfire,
      nextSlotUtc: new CronSchedule(cron).next(new Date(now.getTime() - 10 * 60_000)),
    });
    // Tolerance 0: otherwise a run within 5 s after a minute boundary counts that slot as on time.
    const loop = new RecurringLoop(
      storage,
      [{ name: 'missed', cron, queue: 'm', misfire }],
      logger,
      { onTimeToleranceMs: 0 },
    );
    await loop.tick();
    const [record] = await storage.getRecurringJobs();
    expect(record.nextSlotUtc.getTime()).toBeGreaterThan(now.getTime());
    return (await storage.listActive({ filter: { queue: 'm' } })).items.length;
  }

  it("misfire 'skip' runs the latest missed slot once", async () => {
    expect(await withMissedSlots('skip')).toBe(1);
  });

  it("misfire 'none' runs no missed slot and just advances", async () => {
    expect(await withMissedSlots('none')).toBe(0);
  });

  it('logs an invalid cron once and does not run it', async () => {
    const log = new RecordingLogger();
    const loop = new RecurringLoop(storage, [{ name: 'bad', cron: 'nope', queue: 'x' }], log);
    await loop.tick();
    await loop.tick();
    expect(log.count('error', "invalid cron 'nope'")).toBe(1);
    expect(await storage.getRecurringJobs()).toEqual([]);
  });
});
