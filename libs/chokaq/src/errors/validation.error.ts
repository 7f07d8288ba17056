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
  constructor(readonly issues: readonly ValidationIssue[]) {
    super(
      `Invalid input: ${issues
        .map((i) => `${i.path} ${i.message} (got ${describe(i.value)})`)
        .join('; ')}`,
    );
  }

  /** The first offending field's path. */
  get field(): string {
    return this.issues[0]?.path ?? '';
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  }
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'number' || typeof value === 'boolean' || value == null)
    return String(value);
  if (value instanceof Date)
    return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (Array.isArray(value)) return `array(${value.length})`;
  return typeof value;
}
