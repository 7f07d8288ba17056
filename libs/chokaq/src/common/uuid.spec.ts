import { UuidV7Generator, isUuid, uuidv7 } from './uuid';

/** The 48-bit millisecond timestamp of a UUIDv7. */
const timeOf = (id: string): number => parseInt(id.replace(/-/g, '').slice(0, 12), 16);

/**
 * The 16 bytes of a UUID as they compare in a binary comparison (SQLite TEXT, PostgreSQL
 * `COLLATE "C"`): as lowercase hex, whose string order is the byte order.
 */
const bytesOf = (id: string): string => Buffer.from(id.replace(/-/g, ''), 'hex').toString('hex');

/** A clock that returns the given times in turn, then keeps returning the last. */
function clock(...times: number[]): () => number {
  let i = 0;
  return () => times[Math.min(i++, times.length - 1)];
}

describe('uuidv7', () => {
  it('100,000 ids of one process strictly increase, as strings and as bytes', () => {
    const ids = Array.from({ length: 100_000 }, () => uuidv7());
    const inversions: string[] = [];
    for (let i = 1; i < ids.length; i++) {
      const [a, b] = [ids[i - 1], ids[i]];
      if (!(a < b) || !(bytesOf(a) < bytesOf(b))) inversions.push(`${a} ≥ ${b}`);
    }
    expect(inversions.slice(0, 5)).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('sorts the same under a linguistic collation (PostgreSQL and SQL Server varchar ids)', () => {
    // A database collation such as en_US or Latin1_General compares hyphens and letters with
    // rules of its own; lowercase hex with the hyphens in fixed places still sorts as the bytes do.
    const collator = new Intl.Collator('en-US');
    const ids = Array.from({ length: 10_000 }, () => uuidv7());
    const inversions = ids.filter((id, i) => i > 0 && collator.compare(ids[i - 1], id) !== -1);
    expect(inversions).toEqual([]);
  });

  it('is a canonical lowercase version-7, RFC 9562 variant UUID', () => {
    const id = uuidv7();
    expect(isUuid(id)).toBe(true);
    expect(id).toBe(id.toLowerCase());
    expect(id[14]).toBe('7');
    expect('89ab').toContain(id[19]);
  });
});

describe('UuidV7Generator', () => {
  it('puts the clock in the first 48 bits, so ids of later milliseconds sort later', () => {
    const ids = new UuidV7Generator(clock(1_700_000_000_000, 1_700_000_000_001));
    const a = ids.next();
    const b = ids.next();
    expect(timeOf(a)).toBe(1_700_000_000_000);
    expect(timeOf(b)).toBe(1_700_000_000_001);
    expect(a < b).toBe(true);
  });

  it('counts up within one millisecond (RFC 9562 §6.2 method 1)', () => {
    const ids = new UuidV7Generator(clock(5_000));
    const batch = Array.from({ length: 1_000 }, () => ids.next());
    expect(batch.every((id) => timeOf(id) === 5_000)).toBe(true);
    expect([...batch].sort()).toEqual(batch);
    expect(new Set(batch).size).toBe(batch.length);
  });

  it('keeps the last timestamp when the clock goes backwards', () => {
    const ids = new UuidV7Generator(clock(10_000, 9_000, 9_999, 10_000, 10_001));
    const batch = Array.from({ length: 5 }, () => ids.next());
    expect(batch.map(timeOf)).toEqual([10_000, 10_000, 10_000, 10_000, 10_001]);
    expect([...batch].sort()).toEqual(batch);
    expect(new Set(batch).size).toBe(5);
  });

  it('advances the timestamp by one millisecond when the counter overflows', () => {
    // A random source of all ones seeds the 42-bit counter at its maximum: the next id of the
    // same millisecond has no counter value left and moves to the next millisecond.
    const ids = new UuidV7Generator(clock(20_000), (buffer) => buffer.fill(0xff));
    const batch = Array.from({ length: 3 }, () => ids.next());
    expect(batch.map(timeOf)).toEqual([20_000, 20_001, 20_002]);
    expect([...batch].sort()).toEqual(batch);
    for (const id of batch)
      expect(isUuid(id) && id[14] === '7' && '89ab'.includes(id[19])).toBe(true);
  });

  it('seeds the counter at random each millisecond, so other processes cannot guess the ids', () => {
    const a = new UuidV7Generator(clock(30_000)).next();
    const b = new UuidV7Generator(clock(30_000)).next();
    expect(timeOf(a)).toBe(timeOf(b));
    expect(a).not.toBe(b);
  });
});
