/**
 * A minimal async mutex: callers run one at a time, in arrival order.
 *
 * TypeORM's better-sqlite3 driver keeps one connection per `DataSource`, and a SQLite connection has
 * one transaction state. ChokaQ therefore runs at most one of its own operations on that connection
 * at a time (SPEC §3, "SQLite specifics"). This is an in-process courtesy only: correctness across
 * storages and processes comes from SQLite's single writer (`BEGIN IMMEDIATE`), never from this lock.
 */
export class SqliteMutex {
  /** Settles when the current holder (and everyone queued before the next caller) is done. */
  private tail: Promise<void> = Promise.resolve();

  /** Runs `task` once every earlier task has settled; the lock is released however `task` ends. */
  async runExclusive<T>(task: () => T | Promise<T>): Promise<T> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    await previous;
    try {
      return await task();
    } finally {
      release();
    }
  }
}
