/**
 * Polls `condition` until it returns a truthy value (which is returned) or `timeoutMs` passes,
 * then fails naming `what`, with the last value or error. Every wait in the suites goes through
 * this one helper, so every wait is bounded and no test sleeps to synchronise. A condition that
 * throws (a busy SQLite file, a table not created yet) is polled again, not fatal.
 */
export async function waitFor<T>(
  what: string,
  condition: () => T | Promise<T>,
  { timeoutMs = 15_000, intervalMs = 25 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      last = await condition();
      if (last) return last as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const detail =
        last instanceof Error
          ? `last error: ${last.message}`
          : `last value: ${JSON.stringify(last)}`;
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what} (${detail})`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A promise with its resolver, for handlers a test releases by hand. */
export class Gate {
  readonly promise: Promise<void>;
  open!: () => void;
  constructor() {
    this.promise = new Promise((resolve) => (this.open = resolve));
  }
}

/** A promise with its resolver exposed (a gate a test opens with a value). */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
