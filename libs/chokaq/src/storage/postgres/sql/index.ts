/**
 * Every SQL statement of the PostgreSQL dialect, by section: one file per section, each statement
 * named after the method it serves and exported with the function that binds its values. Call
 * sites import this index (`import * as SQL from './sql'`); the shared fragments and filters stay
 * inside the folder but for the schema's identifiers.
 */
import {
  fetchNextBatch,
  fetchNextBatchClaimed,
  fetchNextGroupedBatch,
  fetchNextBatchLockBudgets,
  fetchNextBatchRateState,
} from './claim';
import { dedupeHolder, dedupeMove, dedupeReplace, dedupeTake } from './dedupe';
import { enqueue, enqueueHolders } from './enqueue';
import { archiveSucceeded, cancel, cancelRequest } from './moves';
import { archiveZombies, recoverAbandoned } from './rescue';
import {
  keepAlive,
  markAsProcessing,
  release,
  reportProgress,
  rescheduleForRetry,
  unstart,
} from './worker-owned';
import { upsertWorker } from './workers';

export * from './audit';
export * from './batches';
export * from './claim';
export * from './dedupe';
export * from './dependencies';
export * from './enqueue';
export {
  DlqMoveShape,
  METRIC_SEAL_SETTING,
  cancelChannel,
  enqueueChannel,
  quoteSchema,
} from './fragments';
export * from './lifecycle';
export * from './lists';
export * from './moves';
export * from './partitions';
export * from './pending';
export * from './queues';
export * from './reads';
export * from './recurring';
export * from './rescue';
export * from './retention';
export * from './worker-owned';
export * from './workers';

/**
 * The store's fixed statements, built once per schema, each under the name of the method it serves
 * (a suffix for a step of that method). Being fixed texts, they are the ones that run as named
 * prepared statements (`postgres.connection.ts`); the statements built per call are not.
 */
export const hotPathStatements = (
  s: string,
  notifyChannel: string | null,
  cancelNotifyChannel: string | null,
) => ({
  enqueue: enqueue(s, notifyChannel),
  enqueueWaiting: enqueue(s, null, true),
  enqueueHolders: enqueueHolders(s),
  dedupeTake: dedupeTake(s),
  dedupeHolder: dedupeHolder(s),
  dedupeReplace: dedupeReplace(s),
  dedupeMove: dedupeMove(s),
  fetchNextBatch: fetchNextBatch(s),
  fetchNextBatchUnbudgeted: fetchNextBatch(s, 'unbudgeted'),
  fetchNextBatchLockBudgets: fetchNextBatchLockBudgets(s),
  fetchNextBatchClaimed: fetchNextBatchClaimed(s),
  fetchNextBatchRateState: fetchNextBatchRateState(s),
  fetchNextGroupedBatch: fetchNextGroupedBatch(s),
  fetchNextGroupedBatchAlone: fetchNextGroupedBatch(s, 'alone'),
  markAsProcessing: markAsProcessing(s),
  keepAlive: keepAlive(s),
  release: release(s),
  unstart: unstart(s),
  reportProgress: reportProgress(s),
  rescheduleForRetry: rescheduleForRetry(s),
  archiveSucceeded: archiveSucceeded(s),
  archiveSucceededWithResults: archiveSucceeded(s, true),
  cancel: cancel(s),
  cancelRequest: cancelRequest(s, cancelNotifyChannel),
  recoverAbandoned: recoverAbandoned(s),
  archiveZombies: archiveZombies(s),
  upsertWorker: upsertWorker(s),
});
