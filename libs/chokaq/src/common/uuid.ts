import { randomFillSync, randomUUID } from 'node:crypto';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Largest value of the 42-bit counter (12 bits of `rand_a`, 30 of `rand_b`). */
const COUNTER_MAX = 2 ** 42 - 1;

/**
 * Makes UUIDv7 ids (RFC 9562 §5.7) that strictly increase, as strings and as bytes, for as long as
 * the generator lives: 48 bits of Unix milliseconds, then a 42-bit counter (RFC 9562 §6.2,
 * method 1: the 12 bits of `rand_a` and the first 30 of `rand_b`), then 32 random bits.
 *
 * The counter starts at a random value in each new millisecond and counts up by one within it, so
 * ids of one millisecond keep the order they were made in (the claim breaks ties between jobs of
 * equal priority and due time by id: this is what makes an `enqueueMany` batch run first-in,
 * first-out). If the counter overflows, the timestamp moves on by 1 ms and the counter is seeded
 * again; if the clock goes backwards, the last timestamp is kept and the counter carries on, so an
 * NTP step never produces a smaller id.
 *
 * Ids of two generators (two processes) made in the same millisecond are not ordered between
 * themselves; only their milliseconds are.
 */
export class UuidV7Generator {
  private lastMs = -1;
  private counter = 0;
  /**
   * Random bytes for the next 256 ids, refilled in one call: a `randomBytes(16)` per id cost more
   * than everything else an `enqueueMany` of small jobs does per job in JavaScript.
   */
  private readonly pool = Buffer.alloc(16 * 256);
  private poolOffset = this.pool.length;

  /**
   * @param clock Unix milliseconds (default `Date.now`); injectable for tests.
   * @param fill Fills a buffer with cryptographically random bytes (default
   *   `crypto.randomFillSync`); injectable for tests.
   */
  constructor(
    private readonly clock: () => number = Date.now,
    private readonly fill: (buffer: Buffer) => void = randomFillSync,
  ) {}

  /** The next id: canonical, lowercase, greater than every id this generator made before. */
  next(): string {
    if (this.poolOffset === this.pool.length) {
      this.fill(this.pool);
      this.poolOffset = 0;
    }
    const bytes = Buffer.allocUnsafe(16);
    this.pool.copy(bytes, 0, this.poolOffset, this.poolOffset + 16);
    this.poolOffset += 16;
    const now = this.clock();
    if (now > this.lastMs) {
      this.lastMs = now;
      this.counter = seed(bytes);
    } else if (this.counter < COUNTER_MAX) {
      this.counter += 1;
    } else {
      this.lastMs += 1;
      this.counter = seed(bytes);
    }
    const counter = this.counter;
    bytes.writeUIntBE(this.lastMs, 0, 6);
    const high = Math.floor(counter / 2 ** 30); // counter bits 41..30 → rand_a
    bytes[6] = 0x70 | (high >>> 8); // version 7
    bytes[7] = high & 0xff;
    const low = counter % 2 ** 30; // counter bits 29..0 → the start of rand_b
    bytes[8] = 0x80 | (low >>> 24); // RFC 9562 variant (10xx)
    bytes[9] = (low >>> 16) & 0xff;
    bytes[10] = (low >>> 8) & 0xff;
    bytes[11] = low & 0xff;
    // bytes 12..15 stay random.
    const hex = bytes.toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
}

/** A fresh counter value for a new millisecond, from the random bytes (6..11) the counter replaces. */
function seed(bytes: Buffer): number {
  return (bytes.readUIntBE(6, 6) % 2 ** 42) as number;
}

/**
 * One generator for the whole process. It is module state on purpose, the one exception to
 * "state lives in providers": the ordering promise is per process (every storage and every
 * `JobClient` of the process draws from it), and two generators in one process would interleave
 * their ids within a millisecond.
 */
const PROCESS_IDS = new UuidV7Generator();

/**
 * A UUIDv7 job id (RFC 9562) from the process-wide {@link UuidV7Generator}: ids sort by creation
 * time and, within this process, strictly in the order they were made, so primary-key inserts land
 * at the end of the index and equal-priority jobs are claimed first-in, first-out.
 */
export function uuidv7(): string {
  return PROCESS_IDS.next();
}

/** A random (v4) UUID, used for lease ids. */
export function newLeaseId(): string {
  return randomUUID();
}

/** True for a canonical 36-character UUID string of any version. */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_PATTERN.test(value);
}
