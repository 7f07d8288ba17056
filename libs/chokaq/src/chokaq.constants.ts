/**
 * Injection tokens and metadata keys of ChokaQ. Tokens are `'CHOKAQ:…'` strings so that two copies
 * of the package in one app (a mistake, but a common one) fail loudly instead of sharing state by
 * accident; metadata keys are `'chokaq:…'`.
 */

/** Metadata key of `@JobHandler` (on a method). */
export const JOB_HANDLER_METADATA = 'chokaq:job-handler';

/** Metadata key of `@RecurringJob` (on a class or a method); the value is an array. */
export const RECURRING_JOB_METADATA = 'chokaq:recurring-job';

/** Metadata key of `@OnJobEvent` (on a method). */
export const JOB_EVENT_METADATA = 'chokaq:job-event';

/** Token of the validated {@link ResolvedChokaQOptions}. */
export const CHOKAQ_RESOLVED_OPTIONS = 'CHOKAQ:RESOLVED_OPTIONS';

/** Token of the `JobStorage` created from `options.storage`. */
export const CHOKAQ_STORAGE = 'CHOKAQ:STORAGE';

/**
 * Token of the `JobStorage` opened on `storage.readReplica` for the dashboard-grade reads, or null
 * without one.
 */
export const CHOKAQ_READ_REPLICA = 'CHOKAQ:READ_REPLICA';

/** Token of the middleware instances, in the order they were listed (first = outermost). */
export const CHOKAQ_MIDDLEWARE = 'CHOKAQ:MIDDLEWARE';

/**
 * The token under which the `JobStorage` of ChokaQ is provided. Inject it only for advanced use
 * (custom reads); `JobClient` and `ChokaQAdmin` cover the supported operations.
 *
 * @publicApi
 */
export function getJobStorageToken(): string {
  return CHOKAQ_STORAGE;
}

/**
 * The token under which the resolved (defaulted and validated) options are provided.
 *
 * @publicApi
 */
export function getChokaQOptionsToken(): string {
  return CHOKAQ_RESOLVED_OPTIONS;
}
