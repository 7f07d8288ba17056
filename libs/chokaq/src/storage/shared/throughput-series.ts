import type { StartLag, ThroughputPoint } from '../../interfaces/job-view.interface';
import type { CheckedSeriesQuery } from '../../validation/validate-reads';
import { Outcome } from './outcome';

/**
 * One row a dialect's series statement returns: the sums of the metric buckets of one outcome
 * whose `bucket_utc` falls in step `slot` (`floor((bucket − from) / step)`). Steps without
 * buckets have no row; {@link throughputSeries} fills them with zeros.
 */
export interface SeriesRow {
  slot: number;
  outcome: number;
  /** `completed_count`: runs of the outcome (starts, for `Outcome.Started`). */
  count: number;
  durationCount: number;
  totalDurationMs: number;
  lagCount: number;
  lagSumMs: number;
  lagMaxMs: number;
}

/** A mean, or null when nothing was counted. */
function mean(sum: number, count: number): number | null {
  return count > 0 ? sum / count : null;
}

/**
 * The dense series: one point per step from `query.from`, `query.points` of them, zeros where no
 * bucket fell. Rows of an unknown outcome (none today) and of a slot outside the range are ignored.
 */
export function throughputSeries(
  query: CheckedSeriesQuery,
  rows: readonly SeriesRow[],
): ThroughputPoint[] {
  const sums = Array.from({ length: query.points }, () => ({
    succeeded: 0,
    failed: 0,
    retried: 0,
    cancelled: 0,
    durationCount: 0,
    totalDurationMs: 0,
    started: 0,
    lagCount: 0,
    lagSumMs: 0,
    lagMaxMs: 0,
  }));
  for (const row of rows) {
    const s = sums[row.slot];
    if (!s || !Number.isInteger(row.slot)) continue;
    switch (row.outcome) {
      case Outcome.Succeeded:
        s.succeeded += row.count;
        break;
      case Outcome.Failed:
        s.failed += row.count;
        break;
      case Outcome.Cancelled:
        s.cancelled += row.count;
        break;
      case Outcome.Retried:
        s.retried += row.count;
        break;
      case Outcome.Started:
        s.started += row.count;
        break;
      default:
        continue;
    }
    // Runs that ended with a time (succeeded, failed) make the mean duration; the start rows
    // carry the lag.
    if (row.outcome === Outcome.Succeeded || row.outcome === Outcome.Failed) {
      s.durationCount += row.durationCount;
      s.totalDurationMs += row.totalDurationMs;
    }
    s.lagCount += row.lagCount;
    s.lagSumMs += row.lagSumMs;
    s.lagMaxMs = Math.max(s.lagMaxMs, row.lagMaxMs);
  }
  const from = query.from.getTime();
  return sums.map((s, i) => ({
    at: new Date(from + i * query.stepMs),
    succeeded: s.succeeded,
    failed: s.failed,
    retried: s.retried,
    cancelled: s.cancelled,
    meanDurationMs: mean(s.totalDurationMs, s.durationCount),
    started: s.started,
    meanStartLagMs: mean(s.lagSumMs, s.lagCount),
    maxStartLagMs: s.lagCount > 0 ? s.lagMaxMs : null,
  }));
}

/** The {@link StartLag} of summed start buckets (`lag_count`, `lag_sum_ms`, `lag_max_ms`). */
export function startLagOf(lagCount: number, lagSumMs: number, lagMaxMs: number): StartLag {
  return {
    started: lagCount,
    meanMs: mean(lagSumMs, lagCount),
    maxMs: lagCount > 0 ? lagMaxMs : null,
  };
}
