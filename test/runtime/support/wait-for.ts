/**
 * Polls `condition` until it holds (returns the truthy value) or fails after `timeoutMs` with
 * `message`. Bounded by design: tests never sleep to synchronise.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  timeoutMs = 5_000,
  message = 'condition',
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `waitFor timed out after ${timeoutMs} ms: ${message}${last ? ` (last error: ${String(last)})` : ''}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A promise with its resolver exposed (a gate a test opens). */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
