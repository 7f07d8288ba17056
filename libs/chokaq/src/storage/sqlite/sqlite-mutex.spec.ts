import { SqliteConnectionInUseError, isSqliteTransient } from './sqlite-errors';
import { SqliteMutex } from './sqlite-mutex';

describe('SqliteMutex', () => {
  it('runs tasks one at a time in arrival order and releases after a failure', async () => {
    const mutex = new SqliteMutex();
    const log: string[] = [];
    const task = (name: string, ms: number, fail = false) =>
      mutex.runExclusive(async () => {
        log.push(`start ${name}`);
        await new Promise((resolve) => setTimeout(resolve, ms));
        log.push(`end ${name}`);
        if (fail) throw new Error(name);
        return name;
      });
    const results = await Promise.allSettled([task('a', 20), task('b', 1, true), task('c', 1)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });

  it('gives the event loop a turn after a holder that blocked it, not a chain of blocked turns', async () => {
    const mutex = new SqliteMutex();
    const block = (ms: number) => {
      const until = Date.now() + ms;
      while (Date.now() < until); // a synchronous busy wait, as better-sqlite3's busy_timeout is
    };
    let timerRanAt = -1;
    const order: string[] = [];
    setTimeout(() => {
      timerRanAt = order.length;
    }, 0);
    await new Promise((resolve) => setImmediate(resolve)); // let the timer become due first
    await Promise.all(
      ['a', 'b', 'c'].map((name) =>
        mutex.runExclusive(() => {
          block(15);
          order.push(name);
        }),
      ),
    );
    expect(order).toEqual(['a', 'b', 'c']);
    // The timer ran between two holders, not only after the whole chain.
    expect(timerRanAt).toBeGreaterThan(0);
    expect(timerRanAt).toBeLessThan(3);
  });

  it('hands over at once after short holders', async () => {
    // "Short" is measured on the wall clock: a threshold far above the holders' time keeps a
    // loaded machine's scheduling pause (seen once in a full run) from making one of them long.
    const mutex = new SqliteMutex(1_000);
    let immediateRan = false;
    setImmediate(() => (immediateRan = true));
    const order: number[] = [];
    await Promise.all([1, 2, 3].map((n) => mutex.runExclusive(() => order.push(n))));
    expect(order).toEqual([1, 2, 3]);
    expect(immediateRan).toBe(false);
  });
});

describe('isSqliteTransient', () => {
  it('accepts busy and locked codes, wrapped or not, and the in-use signal', () => {
    expect(isSqliteTransient(Object.assign(new Error('x'), { code: 'SQLITE_BUSY' }))).toBe(true);
    expect(isSqliteTransient(Object.assign(new Error('x'), { code: 'SQLITE_BUSY_SNAPSHOT' }))).toBe(
      true,
    );
    expect(isSqliteTransient({ driverError: { code: 'SQLITE_LOCKED' } })).toBe(true);
    expect(isSqliteTransient(new SqliteConnectionInUseError())).toBe(true);
    expect(
      isSqliteTransient(Object.assign(new Error('x'), { code: 'SQLITE_CONSTRAINT_UNIQUE' })),
    ).toBe(false);
    expect(isSqliteTransient(null)).toBe(false);
  });
});
