import { decodeListCursor, encodeListCursor } from './list-cursor';
import { MAX_CURSOR_LENGTH } from './limits';

const ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
const AT = '2026-12-05T10:11:12.345Z';

/** A cursor over any JSON (what an altered or forged one looks like). */
const raw = (json: unknown) => Buffer.from(JSON.stringify(json), 'utf8').toString('base64url');
const GOOD = { v: 1, l: 'dlq', o: 'newest', k: AT, i: ID };

/** The reason in parentheses of a refusal, or the position. */
function read(
  cursor: unknown,
  list: 'dlq' | 'archive' = 'dlq',
  order: 'newest' | 'oldest' = 'newest',
) {
  const out = decodeListCursor(cursor, list, order);
  if ('path' in out) {
    expect(out.path).toBe('cursor');
    expect(out.value).toBe(cursor);
    return /\(([^)]*)\)$/.exec(out.message)![1];
  }
  return out;
}

describe('list cursors', () => {
  it('round-trips a position, with its instant in epoch ms', () => {
    const cursor = encodeListCursor('dlq', 'newest', { at: AT, id: ID });
    expect(read(cursor)).toEqual({ at: AT, atMs: Date.parse(AT), id: ID });
    expect(read(raw(GOOD))).toEqual({ at: AT, atMs: Date.parse(AT), id: ID });
  });

  it('reads microseconds by their first three digits, and a key without a fraction', () => {
    expect(read(raw({ ...GOOD, k: '2026-12-05T10:11:12.345678Z' }))).toMatchObject({
      atMs: Date.parse(AT),
    });
    expect(read(raw({ ...GOOD, k: '2026-12-05T10:11:12Z' }))).toMatchObject({
      atMs: Date.parse('2026-12-05T10:11:12.000Z'),
    });
    expect(read(raw({ ...GOOD, k: '2026-12-05T10:11:12.3Z' }))).toMatchObject({
      atMs: Date.parse('2026-12-05T10:11:12.300Z'),
    });
  });

  it('takes the first and the last storable instants and refuses beyond them', () => {
    expect(read(raw({ ...GOOD, k: '0001-01-01T00:00:00.000Z' }))).toMatchObject({
      atMs: Date.parse('0001-01-01T00:00:00Z'),
    });
    expect(read(raw({ ...GOOD, k: '9999-12-31T23:59:59.999Z' }))).toMatchObject({
      atMs: Date.parse('9999-12-31T23:59:59.999Z'),
    });
    expect(read(raw({ ...GOOD, k: '0000-12-31T23:59:59.999Z' }))).toBe('altered');
    expect(read(raw({ ...GOOD, k: '2026-02-30T00:00:00.000Z' }))).toBe('altered');
    expect(read(raw({ ...GOOD, k: 1_700_000_000_000 }))).toBe('altered');
    expect(read(raw({ ...GOOD, k: `${AT}!` }))).toBe('altered');
    expect(read(raw({ ...GOOD, k: `+${AT}` }))).toBe('altered');
    expect(read(raw({ ...GOOD, i: 'not-a-uuid' }))).toBe('altered');
  });

  it('refuses what is not a cursor of this list and order, saying why', () => {
    expect(read(undefined)).toBe('not a non-empty string');
    expect(read('')).toBe('not a non-empty string');
    expect(read('not base64url!')).toBe('not a cursor');
    // Node's base64url decoder skips characters outside the alphabet: the text is checked first.
    expect(Buffer.from(`!${raw(GOOD)}!`, 'base64url').toString('utf8')).toBe(JSON.stringify(GOOD));
    expect(read(`${raw(GOOD)}!`)).toBe('not a cursor');
    expect(read(`!${raw(GOOD)}`)).toBe('not a cursor');
    expect(read(raw(GOOD).slice(0, -3))).toBe('not a cursor'); // truncated JSON
    expect(read(raw([1, 2]))).toBe('not a cursor');
    expect(read(raw(null))).toBe('not a cursor');
    expect(read(raw({ ...GOOD, x: 1 }))).toBe('not a cursor');
    const { v: _v, ...noVersion } = GOOD;
    expect(read(raw({ ...noVersion, w: 1 }))).toBe('not a cursor');
    expect(read(raw(noVersion))).toBe('not a cursor');
    expect(read(raw({ ...GOOD, v: 2 }))).toBe('another version');
    expect(read(raw(GOOD), 'archive')).toBe('a cursor of another list');
    expect(read(raw(GOOD), 'dlq', 'oldest')).toBe('a cursor of the other order');
  });

  it('bounds the length at the limit: a valid cursor padded past it is refused', () => {
    const padded = (n: number) =>
      Buffer.from(JSON.stringify(GOOD).replace('{', `{${' '.repeat(n)}`), 'utf8').toString(
        'base64url',
      );
    let n = 0;
    while (padded(n + 1).length <= MAX_CURSOR_LENGTH) n++;
    // base64url of 750 bytes is exactly 1,000 characters: the limit itself is readable.
    expect(padded(n).length).toBe(MAX_CURSOR_LENGTH);
    expect(read(padded(n))).toMatchObject({ id: ID });
    expect(read(padded(n + 1))).toBe('not a cursor');
    expect(read(padded(2_000))).toBe('not a cursor');
  });
});
