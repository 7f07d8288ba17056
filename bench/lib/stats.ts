/** Min, median and max of the runs of one scenario. */
export interface Summary {
  min: number;
  median: number;
  max: number;
}

/** Summary of `values` (which must not be empty). */
export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0], median: percentile(sorted, 50), max: sorted[sorted.length - 1] };
}

/** Linear-interpolated percentile `p` (0–100) of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

/** Epoch milliseconds with sub-millisecond precision, comparable across processes on one host. */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `probe` every `everyMs` until it returns true; rejects after `timeoutMs` naming `what`.
 * Every wait of the bench goes through here, so nothing can hang forever.
 */
export async function pollUntil(
  probe: () => Promise<boolean> | boolean,
  timeoutMs: number,
  what: string,
  everyMs = 10,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline)
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
