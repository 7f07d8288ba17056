import { Outcome } from '../shared/outcome';
import type { Row } from './sqlite.connection';

/*
 * Where a SQLite operation counts (lifetime counters, metric buckets), the rows it captured are
 * grouped per queue here, in JavaScript, and written by one upsert each inside the operation's
 * transaction (`addCounters`, `addBuckets` of `sqlite.sql.ts`), so a batch of n jobs updates each
 * stats row and bucket once, not n times. PostgreSQL and SQL Server group in SQL.
 */

/** Per-queue counter increments of one batch. */
export interface CounterDelta {
  queue: string;
  succeeded: number;
  failed: number;
  cancelled: number;
  retried: number;
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
      delta = { queue, succeeded: 0, failed: 0, cancelled: 0, retried: 0, resurrected: 0 };
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
      delta = {
        queue,
        outcome,
        failure_reason: failureReason,
        completed: 0,
        duration_count: 0,
        total_duration_ms: 0,
        max_duration_ms: 0,
      };
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
