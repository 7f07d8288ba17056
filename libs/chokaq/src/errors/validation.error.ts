import { describeValue } from '../common/describe-value';
import { echoValue } from '../common/echo-value';
import { ChokaQError } from './chokaq.error';

/** One rejected input: where it was, what it was, and the rule it broke. */
export interface ValidationIssue {
  /** Path of the field, e.g. `queue`, `tags[3]`, `items[12].priority`, `retry.maxAttempts`. */
  readonly path: string;
  /** The rule, e.g. `must be an integer within ±1000000`. */
  readonly message: string;
  /**
   * The rejected value, as an error may show it: credentials masked, long strings cut, deep or
   * large objects abbreviated (`common/echo-value.ts`).
   */
  readonly value: unknown;
}

/**
 * Input that breaks a documented limit. Nothing was written. Carries every problem found, each
 * with its path and value, so one call reports all of them.
 *
 * @publicApi
 */
export class ChokaQValidationError extends ChokaQError {
  /** Every problem found; each value as {@link echoValue} shows it (secrets masked, bounded). */
  readonly issues: readonly ValidationIssue[];

  /**
   * @param message replaces the default text (`Invalid input: <path> <rule> (got …); …`), for a
   * subclass that says more about where the input was refused.
   */
  constructor(issues: readonly ValidationIssue[], message?: string) {
    const shown = issues.map((i) => {
      const value = echoValue(i.value);
      return value === i.value ? i : { ...i, value };
    });
    super(
      message ??
        `Invalid input: ${shown
          // An array is described by its own length, not by its echo's (cut to 50 entries).
          .map((i, n) => {
            const got = Array.isArray(issues[n].value) ? issues[n].value : i.value;
            return `${i.path} ${i.message} (got ${describeValue(got)})`;
          })
          .join('; ')}`,
    );
    this.issues = shown;
  }

  /** The first offending field's path. */
  get field(): string {
    return this.issues[0]?.path ?? '';
  }
}
