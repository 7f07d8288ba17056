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
