import { RECURRING_JOB_METADATA } from '../chokaq.constants';
import type {
  RecurringJobMetadata,
  RecurringJobOptions,
} from '../interfaces/recurring-job.interface';

/**
 * Declares a recurring job: every slot of `cron` (5 or 6 fields, in `timeZone`) enqueues one job,
 * once across all processes, however many run (the slot is claimed with a compare-and-set in the
 * database).
 *
 * - **On a method** that is also a `@JobHandler`, the queue and type default to the handler's, so
 *   schedule and handler sit together:
 *   `@RecurringJob('nightly-report', '0 3 * * *') @JobHandler('reports') run() {…}`.
 * - **On a provider class**, `queue` is required; the class may carry several.
 *
 * It only declares the schedule; the job runs on whichever process has a handler for it.
 *
 * @publicApi
 */
export function RecurringJob(
  name: string,
  cron: string,
  options: RecurringJobOptions = {},
): ClassDecorator & MethodDecorator {
  return ((target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    const holder: object = descriptor ? (descriptor.value as object) : target;
    const existing = (Reflect.getOwnMetadata(RECURRING_JOB_METADATA, holder) ??
      []) as RecurringJobMetadata[];
    Reflect.defineMetadata(
      RECURRING_JOB_METADATA,
      [{ ...options, name, cron }, ...existing],
      holder,
    );
  }) as ClassDecorator & MethodDecorator;
}
