import { NO_REASON, Outcome } from '../shared/outcome';
import type { Row } from './sqlite.connection';

/*
 * Where a SQLite operation counts (lifetime counters, metric buckets: outcomes, retries, starts
 * with their lag), the rows it captured are grouped per queue here, in JavaScript, and written by
 * one upsert each inside the operation's transaction (`addCounters`, `addBuckets` of
 * `sql/`), so a batch of n jobs updates each stats row and bucket once, not n times.
 * PostgreSQL and SQL Server group in SQL.
 */

/** Per-queue counter increments of one batch. */
export interface CounterDelta {
  queue: string;
  succeeded: number;
  failed: number;
  cancelled: number;
  retried: number;
  /** Open-circuit deferrals. */
  deferred: number;
  resurrected: number;
}

/** Per-(queue, outcome, reason) metric increments of one batch. */
export interface BucketDelta {
  queue: string;
  outcome: Outcome;
  failure_reason: number;
  completed: number;
  duration_count: number;
  total_duration_ms: number;
  max_duration_ms: number;
  /** Start rows only (`Outcome.Started`): starts, summed and longest start lag. */
  lag_count: number;
  lag_sum_ms: number;
  lag_max_ms: number;
}

function emptyDelta(queue: string, outcome: Outcome, failureReason: number): BucketDelta {
  return {
    queue,
    outcome,
    failure_reason: failureReason,
    completed: 0,
    duration_count: 0,
    total_duration_ms: 0,
    max_duration_ms: 0,
    lag_count: 0,
    lag_sum_ms: 0,
    lag_max_ms: 0,
  };
}

/** Counter increments grouped by queue: each stats row is updated once per batch. */
export function countersByQueue(
  rows: Row[],
  field: Exclude<keyof CounterDelta, 'queue'>,
): CounterDelta[] {
  const byQueue = new Map<string, CounterDelta>();
  for (const row of rows) {
    const queue = String(row.queue);
    let delta = byQueue.get(queue);
    if (!delta) {
      delta = {
        queue,
        succeeded: 0,
        failed: 0,
        cancelled: 0,
        retried: 0,
        deferred: 0,
        resurrected: 0,
      };
      byQueue.set(queue, delta);
    }
    delta[field] += 1;
  }
  return [...byQueue.values()];
}

/** Metric increments grouped by queue (one outcome and reason per batch). */
export function bucketsOf(rows: Row[], outcome: Outcome, failureReason: number): BucketDelta[] {
  const byQueue = new Map<string, BucketDelta>();
  for (const row of rows) {
    const queue = String(row.queue);
    let delta = byQueue.get(queue);
    if (!delta) {
      delta = emptyDelta(queue, outcome, failureReason);
      byQueue.set(queue, delta);
    }
    delta.completed += 1;
    const duration = row.duration_ms;
    if (typeof duration === 'number') {
      delta.duration_count += 1;
      delta.total_duration_ms += duration;
      delta.max_duration_ms = Math.max(delta.max_duration_ms, duration);
    }
  }
  return [...byQueue.values()];
}

/**
 * Start buckets (`Outcome.Started`) of rows just started, grouped by queue: each row's `lag_ms`
 * (from due to start, computed by the statement that started it from the database clock) is
 * counted, summed and maxed.
 */
export function startBucketsOf(rows: Row[]): BucketDelta[] {
  const byQueue = new Map<string, BucketDelta>();
  for (const row of rows) {
    const queue = String(row.queue);
    let delta = byQueue.get(queue);
    if (!delta) {
      delta = emptyDelta(queue, Outcome.Started, NO_REASON);
      byQueue.set(queue, delta);
    }
    const lag = Math.max(0, Number(row.lag_ms));
    delta.completed += 1;
    delta.lag_count += 1;
    delta.lag_sum_ms += lag;
    delta.lag_max_ms = Math.max(delta.lag_max_ms, lag);
  }
  return [...byQueue.values()];
}

/**
 * The start lag of a row a claim just started (`RETURNING *`), in ms: its `started_at_utc` (now,
 * database clock) minus when it became due.
 */
export function claimedStartLag(row: Row): number {
  const due = row.scheduled_at_utc ?? row.enqueued_at_utc;
  return Math.max(0, Number(row.started_at_utc) - Number(due));
}
