import type { CountQuery, QueueHealth } from '../interfaces/job-view.interface';

/** What the queue gauges report for one queue, from one read of the database. */
export interface QueueGaugeReading {
  queue: string;
  /** Pending jobs that are due now. */
  pending: number;
  /** How long the oldest due Pending job has waited since it became due, in ms (0: none). */
  oldestDueAgeMs: number;
  /** Rows of the queue in the DLQ. */
  dlqSize: number;
}

/** One read of every queue's gauges. */
export type QueueGaugeSource = () => Promise<QueueGaugeReading[]>;

/**
 * The reads the gauges take from the storage, stated structurally: the observability floor sits
 * below the storage and does not import it (`JobQueries` provides both).
 */
export interface QueueGaugeQueries {
  getQueueHealth(): Promise<ReadonlyArray<Pick<QueueHealth, 'queue' | 'duePending' | 'maxLagMs'>>>;
  countExactly(query: CountQuery): Promise<number>;
}

/**
 * The gauges' read, made of the operator reads that already exist: `getQueueHealth` (one statement
 * for every queue: due pending rows and the age of the oldest, live from the hot table) and one
 * `countExactly` of the DLQ per queue (an index-only count on the DLQ's queue index). The counts
 * run one after another, so a collection holds at most one connection of the pool.
 *
 * The DLQ count is the one part whose cost grows with the data (the queue's DLQ rows, read from an
 * index): retention bounds it, and `metrics.queueGauges: false` turns the gauges off.
 */
export function queueGaugeSource(queries: QueueGaugeQueries): QueueGaugeSource {
  return async () => {
    const health = await queries.getQueueHealth();
    const readings: QueueGaugeReading[] = [];
    for (const { queue, duePending, maxLagMs } of health) {
      const dlqSize = await queries.countExactly({ pillar: 'dlq', filter: { queue } });
      readings.push({ queue, pending: duePending, oldestDueAgeMs: maxLagMs, dlqSize });
    }
    return readings;
  };
}
