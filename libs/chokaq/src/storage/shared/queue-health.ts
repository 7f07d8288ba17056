import type { QueueHealth } from '../../interfaces/job-view.interface';
import { startLagOf } from './throughput-series';

/** What each dialect's health read returns for one queue, as numbers. */
export interface QueueHealthRow {
  queue: string;
  maxWorkers: number | null;
  /** Fetched + Processing rows. */
  active: number;
  /** Due pending rows, the sum of their waits since due, and the longest (0 without any). */
  duePending: number;
  lagSumMs: number;
  maxLagMs: number;
  /**
   * Rows an open circuit holds (not due yet), the sum of their waits since first due, and the
   * longest (0 without any).
   */
  heldPending: number;
  heldLagSumMs: number;
  heldMaxLagMs: number;
  /** The soonest of the held rows' due times; null without any. */
  heldUntilUtc: Date | null;
  /** Start buckets of the recent minutes: count, sum and longest start lag. */
  startLagCount: number;
  startLagSumMs: number;
  startLagMaxMs: number;
}

/**
 * One queue's {@link QueueHealth}: a row held by an open circuit waits as a due one does, so the
 * mean and the longest wait are over both kinds. Waits below zero (a clock read between two
 * statements of a dialect) count as zero.
 */
export function queueHealthOf(r: QueueHealthRow): QueueHealth {
  const waiting = r.duePending + r.heldPending;
  const lagSumMs = r.lagSumMs + r.heldLagSumMs;
  return {
    queue: r.queue,
    duePending: r.duePending,
    heldPending: r.heldPending,
    heldUntilUtc: r.heldUntilUtc,
    avgLagMs: waiting > 0 ? Math.max(0, Math.round(lagSumMs / waiting)) : 0,
    maxLagMs: Math.max(0, Math.round(r.maxLagMs), Math.round(r.heldMaxLagMs)),
    active: r.active,
    maxWorkers: r.maxWorkers,
    // A zero budget that is in use (or not) counts as fully saturated: nothing more can start.
    saturation: r.maxWorkers === null ? null : r.maxWorkers === 0 ? 1 : r.active / r.maxWorkers,
    startLag: startLagOf(r.startLagCount, r.startLagSumMs, r.startLagMaxMs),
  };
}
