import { ChokaQValidationError } from '../errors';
import { FailureReason } from '../interfaces/job-status.enum';
import { assertDlqFilter, filterIssues, inStorableRange } from './validate-filter';

const ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
const FIRST = Date.parse('0001-01-01T00:00:00.000Z');
const LAST = Date.parse('9999-12-31T23:59:59.999Z');

/** [path, message] of each issue of `filter`. */
const issues = (filter: unknown) => filterIssues(filter as never).map((i) => [i.path, i.message]);

describe('list and bulk-action filters', () => {
  it('accepts an empty filter and every field at its bounds', () => {
    expect(issues({})).toEqual([]);
    expect(
      issues({
        queue: 'q'.repeat(255),
        type: 't'.repeat(255),
        tag: 'g'.repeat(255),
        search: 's'.repeat(200),
        from: new Date(FIRST),
        to: new Date(LAST),
        reason: FailureReason.Zombie,
        status: 2,
        ids: [ID, ID],
      }),
    ).toEqual([]);
    expect(assertDlqFilter(undefined)).toEqual({});
    const filter = { queue: 'emails' };
    expect(assertDlqFilter(filter)).toBe(filter);
  });

  it('refuses a filter that is not an object', () => {
    for (const bad of [null, 'queue=emails', 42]) {
      expect(issues(bad)).toEqual([['filter', 'must be an object']]);
    }
    expect(() => assertDlqFilter('queue=emails' as never)).toThrow(ChokaQValidationError);
  });

  it('refuses text fields that are not strings, too long, with NUL or lone surrogates', () => {
    const text = (max: number) =>
      `must be a string of at most ${max} characters without NUL or lone surrogates`;
    expect(issues({ queue: 7 })).toEqual([['filter.queue', text(255)]]);
    expect(issues({ type: 't'.repeat(256) })).toEqual([['filter.type', text(255)]]);
    expect(issues({ tag: 'a\u0000b' })).toEqual([['filter.tag', text(255)]]);
    expect(issues({ search: 's'.repeat(201) })).toEqual([['filter.search', text(200)]]);
    expect(issues({ search: '\ud800' })).toEqual([['filter.search', text(200)]]);
    // The search bound is the search's own, not the 255 of the other fields.
    expect(issues({ tag: 'g'.repeat(201) })).toEqual([]);
  });

  it('refuses times outside year 1 to year 9999 and anything but a Date', () => {
    const when = 'must be a valid Date from year 1 to year 9999';
    expect(issues({ from: new Date(FIRST - 1) })).toEqual([['filter.from', when]]);
    expect(issues({ to: new Date(LAST + 1) })).toEqual([['filter.to', when]]);
    expect(issues({ from: new Date(NaN) })).toEqual([['filter.from', when]]);
    expect(issues({ to: '2026-01-01' })).toEqual([['filter.to', when]]);
    expect(inStorableRange(FIRST)).toBe(true);
    expect(inStorableRange(LAST)).toBe(true);
    expect(inStorableRange(FIRST - 1)).toBe(false);
    expect(inStorableRange(LAST + 1)).toBe(false);
    expect(inStorableRange(Infinity)).toBe(false);
  });

  it('refuses an unknown reason or status, too many ids, and ids that are not UUIDs', () => {
    expect(issues({ reason: 99 })).toEqual([['filter.reason', 'must be a FailureReason code']]);
    expect(issues({ status: 3 })).toEqual([['filter.status', 'must be 0, 1, 2 or 7']]);
    expect(issues({ status: 7 })).toEqual([]);
    expect(issues({ ids: ID })).toEqual([['filter.ids', 'must be an array of at most 10000 ids']]);
    expect(issues({ ids: Array(10_001).fill(ID) })).toEqual([
      ['filter.ids', 'must be an array of at most 10000 ids'],
    ]);
    expect(issues({ ids: Array(10_000).fill(ID) })).toEqual([]);
    expect(issues({ ids: [ID, 'nope', 7] })).toEqual([
      ['filter.ids[1]', 'must be a UUID string'],
      ['filter.ids[2]', 'must be a UUID string'],
    ]);
  });

  it('reports every bad field at once', () => {
    expect(issues({ queue: 1, from: 'x', status: 9, ids: ['x'] }).map(([p]) => p)).toEqual([
      'filter.queue',
      'filter.from',
      'filter.status',
      'filter.ids[0]',
    ]);
  });
});
