import { describeValue } from '../common/describe-value';
import { ChokaQValidationError, type ValidationIssue } from './validation.error';

/** Most issues written into the message; every one stays in `issues`. */
const MAX_LISTED_ISSUES = 10;

/**
 * A payload refused by the schema of its job definition (`defineJob(queue, type, { schema })`).
 * `issues` holds every issue the schema reported, each with its path (`payload.to`, or
 * `items[3].payload.to` for `enqueueMany`), the schema's message and the value found there.
 *
 * - `stage: 'enqueue'`: thrown by `JobClient.enqueue` / `enqueueMany` / `schedule`; nothing was
 *   written. Fix the payload and enqueue again.
 * - `stage: 'run'`: a stored payload failed the handler's schema in the worker. The handler was not
 *   called and the job went to the DLQ at once as `FatalError`, this message its error text. Fix
 *   the producer (or the schema), then resurrect the job, with a corrected payload if need be.
 *
 * A subclass of {@link ChokaQValidationError}, so code that catches that one keeps working.
 *
 * @publicApi
 */
export class ChokaQPayloadValidationError extends ChokaQValidationError {
  constructor(
    readonly queue: string,
    readonly type: string,
    issues: readonly ValidationIssue[],
    readonly stage: 'enqueue' | 'run',
  ) {
    const listed = issues
      .slice(0, MAX_LISTED_ISSUES)
      .map((i) => `${i.path}: ${i.message} (got ${describeValue(i.value)})`)
      .join('; ');
    const more =
      issues.length > MAX_LISTED_ISSUES ? `; and ${issues.length - MAX_LISTED_ISSUES} more` : '';
    const what =
      stage === 'enqueue'
        ? 'nothing was written'
        : 'the handler was not called and the job went to the DLQ without retries; fix the producer or the schema, then resurrect it';
    super(
      issues,
      `Payload of ${queue}/${type} does not match its schema (${what}): ${listed}${more}`,
    );
  }
}
