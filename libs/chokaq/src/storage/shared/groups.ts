/**
 * Groups (`NewJob.group`): what every dialect's grouped claim shares. The claim itself is SQL of
 * each dialect (`sql/claim.ts`); see its `fetchNextGroupedBatch`.
 */
import type { QueueGroupLoad } from '../../interfaces/job.interface';

/**
 * The most groups one grouped claim visits on its walk: four per row it may start, at least 64,
 * at most 1,000. The walk stops earlier once the groups it visited have room for every row; the
 * bound matters only when many groups with Pending rows have none (at their concurrency, out of
 * rate, or with nothing due yet), and then the next claim goes on from where this one stopped.
 */
export function groupVisits(start: number): number {
  return Math.min(1_000, Math.max(64, 4 * start));
}

/** Maps a row of a dialect's `getQueueGroups` (columns `group_key`, `pending`, `running`). */
export function mapQueueGroupRow(r: Record<string, unknown>): QueueGroupLoad {
  return { group: String(r.group_key), pending: Number(r.pending), running: Number(r.running) };
}
