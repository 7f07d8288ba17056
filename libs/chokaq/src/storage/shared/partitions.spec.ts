import {
  PERIODS_AHEAD,
  dayStamp,
  expired,
  nextPeriod,
  parseDayStamp,
  periodOf,
  periodStart,
  rangesAhead,
  uncovered,
} from './partitions';

const at = (iso: string) => new Date(iso);
const iso = (d: Date | null) => d?.toISOString() ?? null;

describe('partition calendar', () => {
  it('starts a day at UTC midnight, a week on Monday, a month on the 1st', () => {
    // 2026-12-06 is a Sunday: its week began on Monday the 30th of November.
    const sunday = at('2026-12-06T23:59:59.999Z');
    expect(iso(periodStart(sunday, 'day'))).toBe('2026-12-06T00:00:00.000Z');
    expect(iso(periodStart(sunday, 'week'))).toBe('2026-11-30T00:00:00.000Z');
    expect(iso(periodStart(at('2026-11-30T00:00:00Z'), 'week'))).toBe('2026-11-30T00:00:00.000Z');
    expect(iso(periodStart(sunday, 'month'))).toBe('2026-12-01T00:00:00.000Z');
  });

  it('steps to the next period, across a month and a year', () => {
    expect(iso(nextPeriod(at('2026-12-31T00:00:00Z'), 'day'))).toBe('2027-01-01T00:00:00.000Z');
    expect(iso(nextPeriod(at('2026-12-28T00:00:00Z'), 'week'))).toBe('2027-01-04T00:00:00.000Z');
    expect(iso(nextPeriod(at('2026-12-01T00:00:00Z'), 'month'))).toBe('2027-01-01T00:00:00.000Z');
    expect(iso(nextPeriod(at('2027-01-01T00:00:00Z'), 'month'))).toBe('2027-02-01T00:00:00.000Z');
  });

  it('keeps the current period and the ones ahead, contiguous', () => {
    const ranges = rangesAhead(at('2026-12-07T02:00:00Z'), 'day');
    expect(ranges).toHaveLength(PERIODS_AHEAD.day + 1);
    expect(iso(ranges[0].from)).toBe('2026-12-07T00:00:00.000Z');
    expect(iso(ranges[ranges.length - 1].to)).toBe('2026-12-15T00:00:00.000Z');
    for (let i = 1; i < ranges.length; i += 1) expect(ranges[i].from).toEqual(ranges[i - 1].to);
    expect(rangesAhead(at('2026-12-07T02:00:00Z'), 'month')).toHaveLength(PERIODS_AHEAD.month + 1);
  });

  it('makes only what no partition covers: after a kept range, gaps, a change of period', () => {
    const now = at('2026-12-07T02:00:00Z');
    const day = (d: number) => at(`2026-12-${String(d).padStart(2, '0')}T00:00:00Z`);
    const shape = (ranges: ReturnType<typeof uncovered>) =>
      ranges.map((r) => `${r.from === null ? 'min' : dayStamp(r.from)}-${dayStamp(r.to)}`);
    // Nothing yet: every wanted range.
    expect(shape(uncovered(rangesAhead(now, 'day'), []))).toHaveLength(8);
    // A conversion kept everything before the 10th.
    expect(shape(uncovered(rangesAhead(now, 'day'), [{ from: null, to: day(10) }]))).toEqual([
      '20261210-20261211',
      '20261211-20261212',
      '20261212-20261213',
      '20261213-20261214',
      '20261214-20261215',
    ]);
    // A period whose making was deferred leaves a gap; the next pass fills only that.
    const made = rangesAhead(now, 'day').filter((r) => r.from!.getTime() !== day(9).getTime());
    expect(shape(uncovered(rangesAhead(now, 'day'), made))).toEqual(['20261209-20261210']);
    // Days up to the 9th, weeks from now on: this week's range starts on the 9th.
    const days = [7, 8].map((d) => ({ from: day(d), to: day(d + 1) }));
    expect(shape(uncovered(rangesAhead(now, 'week'), days))).toEqual([
      '20261209-20261214',
      '20261214-20261221',
      '20261221-20261228',
      '20261228-20270104',
      '20270104-20270111',
    ]);
    // Existing ranges in any order, one wholly after the wanted range: only the gaps inside it.
    expect(
      shape(
        uncovered(
          [{ from: day(1), to: day(8) }],
          [
            { from: day(5), to: day(6) },
            { from: day(10), to: day(11) },
            { from: day(2), to: day(3) },
            { from: null, to: day(1) },
          ],
        ),
      ),
    ).toEqual(['20261201-20261202', '20261203-20261205', '20261206-20261208']);
    // A range that covers the middle of a wanted one splits it.
    expect(
      shape(uncovered([{ from: day(1), to: day(8) }], [{ from: day(3), to: day(5) }])),
    ).toEqual(['20261201-20261203', '20261205-20261208']);
  });

  it('calls a range expired only when all of it is older than the retention', () => {
    const range = { from: at('2026-12-01T00:00:00Z'), to: at('2026-12-02T00:00:00Z') };
    const day = 86_400_000;
    expect(expired(range, at('2026-12-09T00:00:00Z'), 7 * day)).toBe(true);
    expect(expired(range, at('2026-12-08T23:59:59.999Z'), 7 * day)).toBe(false);
    expect(expired({ from: null, to: range.to }, at('2026-12-02T00:00:00Z'), 0)).toBe(true);
  });

  it('names days as YYYYMMDD and reads back only real ones', () => {
    expect(dayStamp(at('2026-02-03T10:00:00Z'))).toBe('20260203');
    expect(iso(parseDayStamp('20260203'))).toBe('2026-02-03T00:00:00.000Z');
    expect(parseDayStamp('20260230')).toBeNull();
    expect(parseDayStamp('2026023')).toBeNull();
    expect(parseDayStamp('default')).toBeNull();
  });

  it('tells the period of a partition from its width', () => {
    const from = at('2026-12-01T00:00:00Z');
    expect(periodOf({ from, to: nextPeriod(from, 'day') })).toBe('day');
    expect(periodOf({ from, to: nextPeriod(from, 'week') })).toBe('week');
    expect(periodOf({ from, to: nextPeriod(from, 'month') })).toBe('month');
  });
});
