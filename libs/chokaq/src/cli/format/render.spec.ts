import { formatDuration, formatPercent } from './format-values';
import { cellText, renderJson, renderView } from './render';
import { fields, table, text } from './view';

describe('rendering', () => {
  it('lays out a table: headers, alignment, cut cells, one line per row', () => {
    const out = renderView([
      table(
        [{ header: 'ID' }, { header: 'N', align: 'right' }, { header: 'ERROR', maxWidth: 8 }],
        [
          ['a', 1, 'short'],
          ['bbb', 100, 'a much longer\nerror text'],
        ],
      ),
    ]);
    expect(out).toBe(['ID     N  ERROR', 'a      1  short', 'bbb  100  a much…', ''].join('\n'));
  });

  it('prints (none) for an empty table and separates blocks by a blank line', () => {
    expect(
      renderView([text('Title'), table([{ header: 'A' }], []), fields('F', [['k', null]])]),
    ).toBe('Title\n\n(none)\n\nF\n  k  -\n');
  });

  it('prints cells: dates in UTC to the second, yes/no, - for nothing', () => {
    expect(cellText(new Date('2026-01-02T03:04:05.678Z'))).toBe('2026-01-02 03:04:05Z');
    expect(cellText(true)).toBe('yes');
    expect(cellText(undefined)).toBe('-');
    expect(cellText('')).toBe('-');
    expect(cellText(0)).toBe('0');
  });

  it('prints JSON as one document with ISO dates', () => {
    expect(JSON.parse(renderJson({ at: new Date(0) }))).toEqual({ at: '1970-01-01T00:00:00.000Z' });
  });

  it('formats durations and percentages for people', () => {
    expect(formatDuration(850)).toBe('850ms');
    expect(formatDuration(12_500)).toBe('12.5s');
    expect(formatDuration(30_000)).toBe('30s');
    expect(formatDuration(245_000)).toBe('4m 05s');
    expect(formatDuration(12_000_000)).toBe('3h 20m');
    expect(formatDuration(187_200_000)).toBe('2d 4h');
    expect(formatDuration(null)).toBe('-');
    expect(formatPercent(0.5)).toBe('50%');
    expect(formatPercent(null)).toBe('-');
  });
});
