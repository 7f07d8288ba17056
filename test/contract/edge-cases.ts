import { randomUUID } from 'node:crypto';
import { ChokaQValidationError } from '../../libs/chokaq/src/errors';
import { JobLease, NewJob } from '../../libs/chokaq/src/interfaces/job.interface';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import {
  LIMITS,
  MAX_CLAIM,
  MAX_DLQ_BULK,
  MAX_ENQUEUE_MANY,
  MAX_PAGE_SIZE,
  MAX_RESCUE_BATCH,
  MAX_RETENTION_BATCH,
  MAX_SEARCH_LENGTH,
  MAX_TOP_ERRORS,
  MAX_WORKER_HOST,
  MAX_WORKER_LIST,
  MAX_WORKER_REPORT_ENTRIES,
  MAX_ZOMBIE_RETRY_RULES,
} from '../../libs/chokaq/src/validation/limits';
import { DEFAULT_PAYLOAD_MAX_BYTES } from '../../libs/chokaq/src/validation/validate-job';
import { newWorkerId, uniqueQueue } from './helpers';

/*
 * The limits of the validating edge, as calls: for each, the last accepted value and the path a
 * refusal names. edge.contract.spec.ts runs the table on every dialect against a database;
 * test/mssql/mssql-driver.spec.ts runs its refusals on SQL Server's dialect without a server (a
 * refusal comes before any SQL).
 */

/** A fencing token that owns no row: the edge checks its shape, the statement changes nothing. */
function lease(): JobLease {
  return { id: randomUUID(), workerId: newWorkerId(), leaseId: randomUUID() };
}

function leases(n: number): JobLease[] {
  const workerId = newWorkerId();
  return Array.from({ length: n }, () => ({ id: randomUUID(), workerId, leaseId: randomUUID() }));
}

function ids(n: number): string[] {
  return Array.from({ length: n }, () => randomUUID());
}

/** One limit: the call at its edge (accepted) and one past it (refused with `path`). */
export interface Edge {
  name: string;
  path: string;
  call(storage: JobStorage, value: number): Promise<unknown>;
  /** The last accepted value; `refused` defaults to `accepted + 1`. */
  accepted: number;
  refused?: number;
}

/** A job on a queue of its own; `fields` are merged in. */
function job(fields: Partial<NewJob> = {}): NewJob {
  return { queue: uniqueQueue('edge'), ...fields };
}

