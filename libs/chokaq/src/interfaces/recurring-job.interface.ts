import type { JobStatus } from './job-status.enum';
import type { Pillar } from './job-view.interface';

/** How missed slots are treated: `skip` runs the latest missed slot once, `none` runs none. @publicApi */
export type MisfirePolicy = 'skip' | 'none';

/**
 * Where a recurring job's definition comes from: `decorator` (a `@RecurringJob`, re-asserted by
 * each process that declares it when it starts) or `runtime` (`ChokaQAdmin.upsertRecurringJob`,
 * kept in the database until removed). @publicApi
 */
export type RecurringJobSource = 'decorator' | 'runtime';

/** A recurring job definition as stored. @publicApi */
export interface RecurringJobDefinition {
  name: string;
  cron: string;
  timeZone: string;
  queue: string;
  type: string;
  payload: unknown;
  misfirePolicy: MisfirePolicy;
  /** The first slot to enqueue (computed by the caller from the cron expression). */
  nextSlotUtc: Date;
  /** Where the definition comes from. Default `decorator`. */
  source?: RecurringJobSource;
}

/** A `RecurringJobs` row. @publicApi */
export interface RecurringJobRecord extends RecurringJobDefinition {
  lastSlotUtc: Date | null;
  isPaused: boolean;
  source: RecurringJobSource;
  /** The job the last claimed slot or trigger enqueued; null before the first. */
  lastJobId: string | null;
}

/** Where the last run of a recurring job is now, as `ChokaQAdmin.getRecurringJobs` reads it. @publicApi */
export interface RecurringLastRun {
  id: string;
  pillar: Pillar;
  status: JobStatus;
}

/**
 * A recurring job as `ChokaQAdmin.getRecurringJobs` shows it: the stored row and the outcome of
 * its last run (null before the first run, or once retention removed that job). @publicApi
 */
export interface RecurringJobView extends RecurringJobRecord {
  lastRun: RecurringLastRun | null;
}

/**
 * A recurring job as declared by `@RecurringJob(name, cron, options)`, or in data through
 * `ChokaQAdmin.upsertRecurringJob(spec)`: every slot of
 * the cron expression (in its time zone) enqueues one job, once across all processes.
 *
 * @publicApi
 */
export interface RecurringJobSpec {
  /** Unique name; the durable record's key. */
  name: string;
  /** Cron expression (5 or 6 fields, as `@nestjs/schedule` accepts). */
  cron: string;
  /** IANA time zone of the expression. Default `UTC`. */
  timeZone?: string;
  /** Queue of the enqueued jobs. */
  queue: string;
  /** Type of the enqueued jobs. Default: the queue name. */
  type?: string;
  /** Payload of every enqueued job. Default `{}`. */
  payload?: unknown;
  /** Missed slots: `skip` runs the latest missed slot once (default), `none` runs none. */
  misfire?: MisfirePolicy;
}

/** Options of `@RecurringJob`. @publicApi */
export interface RecurringJobOptions {
  /**
   * Queue of the enqueued jobs. Required on a class; on a method that is also a `@JobHandler`
   * it defaults to the handler's queue.
   */
  queue?: string;
  /** Type of the enqueued jobs. Default: the method's handler type, else the queue name. */
  type?: string;
  /** Payload of every enqueued job. Default `{}`. */
  payload?: unknown;
  /** IANA time zone of the cron expression. Default `UTC`. */
  timeZone?: string;
  /** Missed slots: `skip` (default) runs the latest missed slot once, `none` runs none. */
  misfire?: MisfirePolicy;
}

/** What `@RecurringJob` stores (an array, so one class may declare several). */
export interface RecurringJobMetadata extends RecurringJobOptions {
  name: string;
  cron: string;
}
