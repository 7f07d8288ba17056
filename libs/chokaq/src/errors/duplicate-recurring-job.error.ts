import { ChokaQError } from './chokaq.error';

/**
 * Two `@RecurringJob` declarations share one name. The name is the key of the durable
 * `RecurringJobs` record, so it must be unique across the application.
 *
 * @publicApi
 */
export class ChokaQDuplicateRecurringJobError extends ChokaQError {
  constructor(
    readonly recurringJobName: string,
    readonly first: string,
    readonly second: string,
  ) {
    super(
      `Two recurring jobs are named "${recurringJobName}": on ${first} and on ${second}. ` +
        `Give each @RecurringJob a unique name.`,
    );
  }
}
