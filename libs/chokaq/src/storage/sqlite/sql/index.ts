/**
 * All SQL text of the SQLite dialect, by section: one file per section, each statement named after
 * the `JobStorage` method it serves (a suffix for a step: `archiveSucceeded`,
 * `archiveSucceededDelete`), the names PostgreSQL uses where the operation is the same. The fixed
 * statements are built once per table prefix (validated configuration, never user input) and
 * prepared once per connection (`sqlite.connection.ts`); their values are named parameters
 * (`@name`), so nothing else binds them. Call sites import this index
 * (`import * as SQL from './sql'`); the shared fragments and filters stay inside the folder but for
 * the clock and the table names.
 */
import { auditReadStatements, auditStatements } from './audit';
import { batchReadStatements, batchStatements } from './batches';
import { claimStatements } from './claim';
import { dedupeStatements } from './dedupe';
import { dependencyReadStatements, dependencyStatements } from './dependencies';
import { enqueueStatements } from './enqueue';
import { countingStatements, sqliteTables } from './fragments';
import { lifecycleStatements } from './lifecycle';
import { moveStatements } from './moves';
import { pendingStatements } from './pending';
import { queueStatements } from './queues';
import { readStatements } from './reads';
import { recurringStatements } from './recurring';
import { rescueStatements } from './rescue';
import { retentionStatements } from './retention';
import { workerOwnedStatements } from './worker-owned';
import { workerReadStatements, workerStatements } from './workers';

export { SQLITE_NOW_MS, SqliteTables, sqliteTables } from './fragments';
export { SqlWhere, countWhere, dlqWhere } from './filters';
export { ListWhere, listJobs, listWhere } from './lists';
export { resurrectByFilter } from './moves';
export {
  countExactly,
  getTopDlqErrors,
  previewDlqFilterCount,
  previewDlqFilterSample,
} from './reads';
export { purgeDlqByFilter } from './retention';

/**
 * The fixed statements of the write half and the lifecycle (`sqlite-job-store.ts`), for one table
 * prefix, by the name of the method (and step) they serve.
 */
export function jobStoreStatements(p: string) {
  const tables = sqliteTables(p);
  return {
    tables,
    ...lifecycleStatements(tables),
    ...enqueueStatements(tables),
    ...batchStatements(tables),
    ...dependencyStatements(tables),
    ...dedupeStatements(tables),
    ...claimStatements(tables),
    ...workerOwnedStatements(tables),
    ...moveStatements(tables),
    ...pendingStatements(tables),
    ...countingStatements(tables),
    ...rescueStatements(tables),
    ...queueStatements(tables),
    ...retentionStatements(tables),
    ...auditStatements(tables),
    ...workerStatements(tables),
    ...recurringStatements(tables),
  };
}

/** The write half's statements of one prefix. */
export type JobStoreStatements = ReturnType<typeof jobStoreStatements>;

/** The fixed statements of the reads (`sqlite-job-queries.ts`), for one table prefix. */
export function jobQueriesStatements(p: string) {
  const tables = sqliteTables(p);
  return {
    tables,
    ...readStatements(tables, p),
    ...workerReadStatements(tables),
    ...auditReadStatements(tables),
    ...batchReadStatements(tables),
    ...dependencyReadStatements(tables),
    dedupeOfJob: dedupeStatements(tables).dedupeOfJob,
  };
}

/** The reads' statements of one prefix. */
export type JobQueriesStatements = ReturnType<typeof jobQueriesStatements>;
