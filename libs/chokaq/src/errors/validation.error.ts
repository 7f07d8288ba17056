import { describeValue } from '../common/describe-value';
import { ChokaQError } from './chokaq.error';

/** One rejected input: where it was, what it was, and the rule it broke. */
export interface ValidationIssue {
  /** Path of the field, e.g. `queue`, `tags[3]`, `items[12].priority`, `retry.maxAttempts`. */
  readonly path: string;
  /** The rule, e.g. `must be an integer within ±1000000`. */
  readonly message: string;
  /** The rejected value (abbreviated when long). */
  readonly value: unknown;
}

/**
 * Input that breaks a documented limit. Nothing was written. Carries every problem found, each
 * with its path and value, so one call reports all of them.
 *
 * @publicApi
 */
export class ChokaQValidationError extends ChokaQError {
  /**
   * @param message replaces the default text (`Invalid input: <path> <rule> (got …); …`), for a
   * subclass that says more about where the input was refused.
   */
  constructor(
    readonly issues: readonly ValidationIssue[],
    message?: string,
  ) {
    super(
      message ??
        `Invalid input: ${issues
          .map((i) => `${i.path} ${i.message} (got ${describeValue(i.value)})`)
          .join('; ')}`,
    );
  }

  /** The first offending field's path. */
  get field(): string {
    return this.issues[0]?.path ?? '';
  }
}
