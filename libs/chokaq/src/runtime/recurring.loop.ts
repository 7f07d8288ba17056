import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { toError } from '../common/error-text';
import { logEvent } from '../common/log-events';
import type { HandlerLookup } from '../interfaces/handler.interface';
import type { NewJob } from '../interfaces/job.interface';
import type { RecurringJobRecord, RecurringJobSpec } from '../interfaces/recurring-job.interface';
import type { ChokaQMetrics } from '../observability/chokaq-metrics';
import type { JobStore } from '../storage/job-storage';
import { MAX_TIMER_MS } from '../validation/limits';
import { CronSchedule } from './cron-schedule';
import { Loop } from './loop';

/**
 * Where the recurring loop lists the timer of each recurring job it runs: in a Nest app, the
 * application's `SchedulerRegistry` (`@nestjs/schedule`), through an adapter the Nest layer passes
 * in, so the runtime stays free of Nest. The loop owns the timers (arms and clears them); the
 * registry only lists them.
 */
export interface RecurringTimerRegistry {
  /** Lists `timer` as the timer of recurring job `name`, replacing the one listed for it before. */
  set(name: string, timer: NodeJS.Timeout): void;
  /** Stops listing a timer for recurring job `name`; a no-op when none is listed. */
  delete(name: string): void;
}

/** Tuning of the recurring loop. */
export interface RecurringLoopOptions {
  /**
   * How often the definitions are re-read, so definitions changed in the database (re-scheduled,
   * paused, removed, added back by another process) are followed, and a slot whose timer was lost
   * still runs. Default 30,000; the worker passes its `pollIntervalMs`.
   */
  syncIntervalMs?: number;
  /**
   * With misfire `none`, a slot this late still counts as "on time" (the loop's own scheduling
   * delay, a short GC pause). Later than this it is a missed slot and is not run. Default 5,000.
   */
  onTimeToleranceMs?: number;
  /** Where each job's timer is listed. Default: nowhere (the timers still run). */
  timers?: RecurringTimerRegistry;
  /**
   * This process's handlers. With them, the loop also runs the recurring jobs upserted at run time
   * (source `runtime`) whose (queue, type) a handler here resolves, and it runs even when this
   * process declares no `@RecurringJob`. Default: none (only the declared jobs run).
   */
  handlers?: Pick<HandlerLookup, 'resolve'>;
  /** Where the jobs of claimed slots are counted (`chokaq.jobs.enqueued`). Default: nowhere. */
  metrics?: Pick<ChokaQMetrics, 'enqueued'>;
}

/** A job's timer fires this long after the database clock reaches its slot, so the slot is surely due. */
const SLOT_MARGIN_MS = 5;
/** The shortest delay of a job's timer: a slot that stays due (another process is claiming it) is re-read at this pace. */
const MIN_TIMER_MS = 20;

/** The timer armed for one recurring job's next slot. */
interface ArmedSlot {
  /** The slot it was armed for (epoch ms, database clock). */
  slot: number;
  timer: NodeJS.Timeout;
  /** It fired, so it must be re-armed even if the slot did not move. */
  fired: boolean;
}

/**
 * Enqueues recurring jobs (SPEC §4 "Recurring jobs"). At start every spec is upserted as a durable
 * `RecurringJobs` row whose `NextSlotUtc` is the next cron slot from the database clock. Then, when
 * a row's `NextSlotUtc` is due, `claimRecurringSlot` enqueues the slot's job and advances
 * `NextSlotUtc` with a compare-and-set in one transaction — so however many processes run this
 * loop, each slot is enqueued once. The timers below only decide when this process tries; the
 * database decides who wins.
 *
 * Timers: one sync loop (a `setTimeout` chain, so passes never overlap) re-reads the rows every
 * `syncIntervalMs`, claims due slots, and keeps one Node timer per recurring job armed for its next
 * slot, listed in {@link RecurringTimerRegistry} under the job's name. A job's timer only wakes the
 * sync loop, which re-reads the rows before claiming: the payload and cron enqueued are the row's
 * at that moment, not a copy from the last pass.
 *
 * Slots are computed from the row (its cron and zone), not from this process's spec, so during a
 * rolling deploy with a changed expression every process agrees with the last `upsert`.
 *
 * Which rows run here: the jobs this process declares (source `decorator`; each start re-asserts
 * their definition, so the decorator's cron and payload win), and the jobs upserted at run time
 * (source `runtime`, kept until removed) whose (queue, type) a handler of this process resolves.
 * Several processes may run one row: the compare-and-set still enqueues each slot once.
 *
 * Misfires (slots missed while no process ran): `skip` enqueues the latest missed slot once;
 * `none` enqueues nothing for missed slots and just advances (a slot within `onTimeToleranceMs` is
 * on time, not missed).
 */
