import { randomUUID } from 'node:crypto';
import { issuePaths, validationIssues } from '../../../../test/support/validation-issues';
import { FailureReason } from '../interfaces/job-status.enum';
import { DEFAULT_PAGE_SIZE, MAX_LIST_SCAN, MAX_PAGE_SIZE } from './limits';
import { decodeListCursor, encodeListCursor } from './list-cursor';
import { assertDlqFilter } from './validate-filter';
import { assertListQuery } from './validate-list';

const CODES = Object.values(FailureReason).filter((v): v is number => typeof v === 'number');

describe('DLQ filter reason', () => {
  it.each(CODES)('accepts the FailureReason code %s', (reason) => {
    expect(assertDlqFilter({ reason })).toEqual({ reason });
    expect(assertListQuery('dlq', { filter: { reason } }).filter).toEqual({ reason });
  });

  // Names of Object.prototype members and enum names are keys of the enum object (inherited, or
  // the reverse mapping of a numeric enum) but not codes: an `in` test let them reach the SQL.
  it.each<unknown>([
    'toString',
    '__proto__',
    'constructor',
    'hasOwnProperty',
    'valueOf',
    'Timeout',
    'FatalError',
    '7',
    4,
    8,
    13,
    -1,
    7.5,
    NaN,
    null,
    true,
    {},
  ])('rejects %p by field, on bulk filters and on lists', (reason) => {
    expect(issuePaths(() => assertDlqFilter({ reason } as never))).toEqual(['filter.reason']);
    expect(issuePaths(() => assertListQuery('dlq', { filter: { reason } as never }))).toEqual([
      'filter.reason',
    ]);
  });
});

describe('assertListQuery', () => {
  it('applies the defaults: 50 newest, the first page, no scan bound', () => {
    expect(assertListQuery('archive', undefined)).toEqual({
      pillar: 'archive',
      filter: {},
      limit: DEFAULT_PAGE_SIZE,
      order: 'newest',
      after: null,
      scanBound: null,
    });
  });

  it('bounds the scan of a search term or a tag, not of indexed filters or an empty search', () => {
    expect(assertListQuery('hot', { filter: { search: 'x' } }).scanBound).toBe(MAX_LIST_SCAN);
    expect(assertListQuery('dlq', { filter: { tag: 'vip' } }).scanBound).toBe(MAX_LIST_SCAN);
    expect(assertListQuery('dlq', { filter: { search: '' } }).scanBound).toBeNull();
    const indexed = { queue: 'q', type: 't', reason: FailureReason.Timeout, from: new Date(0) };
    expect(assertListQuery('dlq', { filter: indexed }).scanBound).toBeNull();
  });

  it('refuses a limit outside 1–1,000, another order, and the offset pages’ fields, all at once', () => {
    expect(assertListQuery('hot', { limit: MAX_PAGE_SIZE }).limit).toBe(MAX_PAGE_SIZE);
    for (const limit of [0, MAX_PAGE_SIZE + 1, 1.5, NaN, '10']) {
      expect(issuePaths(() => assertListQuery('hot', { limit } as never))).toEqual(['limit']);
    }
    expect(issuePaths(() => assertListQuery('hot', { order: 'desc' } as never))).toEqual(['order']);
    expect(
      issuePaths(() =>
        assertListQuery('hot', { page: 2, pageSize: 10, sortBy: 'priority', limit: 0 } as never),
      ).sort(),
    ).toEqual(['limit', 'page', 'pageSize', 'sortBy']);
    expect(issuePaths(() => assertListQuery('hot', 'x' as never))).toEqual(['query']);
  });

  it('reads back the cursor it wrote for the same list and order', () => {
    const id = randomUUID();
    const at = '2026-01-02T03:04:05.123456Z';
    const cursor = encodeListCursor('archive', 'oldest', { at, id });
    expect(assertListQuery('archive', { cursor, order: 'oldest' }).after).toEqual({
      at,
      atMs: Date.parse('2026-01-02T03:04:05.123Z'),
      id,
    });
    expect(
      decodeListCursor(
        encodeListCursor('dlq', 'newest', { at: '2026-01-02T03:04:05Z', id }),
        'dlq',
        'newest',
      ),
    ).toEqual({
      at: '2026-01-02T03:04:05Z',
      atMs: Date.parse('2026-01-02T03:04:05Z'),
      id,
    });
  });

  /** `good`'s cursor with `spaces` of whitespace before its JSON (still valid JSON). */
  function paddedCursor(spaces: number): string {
    return Buffer.from(`${' '.repeat(spaces)}${JSON.stringify(good)}`, 'utf8').toString(
      'base64url',
    );
  }

  it('reads a padded cursor within the length bound (the bound, not the padding, refuses)', () => {
    expect(paddedCursor(100).length).toBeLessThanOrEqual(1_000);
    expect(assertListQuery('archive', { cursor: paddedCursor(100) }).after?.id).toBe(good.i);
  });

  it('bounds a search term at 200 characters and explicit ids at 10,000', () => {
    const ids = (n: number) => Array.from({ length: n }, () => randomUUID());
    const search = (n: number) => ({ filter: { search: 'x'.repeat(n) } });
    expect(() => assertListQuery('hot', search(200))).not.toThrow();
    expect(issuePaths(() => assertListQuery('hot', search(201)))).toEqual(['filter.search']);
    expect(() => assertListQuery('hot', { filter: { ids: ids(10_000) } })).not.toThrow();
    expect(issuePaths(() => assertListQuery('hot', { filter: { ids: ids(10_001) } }))).toEqual([
      'filter.ids',
    ]);
  });

  /** A cursor whose JSON is `json` (base64url, as ChokaQ writes them). */
  const forged = (json: unknown): string =>
    Buffer.from(JSON.stringify(json), 'utf8').toString('base64url');
  const good = { v: 1, l: 'archive', o: 'newest', k: '2026-01-02T03:04:05.123Z', i: randomUUID() };

  it.each<[string, unknown]>([
    ['another list', encodeListCursor('dlq', 'newest', { at: good.k, id: good.i })],
    ['the other order', encodeListCursor('archive', 'oldest', { at: good.k, id: good.i })],
    ['another version', forged({ ...good, v: 2 })],
    ['a key more', forged({ ...good, x: 1 })],
    ['a key less', forged({ v: 1, l: 'archive', o: 'newest', k: good.k })],
    ['a date that is not one', forged({ ...good, k: '2026-02-30T00:00:00Z' })],
    ['a date without a zone', forged({ ...good, k: '2026-01-02T03:04:05' })],
    ['year 0', forged({ ...good, k: '0000-01-01T00:00:00Z' })],
    ['a number for the date', forged({ ...good, k: 1_700_000_000_000 })],
    ['an id that is not a UUID', forged({ ...good, i: "x' OR 1=1 --" })],
    ['an array', forged([good])],
    ['null', forged(null)],
    ['JSON cut short', forged(good).slice(0, 20)],
    ['not base64url', 'not a cursor!'],
    ['the empty string', ''],
    ['a number', 42],
    ['an object', { ...good }],
    ['far too long', 'A'.repeat(5_000)],
    // A cursor ChokaQ could have written, but for 2,000 spaces of padding: over the length bound.
    ['a valid cursor padded past 1,000 characters', paddedCursor(2_000)],
  ])('refuses %s at cursor, before any SQL', (_name, cursor) => {
    const issues = validationIssues(() => assertListQuery('archive', { cursor } as never));
    expect(issues.map((i) => i.path)).toEqual(['cursor']);
    expect(issues[0].message).toMatch(/^must be a nextCursor of this list and order/);
  });
});
