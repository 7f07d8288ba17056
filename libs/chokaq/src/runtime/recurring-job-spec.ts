import type { MisfirePolicy } from '../storage/job-storage';

/**
 * A recurring job as declared by `@RecurringJob(name, cron, options)` or in options: every slot of
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
