import type { EnqueueResult, NewJob } from '../interfaces/job.interface';
import type {
  RecurringJobDefinition,
  RecurringJobRecord,
} from '../interfaces/recurring-job.interface';
import { RecurringLoop, type RecurringTimerRegistry } from './recurring.loop';

const silent = { log: () => undefined, error: () => undefined, warn: () => undefined };

/** The recurring rows of a database whose clock runs `offsetMs` ahead of this process's. */
class RecurringRows {
  readonly rows = new Map<string, RecurringJobRecord>();
  readonly claims: Array<{ name: string; slot: string }> = [];
  constructor(private readonly offsetMs = 0) {}

  async now(): Promise<Date> {
    return new Date(Date.now() + this.offsetMs);
  }
  async upsertRecurringJob(definition: RecurringJobDefinition): Promise<void> {
    const previous = this.rows.get(definition.name);
    const same = previous?.cron === definition.cron && previous.timeZone === definition.timeZone;
    this.rows.set(definition.name, {
      ...definition,
      nextSlotUtc: same ? previous.nextSlotUtc : definition.nextSlotUtc,
      lastSlotUtc: previous?.lastSlotUtc ?? null,
      isPaused: previous?.isPaused ?? false,
      source: definition.source ?? 'decorator',
      lastJobId: previous?.lastJobId ?? null,
    });
  }
  reads = 0;
  async getRecurringJobs(): Promise<RecurringJobRecord[]> {
    this.reads++;
    return [...this.rows.values()].map((row) => ({ ...row }));
  }
  async claimRecurringSlot(
    name: string,
    slot: Date,
    next: Date,
    _job: NewJob | null,
  ): Promise<EnqueueResult | null> {
    const row = this.rows.get(name);
    if (!row || row.nextSlotUtc.getTime() !== slot.getTime()) return null;
    row.lastSlotUtc = slot;
    row.nextSlotUtc = next;
    this.claims.push({ name, slot: slot.toISOString() });
    return { id: `job-${this.claims.length}`, created: true };
  }
}

/** A registry that only records what is listed. */
class ListedTimers implements RecurringTimerRegistry {
  readonly listed = new Map<string, NodeJS.Timeout>();
  set(name: string, timer: NodeJS.Timeout): void {
    this.listed.set(name, timer);
  }
  delete(name: string): void {
    this.listed.delete(name);
  }
}

