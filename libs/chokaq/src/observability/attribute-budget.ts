/** The value recorded for an attribute once its budget of distinct values is spent. */
export const OVERFLOW_ATTRIBUTE_VALUE = 'other';

/**
 * A budget of distinct values for one metric attribute (as the .NET ChokaQ's tag limiter): the
 * first `max` distinct values pass as they are, any later one becomes `other`. A value once let
 * through always is, and one refused always is, so a run's start and end land on one series.
 *
 * Per process and never reset: every distinct value is a time series in the monitoring system,
 * and the budget is what stops one process from minting them without bound (queue and type names
 * made from user data, a deploy that renames types).
 */
export class AttributeBudget {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number) {}

  /** `value`, or `other` once `max` other values were let through. */
  value(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return OVERFLOW_ATTRIBUTE_VALUE;
    this.seen.add(value);
    return value;
  }
}
