import { randomUUID } from 'node:crypto';
import type { HandledJobs } from '../../libs/chokaq/src/interfaces/job.interface';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';

/** What one timed claim took, and how many rows it started. */
export interface TimedClaim {
  ms: number;
  rows: number;
}

/**
 * One claim that starts up to `n` rows of `handled`, timed alone, then (untimed) the archive of
 * what it took, so the next claim finds the queue as a steady drain leaves it. The claim scenarios
 * (groups, scale) call it in their loops.
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
  await storage.archiveSucceeded(
    claimed.map((j) => ({ id: j.id, workerId, leaseId, durationMs: 1 })),
  );
  return { ms, rows: claimed.length };
}
