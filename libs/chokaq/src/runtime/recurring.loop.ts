import type { LoggerService } from '@nestjs/common';
import type { JobStorage, NewJob, RecurringJobRecord } from '../storage/job-storage';
import { toError } from '../storage/shared/text';
import { CronSchedule } from './cron-schedule';
import { Loop } from './loop';
import type { RecurringJobSpec } from './recurring-job-spec';

/** Tuning of the recurring loop. */
export interface RecurringLoopOptions {
  /** Longest sleep between checks, so changes made by other processes are seen. Default 30,000. */
  maxSleepMs?: number;
  /**
   * With misfire `none`, a slot this late still counts as "on time" (the loop's own scheduling
   * delay, a short GC pause). Later than this it is a missed slot and is not run. Default 5,000.
   */
  onTimeToleranceMs?: number;
}

/**
 * Enqueues recurring jobs (SPEC §4 "Recurring jobs"). At start every spec is upserted as a durable
 * `RecurringJobs` row whose `NextSlotUtc` is the next cron slot from the database clock. Then, when
 * a row's `NextSlotUtc` is due, `claimRecurringSlot` enqueues the slot's job and advances
 * `NextSlotUtc` with a compare-and-set in one transaction — so however many processes run this
 * loop, each slot is enqueued once.
 *
 * Slots are computed from the row (its cron and zone), not from this process's spec, so during a
 * rolling deploy with a changed expression every process agrees with the last `upsert`.
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
  private readonly maxSleepMs: number;
  private readonly toleranceMs: number;
  private enqueued = 0;

  constructor(
    private readonly storage: Pick<
      JobStorage,
      'now' | 'upsertRecurringJob' | 'getRecurringJobs' | 'claimRecurringSlot'
    >,
    specs: readonly RecurringJobSpec[],
    private readonly logger: LoggerService,
    options: RecurringLoopOptions = {},
  ) {
    this.names = new Set(specs.map((s) => s.name));
    this.unregistered = new Map(specs.map((s) => [s.name, s]));
    this.maxSleepMs = options.maxSleepMs ?? 30_000;
    this.toleranceMs = options.onTimeToleranceMs ?? 5_000;
    this.loop = new Loop({
      name: 'ChokaQ recurring',
      logger,
      tick: () => this.tick(),
      intervalMs: () => this.maxSleepMs,
      errorBackoff: { baseMs: 500, maxMs: 30_000 },
    });
  }

  /** Jobs enqueued by this process's loop. */
  get enqueuedCount(): number {
    return this.enqueued;
  }

  start(): void {
    if (this.names.size > 0) this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass: registers what is not yet registered, enqueues due slots. Returns the sleep in ms. */
  async tick(): Promise<number> {
    const now = await this.storage.now();
    await this.register(now);
    const records = await this.storage.getRecurringJobs();
    let sleep = this.maxSleepMs;
    for (const record of records) {
      if (!this.names.has(record.name) || record.isPaused) continue;
      const schedule = this.scheduleOf(record);
      if (!schedule) continue;
      let nextSlot = record.nextSlotUtc;
      if (nextSlot.getTime() <= now.getTime()) {
        nextSlot = (await this.fire(record, schedule, now)) ?? nextSlot;
      }
      sleep = Math.min(sleep, nextSlot.getTime() - now.getTime());
    }
    // A few ms past the slot so the database clock has surely reached it.
    return Math.min(this.maxSleepMs, Math.max(20, sleep + 5));
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
    if (job) {
      this.enqueued++;
      this.logger.log(
        `Recurring job ${record.name}: slot ${latest.toISOString()} enqueued as ${result.id}`,
      );
    } else {
      this.logger.log(
        `Recurring job ${record.name}: missed slot(s) up to ${latest.toISOString()} not run (misfire 'none')`,
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
        this.logger.error(
          `Recurring job ${record.name}: invalid cron '${record.cron}' or time zone '${record.timeZone}': ` +
            `${toError(error).message}. It will not run.`,
        );
        this.schedules.set(key, null);
      }
    }
    return this.schedules.get(key) ?? null;
  }
}