export class RecurringLoop {
  private readonly loop: Loop;
  private readonly names: Set<string>;
  private readonly unregistered: Map<string, RecurringJobSpec>;
  private readonly schedules = new Map<string, CronSchedule | null>();
  private readonly armed = new Map<string, ArmedSlot>();
  private readonly syncIntervalMs: number;
  private readonly toleranceMs: number;
  private readonly timers: RecurringTimerRegistry | undefined;
  private readonly handlers: Pick<HandlerLookup, 'resolve'> | undefined;
  private readonly metrics: Pick<ChokaQMetrics, 'enqueued'> | undefined;
  private enqueued = 0;

  constructor(
    private readonly storage: Pick<
      JobStore,
      'now' | 'upsertRecurringJob' | 'getRecurringJobs' | 'claimRecurringSlot'
    >,
    specs: readonly RecurringJobSpec[],
    private readonly logger: ChokaQLogger,
    options: RecurringLoopOptions = {},
  ) {
    this.names = new Set(specs.map((s) => s.name));
    this.unregistered = new Map(specs.map((s) => [s.name, s]));
    this.syncIntervalMs = options.syncIntervalMs ?? 30_000;
    this.toleranceMs = options.onTimeToleranceMs ?? 5_000;
    this.timers = options.timers;
    this.handlers = options.handlers;
    this.metrics = options.metrics;
    this.loop = new Loop({
      name: 'ChokaQ recurring',
      logger,
      tick: () => this.tick(),
      intervalMs: () => this.syncIntervalMs,
      errorBackoff: { baseMs: 500, maxMs: 30_000 },
    });
  }

  /** Jobs enqueued by this process's loop. */
  get enqueuedCount(): number {
    return this.enqueued;
  }

  /** The recurring jobs whose timer is armed now, by name (for tests and diagnostics). */
  get armedNames(): string[] {
    return [...this.armed.keys()];
  }

  /**
   * Starts the sync loop when this process may run a recurring job: it declares one, or it has
   * handlers (a job upserted at run time may target them).
   */
  start(): void {
    if (this.names.size > 0 || this.handlers) this.loop.start();
  }

  /** Stops the sync loop, then clears every job's timer and its listing. Idempotent. */
  async stop(): Promise<void> {
    await this.loop.stop();
    // After the loop settled: a pass in flight could otherwise arm a timer after this.
    for (const name of [...this.armed.keys()]) this.disarm(name);
  }

  /**
   * One pass: registers what is not yet registered, enqueues due slots, re-arms each job's timer
   * for its next slot. Resolves to the delay before the next pass: the sync interval.
   */
  async tick(): Promise<number> {
    // Once the declared jobs are registered, the rows are read first: a process that runs none of
    // them (the common case of a worker with handlers and no recurring job) stops at one read.
    let records = this.unregistered.size === 0 ? await this.storage.getRecurringJobs() : undefined;
    if (records && !records.some((record) => this.runsHere(record))) {
      for (const name of [...this.armed.keys()]) this.disarm(name);
      return this.syncIntervalMs;
    }
    const now = await this.storage.now();
    // The local clock when the database clock read `now`: timers run on the local clock.
    const readAt = Date.now();
    await this.register(now);
    records ??= await this.storage.getRecurringJobs();
    const nextSlots = new Map<string, Date>();
    for (const record of records) {
      if (!this.runsHere(record)) continue;
      const schedule = this.scheduleOf(record);
      if (!schedule) continue;
      let nextSlot = record.nextSlotUtc;
      if (nextSlot.getTime() <= now.getTime()) {
        nextSlot = (await this.fire(record, schedule, now)) ?? nextSlot;
      }
      nextSlots.set(record.name, nextSlot);
    }
    this.arm(nextSlots, now, readAt);
    return this.syncIntervalMs;
  }

  /**
   * Whether this process runs `record`'s slots: a job not paused, and declared here or upserted at
   * run time for a (queue, type) a handler here resolves. A decorator's row that no process
   * declares any more (its decorator was deleted) is left alone rather than run forever.
   */
  private runsHere(record: RecurringJobRecord): boolean {
    if (record.isPaused) return false;
    if (this.names.has(record.name)) return true;
    return (
      record.source === 'runtime' && this.handlers?.resolve(record.queue, record.type) !== undefined
    );
  }

