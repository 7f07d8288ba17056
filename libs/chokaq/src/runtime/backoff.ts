import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';

/** The retry settings the backoff needs. */
export type RetryBackoff = Pick<
  ResolvedChokaQOptions['retry'],
  'baseDelayMs' | 'multiplier' | 'maxDelayMs' | 'jitterMs'
>;

/**
 * Wait before the retry that follows failed attempt `attempt` (1-based):
 * `min(baseDelayMs × multiplier^(attempt−1), maxDelayMs) + random(0..jitterMs)`.
 *
 * So the first retry waits exactly `baseDelayMs` (plus jitter). The .NET ChokaQ used `attempt` as
 * the exponent and made the first retry wait `base × multiplier`; SPEC §4 fixes that off-by-one.
 *
 * @param random a source in [0, 1), injectable for tests.
 */
export function retryDelayMs(
  attempt: number,
  retry: RetryBackoff,
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, attempt - 1);
  // Cap the exponent's effect before it overflows to Infinity on absurd attempt counts.
  const raw = retry.baseDelayMs * Math.pow(retry.multiplier, exponent);
  const capped = Number.isFinite(raw) ? Math.min(raw, retry.maxDelayMs) : retry.maxDelayMs;
  const jitter = retry.jitterMs > 0 ? Math.floor(random() * (retry.jitterMs + 1)) : 0;
  return Math.max(0, Math.round(capped)) + jitter;
}
