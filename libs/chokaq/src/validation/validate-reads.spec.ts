import { ChokaQValidationError } from '../errors';
import { MAX_SERIES_POINTS } from './limits';
import { assertCountQuery, assertThroughputSeriesQuery } from './validate-reads';

function issuePaths(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ChokaQValidationError);
    return (error as ChokaQValidationError).issues.map((i) => i.path);
  }
  throw new Error('expected a validation error');
}

describe('assertThroughputSeriesQuery', () => {
  const to = new Date('2026-01-02T00:00:00.000Z');
  const from = new Date(to.getTime() - 3_600_000 + 12_345);

  it('rounds `from` down to its minute and counts the points', () => {
    const q = assertThroughputSeriesQuery({ from, to, stepMs: 600_000, queue: 'q' });
    expect(q.from.toISOString()).toBe('2026-01-01T23:00:00.000Z');
    expect(q).toMatchObject({ queue: 'q', stepMs: 600_000, points: 6 });
    expect(assertThroughputSeriesQuery({ from, to, stepMs: 60_000 })).toMatchObject({
      queue: null,
      points: 60,
    });
  });

  it('reports every bad field at once', () => {
    expect(
      issuePaths(() =>
        assertThroughputSeriesQuery({
          from: new Date(Number.NaN),
          to: 'soon' as never,
          stepMs: 1_000,
          queue: '',
        }),
      ).sort(),
    ).toEqual(['query.from', 'query.queue', 'query.stepMs', 'query.to']);
  });

  it('refuses a range that is empty or has too many points', () => {
    expect(issuePaths(() => assertThroughputSeriesQuery({ from: to, to, stepMs: 60_000 }))).toEqual(
      ['query.to'],
    );
    const far = new Date(to.getTime() - (MAX_SERIES_POINTS + 1) * 60_000);
    expect(
      issuePaths(() => assertThroughputSeriesQuery({ from: far, to, stepMs: 60_000 })),
    ).toEqual(['query.stepMs']);
    expect(issuePaths(() => assertThroughputSeriesQuery(undefined as never))).toEqual(['query']);
  });
});

describe('assertCountQuery', () => {
  it('accepts each pillar with or without a filter', () => {
    expect(assertCountQuery({ pillar: 'hot' })).toEqual({ pillar: 'hot', filter: {} });
    expect(assertCountQuery({ pillar: 'dlq', filter: { queue: 'q' } })).toEqual({
      pillar: 'dlq',
      filter: { queue: 'q' },
    });
  });

  it('refuses an unknown pillar and a bad filter, with paths under query', () => {
    expect(
      issuePaths(() =>
        assertCountQuery({ pillar: 'attic', filter: { from: 'yesterday' } } as never),
      ).sort(),
    ).toEqual(['query.filter.from', 'query.pillar']);
  });
});
