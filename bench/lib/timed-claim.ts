import { randomUUID } from 'node:crypto';
import type { HandledJobs } from '../../libs/chokaq/src/interfaces/job.interface';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';

/** What one timed claim took, how many rows it started, and what their archive took. */
export interface TimedClaim {
  ms: number;
  rows: number;
  /** The `archiveSucceeded` of the claimed rows, timed alone (ms). */
  archiveMs: number;
}

/**
 * One claim that starts up to `n` rows of `handled`, timed alone, then the archive of what it
 * took, timed alone too, so the next claim finds the queue as a steady drain leaves it. The claim
 * scenarios (groups, scale) read the claim's time, the scale scenario's Archive curve the archive's.
 */
export async function timedClaim(
  storage: JobStorage,
  workerId: string,
  n: number,
  handled: HandledJobs,
  budgetedQueues: string[],
): Promise<TimedClaim> {
  const leaseId = randomUUID();
  const started = performance.now();
  const claimed = await storage.fetchNextBatch({
    workerId,
    leaseId,
    limit: n,
    start: n,
    handled,
    budgetedQueues,
  });
  const ms = performance.now() - started;
  const completed = claimed.map((j) => ({ id: j.id, workerId, leaseId, durationMs: 1 }));
  const archiveStarted = performance.now();
  await storage.archiveSucceeded(completed);
  return { ms, rows: claimed.length, archiveMs: performance.now() - archiveStarted };
}
