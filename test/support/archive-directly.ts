import { randomUUID } from 'node:crypto';
import type { JobLease } from '../../libs/chokaq/src/interfaces/job.interface';
import type { JobStorage } from '../../libs/chokaq/src/storage';

/**
 * Claims and starts job `id` of `queue` and `type` (a type of its own, which no handler takes)
 * as `workerId`, each step checked, and returns its lease.
 */
async function start(
  storage: JobStorage,
  id: string,
  queue: string,
  type: string,
  workerId: string,
): Promise<JobLease> {
  const lease = { id, workerId, leaseId: randomUUID() };
  const claimed = await storage.fetchNextBatch({
    workerId,
    leaseId: lease.leaseId,
    limit: 1,
    handled: { queues: [], types: [{ queue, type }] },
  });
  if (claimed.length !== 1 || claimed[0].id !== id)
    throw new Error(`claimed ${claimed.length} rows, not ${id}`);
  if ((await storage.markAsProcessing([lease])).length !== 1)
    throw new Error(`${id} did not start`);
  return lease;
}

/** Archives the started job of `lease` as succeeded (with `result`, its JSON text), checked. */
async function archive(storage: JobStorage, lease: JobLease, result?: unknown): Promise<string> {
  const completion = { ...lease, durationMs: 12 };
  const archived = await storage.archiveSucceeded([
    result === undefined ? completion : { ...completion, result: JSON.stringify(result) },
  ]);
  if (archived.length !== 1) throw new Error(`${lease.id} was not archived`);
  return lease.id;
}

/**
 * Runs one job of `queue` (of a type of its own, which no handler takes) to the archive through the
 * storage, as a worker does: enqueue, claim, start, archive, each checked. With `result`, the
 * archive stores it as a handler that records its result would (its JSON text); without, none.
 * Resolves to the job's id.
 */
export async function archiveDirectly(
  storage: JobStorage,
  queue: string,
  workerId: string,
  result?: unknown,
): Promise<string> {
  const type = `${queue}.${randomUUID()}`;
  const { id } = await storage.enqueue({ queue, type, payload: { n: 1 } });
  return archive(storage, await start(storage, id, queue, type, workerId), result);
}

/**
 * Runs job `id`, already Pending in `queue` with a `type` no handler takes, to the archive: claim,
 * start, archive, each checked. Resolves to its id.
 */
export async function archivePending(
  storage: JobStorage,
  id: string,
  queue: string,
  type: string,
  workerId: string,
): Promise<string> {
  return archive(storage, await start(storage, id, queue, type, workerId));
}

/**
 * Runs one job of `queue` to the archive after a retry (claim, start, retry; claim, start,
 * archive), so it leaves one attempt row. Resolves to its id.
 */
export async function archivedAfterRetry(
  storage: JobStorage,
  queue: string,
  workerId: string,
): Promise<string> {
  const type = `${queue}.${randomUUID()}`;
  const { id } = await storage.enqueue({ queue, type, payload: { n: 1 } });
  const first = await start(storage, id, queue, type, workerId);
  if ((await storage.rescheduleForRetry(first, 0, 'Error: first try')) !== 1)
    throw new Error(`${id} was not retried`);
  return archive(storage, await start(storage, id, queue, type, workerId));
}

/**
 * Enqueues a job of `queue` that depends on the archived `dependency` and runs it to the archive:
 * an archived dependent with its edge. Resolves to its id.
 */
export async function archivedDependent(
  storage: JobStorage,
  queue: string,
  dependency: string,
  workerId: string,
): Promise<string> {
  const type = `${queue}.${randomUUID()}`;
  const { id } = await storage.enqueue({ queue, type, payload: {}, dependsOn: [dependency] });
  return archive(storage, await start(storage, id, queue, type, workerId));
}