  /**
   * Makes the armed timers match `nextSlots`: a timer for each job, armed for its next slot (a
   * timer whose slot moved or that fired is replaced), and none for a job that is gone, paused or
   * invalid. The delay is measured on the database clock (`now`, read at local time `readAt`).
   */
  private arm(nextSlots: Map<string, Date>, now: Date, readAt: number): void {
    for (const name of [...this.armed.keys()]) if (!nextSlots.has(name)) this.disarm(name);
    for (const [name, nextSlot] of nextSlots) {
      const armed = this.armed.get(name);
      const slot = nextSlot.getTime();
      if (armed && armed.slot === slot && !armed.fired) continue;
      // Capped: a yearly slot is further away than a timer can wait; it is re-armed when it fires.
      const dueAt = readAt + (slot - now.getTime()) + SLOT_MARGIN_MS;
      const delay = Math.min(MAX_TIMER_MS, Math.max(MIN_TIMER_MS, dueAt - Date.now()));
      const timer: NodeJS.Timeout = setTimeout(() => this.onTimer(name, timer), delay);
      // Like every loop but the fetcher's: a recurring schedule alone does not keep a process alive.
      timer.unref();
      if (armed) clearTimeout(armed.timer);
      this.armed.set(name, { slot, timer, fired: false });
      this.timers?.set(name, timer);
    }
  }

  private disarm(name: string): void {
    const armed = this.armed.get(name);
    if (!armed) return;
    clearTimeout(armed.timer);
    this.armed.delete(name);
    this.timers?.delete(name);
  }

  /** A job's slot is due: the sync loop re-reads the rows and claims it (or sees another process did). */
  private onTimer(name: string, timer: NodeJS.Timeout): void {
    const armed = this.armed.get(name);
    if (armed?.timer === timer) armed.fired = true;
    this.loop.nudge();
  }

  private async register(now: Date): Promise<void> {
    for (const [name, spec] of this.unregistered) {
      const timeZone = spec.timeZone ?? 'UTC';
      const schedule = this.scheduleOf({ name, cron: spec.cron, timeZone });
      if (!schedule) {
        this.unregistered.delete(name);
        continue;
      }
      await this.storage.upsertRecurringJob({
        name,
        cron: spec.cron,
        timeZone,
        queue: spec.queue,
        type: spec.type ?? spec.queue,
        payload: spec.payload ?? {},
        misfirePolicy: spec.misfire ?? 'skip',
        nextSlotUtc: schedule.next(now),
        source: 'decorator',
      });
      this.unregistered.delete(name);
    }
  }

  /** Claims the due slot of `record`; returns the new `NextSlotUtc`, or undefined if another process took it. */
  private async fire(
    record: RecurringJobRecord,
    schedule: CronSchedule,
    now: Date,
  ): Promise<Date | undefined> {
    const due = record.nextSlotUtc;
    let latest = schedule.latestAtOrBefore(now) ?? due;
    if (latest.getTime() < due.getTime()) latest = due;
    const nextSlot = schedule.next(latest);
    const missed = now.getTime() - latest.getTime() > this.toleranceMs;
    const run = record.misfirePolicy === 'skip' || !missed;
    const job: NewJob | null = run
      ? {
          queue: record.queue,
          type: record.type,
          payload: record.payload,
          // A second guard besides the compare-and-set: one hot job per slot.
          idempotencyKey: `recurring:${record.name}:${latest.toISOString()}`.slice(0, 255),
          createdBy: 'chokaq:recurring',
        }
      : null;
    const result = await this.storage.claimRecurringSlot(record.name, due, nextSlot, job);
    if (result === null) return undefined;
    const slot = latest.toISOString();
    if (job) {
      this.enqueued++;
      if (result.created) this.metrics?.enqueued(record.queue, record.type);
      logEvent(
        this.logger,
        'RecurringSlotEnqueued',
        `Recurring job ${record.name}: slot ${slot} enqueued as ${result.id}`,
        { recurringJob: record.name, slot, jobId: result.id },
      );
    } else {
      logEvent(
        this.logger,
        'RecurringSlotsMissed',
        `Recurring job ${record.name}: missed slot(s) up to ${slot} not run (misfire 'none')`,
        { recurringJob: record.name, upTo: slot },
      );
    }
    return nextSlot;
  }

  private scheduleOf(record: {
    name: string;
    cron: string;
    timeZone: string;
  }): CronSchedule | null {
    const key = `${record.cron}\u0000${record.timeZone}`;
    if (!this.schedules.has(key)) {
      try {
        this.schedules.set(key, new CronSchedule(record.cron, record.timeZone));
      } catch (error) {
        const message = toError(error).message;
        logEvent(
          this.logger,
          'RecurringCronInvalid',
          `Recurring job ${record.name}: invalid cron '${record.cron}' or time zone '${record.timeZone}': ` +
            `${message}. It will not run.`,
          {
            recurringJob: record.name,
            cron: record.cron,
            timeZone: record.timeZone,
            error: message,
          },
        );
        this.schedules.set(key, null);
      }
    }
    return this.schedules.get(key) ?? null;
  }
}