describe('RecurringLoop timers', () => {
  beforeEach(() => jest.useFakeTimers({ now: new Date('2030-01-01T00:00:30.000Z') }));
  afterEach(() => jest.useRealTimers());

  it("fires a job's slot when the database clock reaches it, through the timer it lists", async () => {
    // The database clock is 10 s ahead: its next minute comes 20 s from now, this process's in 30 s.
    const rows = new RecurringRows(10_000);
    const timers = new ListedTimers();
    const loop = new RecurringLoop(
      rows,
      [{ name: 'minutely', cron: '* * * * *', queue: 'q' }],
      silent,
      {
        syncIntervalMs: 3_600_000,
        timers,
      },
    );
    loop.start();
    await jest.advanceTimersByTimeAsync(0);
    expect([...timers.listed.keys()]).toEqual(['minutely']);

    await jest.advanceTimersByTimeAsync(19_000);
    expect(rows.claims).toEqual([]);
    await jest.advanceTimersByTimeAsync(1_100);
    expect(rows.claims).toEqual([{ name: 'minutely', slot: '2030-01-01T00:01:00.000Z' }]);
    // Re-armed for the following slot, still listed.
    expect([...timers.listed.keys()]).toEqual(['minutely']);

    await loop.stop();
  });

  it('follows the rows: paused, removed and invalid jobs are unlisted, moved slots re-armed', async () => {
    const rows = new RecurringRows();
    const timers = new ListedTimers();
    const specs = [
      { name: 'a', cron: '0 3 * * *', queue: 'q' },
      { name: 'b', cron: '0 0 1 1 *', queue: 'q' },
    ];
    const loop = new RecurringLoop(rows, specs, silent, { timers });
    await loop.tick();
    const now = await rows.now();
    // A row another process declared is not this process's to run.
    await rows.upsertRecurringJob({
      ...rows.rows.get('a')!,
      name: 'elsewhere',
      nextSlotUtc: new Date(now.getTime() + 60_000),
    });
    await loop.tick();
    expect([...timers.listed.keys()].sort()).toEqual(['a', 'b']);

    const unchanged = timers.listed.get('b');
    await loop.tick();
    expect(timers.listed.get('b')).toBe(unchanged);

    rows.rows.get('a')!.isPaused = true;
    await loop.tick();
    expect([...timers.listed.keys()]).toEqual(['b']);

    const b = rows.rows.get('b')!;
    rows.rows.delete('b');
    await loop.tick();
    expect([...timers.listed.keys()]).toEqual([]);

    await rows.upsertRecurringJob(b);
    rows.rows.get('a')!.isPaused = false;
    await loop.tick();
    expect([...timers.listed.keys()].sort()).toEqual(['a', 'b']);

    const before = timers.listed.get('b');
    await rows.upsertRecurringJob({
      ...b,
      cron: '0 0 1 7 *',
      nextSlotUtc: new Date(now.getTime() + 3_600_000),
    });
    await loop.tick();
    expect(timers.listed.get('b')).not.toBe(before);

    rows.rows.get('b')!.cron = 'not a cron';
    await loop.tick();
    expect([...timers.listed.keys()]).toEqual(['a']);

    await loop.stop();
  });

  it('runs a job upserted at run time where a handler resolves its (queue, type), with no job declared', async () => {
    const rows = new RecurringRows();
    const now = await rows.now();
    await rows.upsertRecurringJob({
      name: 'runtime.hourly',
      cron: '0 * * * *',
      timeZone: 'UTC',
      queue: 'reports',
      type: 'hourly.v1',
      payload: {},
      misfirePolicy: 'skip',
      nextSlotUtc: new Date(now.getTime() - 1_000),
      source: 'runtime',
    });
    // The same row as a decorator's that no process here declares: left alone.
    await rows.upsertRecurringJob({
      ...rows.rows.get('runtime.hourly')!,
      name: 'declared.elsewhere',
      source: 'decorator',
    });
    const resolve = (queue: string, type: string) =>
      queue === 'reports' && type === 'hourly.v1' ? ({} as never) : undefined;

    const without = new RecurringLoop(rows, [], silent);
    without.start();
    await jest.advanceTimersByTimeAsync(0);
    // Declaring nothing and without handlers the loop does not even start.
    expect(rows.reads).toBe(0);
    await without.stop();

    const loop = new RecurringLoop(rows, [], silent, { handlers: { resolve } });
    await loop.tick();
    expect(rows.claims).toEqual([
      { name: 'runtime.hourly', slot: new Date(now.getTime() - 1_000).toISOString() },
    ]);
    expect(loop.armedNames).toEqual(['runtime.hourly']);

    // Paused: unlisted, and a tick with nothing to run is one read (no clock read).
    rows.rows.get('runtime.hourly')!.isPaused = true;
    const spy = jest.spyOn(rows, 'now');
    await loop.tick();
    expect(spy).not.toHaveBeenCalled();
    expect(loop.armedNames).toEqual([]);

    // A handler that does not resolve the row's type: not run here.
    rows.rows.get('runtime.hourly')!.isPaused = false;
    const other = new RecurringLoop(rows, [], silent, { handlers: { resolve: () => undefined } });
    await other.tick();
    expect(other.armedNames).toEqual([]);
    await other.stop();
    await loop.stop();
  });

  it('stop() clears every timer and its listing', async () => {
    const rows = new RecurringRows();
    const timers = new ListedTimers();
    const loop = new RecurringLoop(
      rows,
      [
        { name: 'a', cron: '0 3 * * *', queue: 'q' },
        { name: 'b', cron: '0 0 1 1 *', queue: 'q' },
      ],
      silent,
      { timers },
    );
    loop.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(timers.listed.size).toBe(2);
    await loop.stop();
    expect(timers.listed.size).toBe(0);
    expect(loop.armedNames).toEqual([]);
    expect(jest.getTimerCount()).toBe(0);
  });
});
