import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MssqlStatement } from '../../libs/chokaq/src/storage/mssql/mssql-params';
import { catalogue } from './support/statements';

/**
 * Golden files pin the exact T-SQL text and parameter list of the claim (and its retry read-back)
 * and of every move (and the enqueue paths that carry the idempotency-key locking), of the
 * Workers table's upsert and read and the progress write, of the three shapes of a list page, of
 * the archive move of a batch that stores results (pinned apart from the batch without results,
 * whose text stored results leave unchanged), of the statements that start runs or retry them
 * (they write metric buckets too), of the dashboard reads, of the attempt history's read and
 * of the deletes that take it with a job (purge, retention), of the dedupe keys' statements (a
 * keyed enqueue's steps, with their key locks; the read of a job's key; their retention), and of
 * groups (the claim with its grouped part, the grouped queues last and first; the group limits'
 * update; the busiest groups; the groups' retention), and of batches (the batch's row with its
 * callbacks, in ChokaQ's transaction and in a caller's; a chunk of its jobs; its reads; the moves
 * pinned above carry the settle step, the resurrect the reopen step), and of dependencies (a chunk
 * of Waiting jobs, the marking of their dependencies, their edges, the check pass's steps and its
 * move of a Waiting job, a job's edges; the moves pinned above carry the settle step, the purge
 * and the retention the remove step), and of a partitioned Archive and DLQ (the layout read, each
 * table's conversion, the boundaries made ahead, the removal of an expired partition, whose partition
 * DDL is dynamic SQL the grammar test cannot parse, so these files are its only pin, and the
 * row-by-row retention outside the periods' partitions). A change to any of them must be a conscious act: review the
 * diff, then regenerate with
 *
 *   CHOKAQ_UPDATE_GOLDEN=1 npx jest test/mssql/tsql-golden && npx prettier --write test/golden/mssql
 *
 * and commit the changed files under test/golden/mssql/ together with the code. The SQL is
 * compared byte for byte; the parameter files are compared as parsed JSON (Prettier formats them).
 */
const GOLDEN_DIR = join(__dirname, '..', 'golden', 'mssql');
const UPDATE = process.env.CHOKAQ_UPDATE_GOLDEN === '1';

