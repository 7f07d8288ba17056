import { performance } from 'node:perf_hooks';

/**
 * A holder that ran at least this long (ms) hands over through the event loop, not a microtask.
 * Ordinary statements take well under a millisecond; a busy wait takes `busy_timeout` (50 ms).
 */
const YIELD_AFTER_MS = 10;

/** Resolves on the next turn of the event loop, after pending timers and I/O have had theirs. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A minimal async mutex: callers run one at a time, in arrival order.
 *
 * TypeORM's better-sqlite3 driver keeps one connection per `DataSource`, and a SQLite connection has
 * one transaction state. ChokaQ therefore runs at most one of its own operations on that connection
 * at a time (SPEC §3, "SQLite specifics"). This is an in-process courtesy only: correctness across
 * storages and processes comes from SQLite's single writer (`BEGIN IMMEDIATE`), never from this lock.
 *
 * better-sqlite3 blocks the event loop while it runs, including while it waits out `busy_timeout`
 * on a file another process has locked. Handing the mutex over in a microtask would chain those
 * waits back to back (fetcher, batcher, heartbeat, rescue: a quarter of a second or more) with no
 * turn for timers or I/O in between. So after a long holder, the next one starts on the next turn
 * of the event loop (`setImmediate`); after a short one it starts at once, as before.
 */
export class SqliteMutex {
  /** Settles when the current holder (and everyone queued before the next caller) is done. */
  private tail: Promise<void> = Promise.resolve();
  /** How long the last holder held the mutex, in ms. */
  private lastHeldMs = 0;

  /** @param yieldAfterMs a holder that ran at least this long hands over through the event loop. */
  constructor(private readonly yieldAfterMs = YIELD_AFTER_MS) {}

  /** Runs `task` once every earlier task has settled; the lock is released however `task` ends. */
  async runExclusive<T>(task: () => T | Promise<T>): Promise<T> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    await previous;
    if (this.lastHeldMs >= this.yieldAfterMs) await yieldToEventLoop();
    const startedAt = performance.now();
    try {
      return await task();
    } finally {
      this.lastHeldMs = performance.now() - startedAt;
      release();
    }
  }
}
