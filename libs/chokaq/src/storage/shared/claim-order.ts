import type { HotJob } from '../../interfaces/job.interface';

/**
 * Claimed rows in claim order, for a claim whose `RETURNING` has none: priority descending, then
 * due time (`scheduledAtUtc`, else `enqueuedAtUtc`), then id compared code unit by code unit, as
 * the claim's own `ORDER BY … id COLLATE "C"` (PostgreSQL) and SQLite's BINARY collation compare
 * it. A `localeCompare` would cost an ICU comparison per pair and could disagree with them.
 */
export function claimOrder(a: HotJob, b: HotJob): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  const dueA = (a.scheduledAtUtc ?? a.enqueuedAtUtc).getTime();
  const dueB = (b.scheduledAtUtc ?? b.enqueuedAtUtc).getTime();
  if (dueA !== dueB) return dueA - dueB;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