const PINNED: ReadonlyArray<[file: string, name: string]> = [
  ['claim', 'fetchNextBatch'],
  ['claimed-by-lease', 'fetchNextBatchClaimed'],
  ['archive-succeeded', 'archiveSucceeded'],
  ['archive-succeeded-in-transaction', 'archiveSucceeded.inCallerTransaction'],
  ['archive-succeeded-results', 'archiveSucceeded [results]'],
  ['archive-succeeded-in-transaction-results', 'archiveSucceeded.inCallerTransaction [results]'],
  ['move-to-dlq-lease', 'moveToDlq [lease]'],
  ['move-to-dlq-admin', 'moveToDlq [admin]'],
  ['cancel', 'cancel'],
  ['resurrect-edits', 'resurrect [all]'],
  ['update-pending', 'updatePending [all]'],
  ['update-pending-run-now', 'updatePending [run now]'],
  ['resurrect-by-filter', 'resurrectByFilter [no filter]'],
  ['archive-zombies', 'archiveZombies'],
  ['enqueue-key', 'enqueue [key=true delay]'],
  ['enqueue-many', 'enqueueMany [keys]'],
  ['claim-recurring-slot', 'claimRecurringSlot'],
  ['trigger-recurring-job', 'triggerRecurringJob'],
  ['upsert-worker', 'upsertWorker [starting]'],
  ['list-workers', 'listWorkers'],
  ['report-progress', 'reportProgress'],
  ['list-active', 'listJobs.hot [newest filter queue]'],
  ['list-archive-cursor', 'listJobs.archive [oldest from a cursor filter queue]'],
  ['list-dlq-search', 'listJobs.dlq [filter queue,search]'],
  ['claim-start', 'fetchNextBatch [start]'],
  ['mark-as-processing', 'markAsProcessing'],
  ['reschedule-for-retry', 'rescheduleForRetry'],
  ['summary', 'getSummary'],
  ['queue-stats', 'getQueueStats'],
  ['queue-health', 'getQueueHealth'],
  ['throughput-series', 'getThroughputSeries [one queue]'],
  ['top-errors', 'getTopDlqErrors [queue]'],
  ['count-exactly', 'countExactly.dlq [filter queue]'],
  ['queue-outcomes', 'getQueueOutcomes [5 minutes]'],
  ['audit-log-target', 'getAuditLog [target from a cursor]'],
  ['get-job-attempts', 'getJobAttempts'],
  ['purge-dlq', 'purgeDlq'],
  ['apply-retention-archive', 'applyRetention [archive]'],
  ['update-queue', 'updateQueue [all fields]'],
  ['dedupe-take', 'dedupeTake'],
  ['dedupe-take-in-transaction', 'dedupeTake.inCallerTransaction'],
  ['dedupe-holder', 'dedupeHolder'],
  ['dedupe-replace', 'dedupeReplace'],
  ['dedupe-move', 'dedupeMove [unique]'],
  ['dedupe-of-job', 'dedupeOfJob'],
  ['apply-retention-dedupe-keys', 'applyRetention [dedupe keys]'],
  ['claim-start-groups-first', 'fetchNextBatch [start groups first]'],
  ['update-queue-group-limits', 'updateQueue [group limits]'],
  ['get-queue-groups', 'getQueueGroups'],
  ['apply-retention-groups', 'applyRetention [groups]'],
  ['apply-retention-batches', 'applyRetention [batches]'],
  ['apply-retention-groupless', 'applyRetention [groupless]'],
  ['insert-batch', 'insertBatch'],
  ['insert-batch-in-transaction', 'insertBatch.inCallerTransaction'],
  ['enqueue-many-batch', 'enqueueMany [batch]'],
  ['get-batch', 'getBatch'],
  ['batch-hot-job-ids', 'batchHotJobIds'],
  ['batch-results', 'getBatchResults [from a cursor]'],
  ['enqueue-many-waiting', 'enqueueMany [waiting]'],
  ['locate-dependencies', 'locateDependencies'],
  ['insert-dependencies', 'insertDependencies'],
  ['check-take', 'checkTake'],
  ['check-done', 'checkDone'],
  ['move-to-dlq-waiting', 'moveToDlq [waiting]'],
  ['get-dependencies', 'getDependencies'],
  ['purge-dlq-by-filter', 'purgeDlqByFilter [no filter]'],
  ['partition-layout', 'partitionLayout'],
  ['convert-to-partitioned-archive', 'convertToPartitioned [archive]'],
  ['convert-to-partitioned-dlq', 'convertToPartitioned [dlq]'],
  ['make-partitions-ahead', 'makePartitionsAhead [archive]'],
  ['drop-partition-archive', 'dropPartition [archive]'],
  ['drop-partition-dlq', 'dropPartition [dlq]'],
  ['apply-retention-archive-partitioned', 'applyRetention [archive partitioned]'],
];

/** Parameters as TypeORM hands them to mssql: position, declared type, value. */
function describeParams(statement: MssqlStatement): string {
  return JSON.stringify(
    statement.params.map((p, i) => ({
      name: `@${i}`,
      type: p.type,
      params: p.params,
      value: p.value,
    })),
    null,
    2,
  );
}

describe('SQL Server golden statements', () => {
  const entries = catalogue();
  if (UPDATE && !existsSync(GOLDEN_DIR)) mkdirSync(GOLDEN_DIR, { recursive: true });

  it.each(PINNED)('%s.sql matches %s', (file, name) => {
    const entry = entries.find((e) => e.name === name);
    expect(entry).toBeDefined();
    const sqlFile = join(GOLDEN_DIR, `${file}.sql`);
    const paramsFile = join(GOLDEN_DIR, `${file}.params.json`);
    const sql = `${entry!.statement.sql}\n`;
    const params = describeParams(entry!.statement);
    if (UPDATE) {
      writeFileSync(sqlFile, sql);
      writeFileSync(paramsFile, `${JSON.stringify(params, null, 2)}\n`);
      return;
    }
    if (!existsSync(sqlFile) || !existsSync(paramsFile)) {
      throw new Error(
        `Missing golden ${file}; create it with CHOKAQ_UPDATE_GOLDEN=1 (see the header).`,
      );
    }
    expect(sql).toBe(readFileSync(sqlFile, 'utf8'));
    expect(params).toEqual(JSON.parse(readFileSync(paramsFile, 'utf8')));
  });

  it('placeholders are @0…@n-1, each declared exactly once and all used', () => {
    for (const [, name] of PINNED) {
      const { sql, params } = entries.find((e) => e.name === name)!.statement;
      const used = new Set([...sql.matchAll(/@(\d+)\b/g)].map((m) => Number(m[1])));
      expect([name, [...used].sort((a, b) => a - b)]).toEqual([name, params.map((_, i) => i)]);
    }
  });
});
