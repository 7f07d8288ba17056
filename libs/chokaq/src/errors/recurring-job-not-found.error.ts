import { ChokaQError } from './chokaq.error';

/**
 * An operation of `ChokaQAdmin` named a recurring job that does not exist (never declared or
 * upserted, or removed). Nothing was changed or enqueued.
 *
 * @publicApi
 */
export class ChokaQRecurringJobNotFoundError extends ChokaQError {
  constructor(readonly recurringJobName: string) {
    super(
      `No recurring job is named "${recurringJobName}". ` +
        `List them with ChokaQAdmin.getRecurringJobs(), or create it with upsertRecurringJob.`,
    );
  }
}
