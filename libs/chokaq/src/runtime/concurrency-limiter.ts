/**
 * Counts handler slots of one process. Not a queue of waiters: the processor asks how many slots
 * are free and takes that many buffered jobs, so resizing is just changing the capacity.
 *
 * Shrinking below the number running never interrupts anyone: `available` stays 0 until enough
 * jobs have finished. Growing frees slots at once; the owner should then dispatch (`onChange`).
 */
export class ConcurrencyLimiter {
  private inUse = 0;
  private limit: number;

  constructor(
    capacity: number,
    private readonly onChange: () => void = () => undefined,
  ) {
    this.limit = ConcurrencyLimiter.check(capacity);
  }

  /** The current capacity. */
  get capacity(): number {
    return this.limit;
  }

  /** Slots taken (may exceed the capacity right after it shrank). */
  get active(): number {
    return this.inUse;
  }

  /** Slots that may be taken now. */
  get available(): number {
    return Math.max(0, this.limit - this.inUse);
  }

  /** Takes up to `n` slots; returns how many were taken. */
  acquire(n = 1): number {
    const taken = Math.min(Math.max(0, Math.floor(n)), this.available);
    this.inUse += taken;
    return taken;
  }

  /** Returns `n` slots. */
  release(n = 1): void {
    this.inUse = Math.max(0, this.inUse - n);
    if (n > 0) this.onChange();
  }

  /** Changes the capacity at run time (an integer ≥ 1). */
  resize(capacity: number): void {
    this.limit = ConcurrencyLimiter.check(capacity);
    this.onChange();
  }

  private static check(capacity: number): number {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`concurrency must be an integer ≥ 1 (got ${capacity})`);
    }
    return capacity;
  }
}
