/**
 * Every T-SQL batch of the SQL Server dialect, by section: one file per section, each builder named
 * after the method it serves and returning its text with its parameters (`MssqlStatement`). Call
 * sites import this index (`import * as SQL from './sql'`); the shared fragments and filters stay
 * inside the folder, as do the batches' settle and reopen steps and the dependencies' settle and
 * remove steps, which are parts of the moves, purges and retention.
 */
export { MssqlStatement } from '../mssql-params';
export * from './audit';
export {
  batchHotJobIds,
  getBatch,
  getBatchResults,
  insertBatch,
  type MssqlNewBatch,
} from './batches';
export * from './claim';
export * from './dedupe';
export {
  checkDone,
  checkTake,
  getDependencies,
  insertDependencies,
  locateDependencies,
} from './dependencies';
export * from './enqueue';
export type { MssqlLease, MssqlSchema } from './fragments';
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
