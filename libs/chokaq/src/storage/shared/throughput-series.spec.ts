import type { CheckedSeriesQuery } from '../../validation/validate-reads';
import { Outcome } from './outcome';
import { SeriesRow, startLagOf, throughputSeries } from './throughput-series';

const FROM = new Date('2026-01-01T00:00:00.000Z');
const QUERY: CheckedSeriesQuery = {
  queue: null,
  from: FROM,
  to: new Date(FROM.getTime() + 3 * 300_000),
  stepMs: 300_000,
  points: 3,
};

function row(slot: number, outcome: Outcome, fields: Partial<SeriesRow> = {}): SeriesRow {
  return {
    slot,
    outcome,
    count: 0,
    durationCount: 0,
    totalDurationMs: 0,
    lagCount: 0,
    lagSumMs: 0,
    lagMaxMs: 0,
    ...fields,
  };
}

describe('throughputSeries', () => {
  it('fills every step, sums outcomes, averages run time over succeeded and failed runs, and carries the start lag', () => {
    const points = throughputSeries(QUERY, [
      row(0, Outcome.Succeeded, { count: 3, durationCount: 3, totalDurationMs: 60 }),
      row(0, Outcome.Failed, { count: 1, durationCount: 1, totalDurationMs: 40 }),
      row(0, Outcome.Cancelled, { count: 2 }),
      row(0, Outcome.Retried, { count: 4 }),
      row(0, Outcome.Started, { count: 5, lagCount: 5, lagSumMs: 500, lagMaxMs: 300 }),
      row(2, Outcome.Started, { count: 1, lagCount: 1, lagSumMs: 7, lagMaxMs: 7 }),
      // Rows out of range or of an unknown outcome are ignored.
      row(3, Outcome.Succeeded, { count: 9 }),
      row(1, 42 as Outcome, { count: 9 }),
    ]);
    expect(points.map((p) => p.at.toISOString())).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:05:00.000Z',
      '2026-01-01T00:10:00.000Z',
    ]);
    expect(points[0]).toEqual({
      at: FROM,
      succeeded: 3,
      failed: 1,
      retried: 4,
      cancelled: 2,
      meanDurationMs: 25,
      started: 5,
      meanStartLagMs: 100,
      maxStartLagMs: 300,
    });
    expect(points[1]).toMatchObject({
      succeeded: 0,
      started: 0,
      meanDurationMs: null,
      meanStartLagMs: null,
      maxStartLagMs: null,
    });
    expect(points[2]).toMatchObject({ started: 1, meanStartLagMs: 7, maxStartLagMs: 7 });
  });

  it('startLagOf: null means and maxima when nothing started', () => {
    expect(startLagOf(0, 0, 0)).toEqual({ started: 0, meanMs: null, maxMs: null });
    expect(startLagOf(4, 100, 60)).toEqual({ started: 4, meanMs: 25, maxMs: 60 });
  });
});