export const EDGES: Edge[] = [
  // ---------------------------------------------------------------- producer
  {
    name: 'enqueueMany: items per call',
    path: 'items',
    accepted: MAX_ENQUEUE_MANY,
    call: (s, n) => {
      const queue = uniqueQueue('many');
      return s.enqueueMany(Array.from({ length: n }, () => ({ queue })));
    },
  },
  {
    name: 'enqueue: queue name length',
    path: 'queue',
    accepted: LIMITS.queueName,
    call: (s, n) => s.enqueue({ queue: 'q'.repeat(n) }),
  },
  {
    name: 'enqueue: type length',
    path: 'type',
    accepted: LIMITS.type,
    call: (s, n) => s.enqueue(job({ type: 't'.repeat(n) })),
  },
  {
    name: 'enqueue: payload bytes (default payload.maxBytes)',
    path: 'payload',
    accepted: DEFAULT_PAYLOAD_MAX_BYTES,
    // A JSON string: its two quotes count.
    call: (s, n) => s.enqueue(job({ payload: 'x'.repeat(n - 2) })),
  },
  {
    name: 'enqueue: priority',
    path: 'priority',
    accepted: LIMITS.priority,
    call: (s, n) => s.enqueue(job({ priority: n })),
  },
  {
    name: 'enqueue: delayMs',
    path: 'delayMs',
    accepted: LIMITS.maxDelayMs,
    call: (s, n) => s.enqueue(job({ delayMs: n })),
  },
  {
    name: 'enqueue: tags per job',
    path: 'tags',
    accepted: LIMITS.tags,
    call: (s, n) => s.enqueue(job({ tags: Array.from({ length: n }, (_, i) => `t${i}`) })),
  },
  {
    name: 'enqueue: tag length',
    path: 'tags[0]',
    accepted: LIMITS.tag,
    call: (s, n) => s.enqueue(job({ tags: ['g'.repeat(n)] })),
  },
  {
    name: 'enqueue: idempotency key length',
    path: 'idempotencyKey',
    accepted: LIMITS.idempotencyKey,
    call: (s, n) => s.enqueue(job({ idempotencyKey: `${randomUUID()}`.padEnd(n, 'k') })),
  },
  {
    name: 'enqueue: createdBy length',
    path: 'createdBy',
    accepted: LIMITS.createdBy,
    call: (s, n) => s.enqueue(job({ createdBy: 'c'.repeat(n) })),
  },
  // ---------------------------------------------------------------- worker-owned transitions
  {
    name: 'fetchNextBatch: limit',
    path: 'limit',
    accepted: MAX_CLAIM,
    call: (s, n) =>
      s.fetchNextBatch({
        workerId: newWorkerId(),
        leaseId: randomUUID(),
        limit: n,
        handled: { queues: [uniqueQueue('claim')], types: [] },
      }),
  },
  {
    name: 'markAsProcessing: leases per call',
    path: 'leases',
    accepted: MAX_ENQUEUE_MANY,
    call: (s, n) => s.markAsProcessing(leases(n)),
  },
  {
    name: 'keepAlive: worker id length',
    path: 'workerId',
    accepted: 255,
    call: (s, n) => s.keepAlive('w'.repeat(n), [lease()]),
  },
  {
    name: 'release: delayMs',
    path: 'delayMs',
    accepted: LIMITS.maxDelayMs,
    call: (s, n) => s.release([lease()], n),
  },
  {
    name: 'reportProgress: percent',
    path: 'percent',
    accepted: 100,
    call: (s, n) => s.reportProgress(lease(), n),
  },
  {
    name: 'reportProgress: note length',
    path: 'note',
    accepted: LIMITS.progressNote,
    call: (s, n) => s.reportProgress(lease(), 50, 'n'.repeat(n)),
  },
  {
    name: 'rescheduleForRetry: delayMs',
    path: 'delayMs',
    accepted: LIMITS.maxDelayMs,
    call: (s, n) => s.rescheduleForRetry(lease(), n, 'boom'),
  },
  {
    name: 'cancel: ids per call',
    path: 'ids',
    accepted: MAX_ENQUEUE_MANY,
    call: (s, n) => s.cancel(ids(n)),
  },
  {
    name: 'cancel: actor length',
    path: 'actor',
    accepted: LIMITS.createdBy,
    call: (s, n) => s.cancel([randomUUID()], 'a'.repeat(n)),
  },
  // ---------------------------------------------------------------- DLQ → hot, purge
  {
    name: 'resurrectByFilter: max',
    path: 'max',
    accepted: MAX_DLQ_BULK,
    call: (s, n) => s.resurrectByFilter({ queue: uniqueQueue('none') }, n),
  },
  {
    name: 'purgeDlqByFilter: max',
    path: 'max',
    accepted: MAX_DLQ_BULK,
    call: (s, n) => s.purgeDlqByFilter({ queue: uniqueQueue('none') }, n),
  },
  {
    name: 'previewDlqFilter: max',
    path: 'max',
    accepted: MAX_DLQ_BULK,
    call: (s, n) => s.previewDlqFilter({ queue: uniqueQueue('none') }, n),
  },
  {
    name: 'resurrectMany: ids per call',
    path: 'ids',
    accepted: MAX_ENQUEUE_MANY,
    call: (s, n) => s.resurrectMany(ids(n)),
  },
  {
    name: 'purgeDlq: ids per call',
    path: 'ids',
    accepted: MAX_ENQUEUE_MANY,
    call: (s, n) => s.purgeDlq(ids(n)),
  },
  // ---------------------------------------------------------------- rescue
  {
    name: 'recoverAbandoned: limit',
    path: 'limit',
    accepted: MAX_RESCUE_BATCH,
    call: (s, n) => s.recoverAbandoned(3_600_000, n),
  },
  {
    name: 'archiveZombies: limit',
    path: 'limit',
    accepted: MAX_RESCUE_BATCH,
    call: (s, n) => s.archiveZombies(3_600_000, n),
  },
  {
    name: 'archiveZombies: retry rules per call',
    path: 'retryRules',
    accepted: MAX_ZOMBIE_RETRY_RULES,
    call: (s, n) =>
      s.archiveZombies(
        3_600_000,
        1,
        Array.from({ length: n }, (_, i) => ({ queue: `rule.${i}`, retry: true })),
      ),
  },
  // ---------------------------------------------------------------- workers
  {
    name: 'listWorkers: limit',
    path: 'limit',
    accepted: MAX_WORKER_LIST,
    call: (s, n) => s.listWorkers({ limit: n }),
  },
  {
    name: 'upsertWorker: handled queues per report',
    path: 'handled',
    accepted: MAX_WORKER_REPORT_ENTRIES,
    call: (s, n) =>
      s.upsertWorker({
        workerId: newWorkerId(),
        host: 'h'.repeat(MAX_WORKER_HOST),
        pid: 1,
        libraryVersion: '1.0.0',
        concurrency: 1,
        running: 0,
        handled: { queues: Array.from({ length: n }, (_, i) => `q${i}`), types: [] },
        circuits: {},
        draining: false,
        starting: true,
      }),
  },
  // ---------------------------------------------------------------- queues and retention
  {
    name: 'updateQueue: name length',
    path: 'name',
    accepted: LIMITS.queueName,
    call: (s, n) => s.updateQueue('u'.repeat(n), { isPaused: false }),
  },
  {
    name: 'applyRetention: largest batch',
    path: 'batchSize',
    accepted: MAX_RETENTION_BATCH,
    call: (s, n) =>
      s.applyRetention({
        archiveMs: 3_600_000,
        dlqMs: 3_600_000,
        metricsMs: 3_600_000,
        batchSize: n,
      }),
  },
  {
    name: 'applyRetention: smallest batch (0 deletes nothing, so it is refused)',
    path: 'batchSize',
    accepted: 1,
    refused: 0,
    call: (s, n) =>
      s.applyRetention({
        archiveMs: 3_600_000,
        dlqMs: 3_600_000,
        metricsMs: 3_600_000,
        batchSize: n,
      }),
  },
  // ---------------------------------------------------------------- reads
  {
    name: 'listActive: limit',
    path: 'limit',
    accepted: MAX_PAGE_SIZE,
    call: (s, n) => s.listActive({ limit: n, filter: { queue: uniqueQueue('read') } }),
  },
  {
    name: 'listArchive: smallest limit (0 rows is no page)',
    path: 'limit',
    accepted: 1,
    refused: 0,
    call: (s, n) => s.listArchive({ limit: n, filter: { queue: uniqueQueue('read') } }),
  },
  {
    name: 'listDlq: search length',
    path: 'filter.search',
    accepted: MAX_SEARCH_LENGTH,
    call: (s, n) => s.listDlq({ filter: { search: 's'.repeat(n) } }),
  },

  {
    name: 'getTopDlqErrors: limit',
    path: 'limit',
    accepted: MAX_TOP_ERRORS,
    call: (s, n) => s.getTopDlqErrors(n, { queue: uniqueQueue('none') }),
  },
];

/** The paths of the ChokaQValidationError `promise` rejects with; fails if it resolves or throws otherwise. */
export async function refusedPaths(promise: Promise<unknown>): Promise<string[]> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(ChokaQValidationError);
  return (outcome as ChokaQValidationError).issues.map((issue) => issue.path);
}
