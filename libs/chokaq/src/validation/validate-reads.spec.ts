import { ChokaQValidationError } from '../errors';
import { MAX_SERIES_POINTS } from './limits';
import { assertAuditLogQuery } from './validate-audit';
import {
  assertBatchResultsQuery,
  assertCountQuery,
  assertQueueOutcomesQuery,
  assertThroughputSeriesQuery,
} from './validate-reads';

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

describe('assertQueueOutcomesQuery', () => {
  it('takes 5 minutes by default, and any whole number of minutes up to a day', () => {
    expect(assertQueueOutcomesQuery(undefined)).toEqual({ minutes: 5 });
    expect(assertQueueOutcomesQuery({})).toEqual({ minutes: 5 });
    expect(assertQueueOutcomesQuery({ minutes: 1 })).toEqual({ minutes: 1 });
    expect(assertQueueOutcomesQuery({ minutes: 1_440 })).toEqual({ minutes: 1_440 });
  });

  it('refuses a window outside 1–1,440 whole minutes, and a query that is no object', () => {
    for (const minutes of [0, -5, 1_441, 1.5, Number.NaN, '5']) {
      expect(issuePaths(() => assertQueueOutcomesQuery({ minutes: minutes as number }))).toEqual([
        'query.minutes',
      ]);
    }
    expect(issuePaths(() => assertQueueOutcomesQuery(null as never))).toEqual(['query']);
  });
});

describe('assertAuditLogQuery: target', () => {
  it('takes an exact target of 1–4,000 characters, null when absent', () => {
    expect(assertAuditLogQuery({}).target).toBeNull();
    expect(assertAuditLogQuery({ target: 'job' }).target).toBe('job');
    expect(assertAuditLogQuery({ target: 'x'.repeat(4_000) }).target).toHaveLength(4_000);
  });

  it('refuses an empty, too long, NUL-bearing or non-string target with the other bad fields', () => {
    for (const target of ['', 'x'.repeat(4_001), 'a\u0000', 7]) {
      expect(issuePaths(() => assertAuditLogQuery({ target: target as string }))).toEqual([
        'target',
      ]);
    }
    expect(
      issuePaths(() => assertAuditLogQuery({ target: '', limit: 0, tag: 'x' } as never)).sort(),
    ).toEqual(['limit', 'tag', 'target']);
  });
});

describe('assertBatchResultsQuery', () => {
  const id = '0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B';

  it('takes 100 jobs from the start by default, and a cursor as the lower-case id', () => {
    expect(assertBatchResultsQuery(undefined)).toEqual({ after: '', limit: 100 });
    expect(assertBatchResultsQuery({ limit: 1_000, after: id })).toEqual({
      after: id.toLowerCase(),
      limit: 1_000,
    });
  });

  it('refuses every bad field at once, an unknown key, and a query that is no object', () => {
    expect(
      issuePaths(() =>
        assertBatchResultsQuery({ limit: 0, after: 'x', cursor: id } as unknown as {
          limit: number;
        }),
      ).sort(),
    ).toEqual(['query.after', 'query.cursor', 'query.limit']);
    for (const limit of [1_001, 1.5, '5']) {
      expect(issuePaths(() => assertBatchResultsQuery({ limit: limit as number }))).toEqual([
        'query.limit',
      ]);
    }
    expect(issuePaths(() => assertBatchResultsQuery({ after: '' }))).toEqual(['query.after']);
    expect(issuePaths(() => assertBatchResultsQuery(null as never))).toEqual(['query']);
    expect(issuePaths(() => assertBatchResultsQuery([] as never))).toEqual(['query']);
  });
});
