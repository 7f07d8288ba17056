/**
 * Batches (schema version 18): the batch record and its callbacks written with its jobs
 * (`enqueueBatch`), the settle step every move out of the hot table runs in the move's own
 * transaction, the reopen step of a resurrect, and the reads of a batch (its row and callbacks,
 * its jobs still hot, its archived jobs' results). The rules: docs/storage.md, "Batches";
 * the PostgreSQL statements (`storage/postgres/sql/batches.ts`) are the same steps.
 *
 * Lock order of a move that settles (the moves' own order, with the batch's row between the
 * pillars and the counters): the moved `JobsHot` rows, the rows they became in the Archive or the
 * DLQ (and their attempt rows), then the `Batches` rows of their batches in id order (a loop from a
 * delta keyed by the batch id, as `bumpStats` takes its counters), then the callbacks' new
 * `JobsHot` rows, then `StatsSummary` and `MetricBuckets`. A resurrect takes its batches' rows after
 * the hot rows it inserted and before its counters, in the same order. So two moves that finish
 * jobs of one batch wait for each other on its row and never the other way round on a counter.
 */
import type { BatchCallbackKind } from '../../../interfaces/batch.interface';
import { MAX_ENQUEUE_MANY } from '../../../validation/limits';
import { BATCH_CALLBACK_BITS, BatchCallbackBit } from '../../shared/batches';
import { MssqlBatchOptions, MssqlStatement, ParamList } from '../mssql-params';
import { BATCH_CALLBACK_COLUMNS, BATCH_COLUMNS } from '../mssql.schema';
import type { MssqlNewJob } from './enqueue';
import {
  DECLARE_NOW,
  MssqlTables,
  PROLOGUE,
  declareTableVar,
  ensureQueueRows,
  insertSelect,
  selectColumns,
  storedGroup,
  tables,
  type MssqlSchema,
} from './fragments';

/** A validated batch as {@link insertBatch} takes it (`ValidatedBatch` is one). */
export interface MssqlNewBatch {
  id: string;
  createdBy: string | null;
  /** Its jobs: the batch row stores how many (they are inserted by `enqueueMany` chunks). */
  jobs: readonly MssqlNewJob[];
  /** Its callbacks, each with the job it enqueues when the batch settles, id made already. */
  callbacks: readonly { kind: BatchCallbackKind; job: MssqlNewJob }[];
}

/**
 * insertBatch (`enqueueBatch`) — the batch's row (`Total` its jobs, nothing settled or fired), its
 * callbacks' rows (one document read with `OPENJSON`, empty for a batch without callbacks), and the
 * `Queues` and `StatsSummary` rows of the callbacks' queues that do not exist yet, so the move that
 * settles the batch only inserts their hot rows. A callback's group is stored as given (NULL for
 * none): whether its queue has group limits is decided when it fires, as for a resurrected job.
 *
 * It begins no transaction: it runs first in the transaction of `enqueueBatch`, which then inserts
 * the batch's jobs (`enqueueMany` chunks) and commits them all at once. In ChokaQ's own transaction
 * it runs with `XACT_ABORT` (an error rolls the whole batch back, and the storage runs it again from
 * scratch); in a caller's (`callerTransaction`) with neither the session prologue nor `XACT_ABORT`,
 * as `enqueueMany` there. Locks: X on the new keys (the batch's id, a UUIDv7 at the end of the
 * clustered index, and its callbacks' rows), then the missing queues' rows in name order under
 * `UPDLOCK, HOLDLOCK` ({@link ensureQueueRows}). No move can reach the batch's row before COMMIT:
 * its jobs are inserted in the same transaction.
 */
export function insertBatch(
  schema: MssqlSchema,
  batch: MssqlNewBatch,
  options?: MssqlBatchOptions,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.varchar(batch.id, 36);
  const createdBy = p.nvarchar(batch.createdBy, 100);
  const total = p.int(batch.jobs.length);
  const doc = p.json(
    batch.callbacks.map(({ kind, job }) => ({
      kind: BATCH_CALLBACK_BITS[kind],
      id: job.id,
      queue: job.queue,
      type: job.type,
      payload: job.payload,
      tags: job.tags,
      priority: job.priority,
      createdBy: job.createdBy,
      traceContext: job.traceContext,
      payloadVersion: job.payloadVersion,
      group: job.group,
    })),
  );
  const columns = BATCH_CALLBACK_COLUMNS.map((col) => col.name);
  return p.statement(
    [
      options?.callerTransaction ? 'SET NOCOUNT ON;' : PROLOGUE,
      DECLARE_NOW,
      declareTableVar('@Callbacks', BATCH_CALLBACK_COLUMNS, t),
      `DECLARE @NewQueues TABLE (Queue varchar(255)${t.key} NOT NULL PRIMARY KEY);`,
      `INSERT INTO ${t.batches} (Id, CreatedAtUtc, CreatedBy, Total) VALUES (${id}, @now, ${createdBy}, ${total});`,
      `INSERT INTO @Callbacks (${columns.join(', ')})`,
      `SELECT ${id}, j.Kind, j.JobId, j.Queue, j.Type, j.Payload, j.Tags, j.Priority, j.CreatedBy, j.TraceContext, j.PayloadVersion, j.GroupKey`,
      `FROM OPENJSON(${doc}) WITH (Kind smallint '$.kind', JobId varchar(36) '$.id', Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', Payload nvarchar(max) '$.payload', Tags nvarchar(max) '$.tags', Priority int '$.priority', CreatedBy nvarchar(100) '$.createdBy', TraceContext varchar(2048) '$.traceContext', PayloadVersion int '$.payloadVersion', GroupKey nvarchar(255) '$.group') AS j;`,
      `${insertSelect(t.callbacks, BATCH_CALLBACK_COLUMNS, 'c', {})}\nFROM @Callbacks AS c;`,
      ensureQueueRows(t, '@Callbacks'),
    ].join('\n'),
    options,
  );
}

/**
 * Per batch among the rows of `@Moved` (the move's captured rows, each with its `Id` and
 * `BatchId`), into the table variable `delta` keyed by the batch id: each of `counts` (a column and
 * its aggregate over the batch's rows). Rows outside any batch and the batches' callbacks are left
 * out: a callback carries its batch's id but is not one of its jobs (a seek of
 * `UX_BatchCallbacks_Job` per moved row of a batch).
 */
function batchDelta(t: MssqlTables, delta: string, counts: Record<string, string>): string[] {
  const names = Object.keys(counts);
  return [
    `DECLARE ${delta} TABLE (BatchId varchar(36) NOT NULL PRIMARY KEY, ${names.map((name) => `${name} int NOT NULL`).join(', ')});`,
    `INSERT INTO ${delta} (BatchId, ${names.join(', ')})`,
    `SELECT mv.BatchId, ${Object.values(counts).join(', ')} FROM @Moved AS mv`,
    `WHERE mv.BatchId IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${t.callbacks} AS x WHERE x.JobId = mv.Id)`,
    'GROUP BY mv.BatchId;',
  ];
}

/**
 * The callbacks due when a batch settles with `failed` jobs in the DLQ: complete, and success (none
 * failed) or failure.
 */
function due(failed: string): string {
  return `(${BatchCallbackBit.Complete} | CASE WHEN ${failed} = 0 THEN ${BatchCallbackBit.Success} ELSE ${BatchCallbackBit.Failure} END)`;
}

/**
 * The settle step of a move out of the hot table, in the move's transaction, after its rows went
 * into the Archive (`into` 'archive': they succeeded) or the DLQ ('dlq': failed, cancelled or
 * zombied) and before its counters. Per batch among the moved rows (callbacks excluded), `Batches`
 * gets its counts; the batch whose jobs are then all in the Archive or the DLQ (`Succeeded +
 * Failed >= Total`) is settled (`SettledAtUtc`), and the callbacks due then (complete, and success
 * or failure) that never fired before (`Fired`, a bit per kind) are inserted Pending into the hot
 * table with the ids made at enqueue, as an enqueue inserts a job (attempts 0, due now, its group or
 * the shared group `''` of a queue with group limits, {@link storedGroup}), and marked fired. A move
 * of rows outside any batch finds nothing in `@BatchDelta` and writes nothing.
 *
 * Lock/isolation: the UPDATE takes the batch's row with an update lock, converted to exclusive and
 * held to COMMIT, so two moves that finish the last jobs of one batch at once serialise on it, and
 * the second computes its counts and its due callbacks from the row the first committed: an UPDATE
 * reads the rows it changes with a blocking scan that takes an update (U) lock on each as it reads
 * its values, under READ COMMITTED with row versioning (READ_COMMITTED_SNAPSHOT, the Azure SQL
 * default) as without it ("Modify data without optimized locking",
 * https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide),
 * and every expression of its SET reads that row. Exactly one of them sees the batch reach its
 * total. Optimized locking's lock after qualification (Azure SQL, SQL Server 2025), which evaluates
 * a predicate on the last committed version before it locks, is not used for a statement with an
 * `OUTPUT` clause into a table variable, as this one has
 * (https://learn.microsoft.com/en-us/sql/relational-databases/performance/optimized-locking); its
 * predicate is the batch's key anyway, which no move changes. Under SNAPSHOT isolation (no ChokaQ
 * batch runs at it: each pins READ COMMITTED, and a transactional handler's transaction is begun
 * at it) the second update would fail with an update conflict (3960) rather than count from a
 * stale row.
 *
 * The bits this update fired are read from the same UPDATE: in its `OUTPUT`, `deleted.Fired` is the
 * row's value before it and `inserted.Fired` after it, and each column may take an alias
 * (`[ AS ] column_alias_identifier`,
 * https://learn.microsoft.com/en-us/sql/t-sql/queries/output-clause-transact-sql), so the table
 * has no column of them (PostgreSQL's `fired_now`): `Fired & ~FiredBefore` are the callbacks to
 * enqueue. The rows are taken in id order from `@BatchDelta` (a loop join), so two moves over the
 * same batches wait for each other instead of deadlocking. `Queues` is read plainly for the group,
 * as the enqueue reads it.
 */
export function batchSettle(t: MssqlTables, into: 'archive' | 'dlq'): string {
  const reached = 'b.Succeeded + d.Succeeded + b.Failed + d.Failed >= b.Total';
  const counts =
    into === 'archive'
      ? { Succeeded: 'COUNT(*)', Failed: '0' }
      : { Succeeded: '0', Failed: 'COUNT(*)' };
  return [
    ...batchDelta(t, '@BatchDelta', counts),
    'DECLARE @BatchSettled TABLE (Id varchar(36) NOT NULL PRIMARY KEY, FiredBefore smallint NOT NULL, Fired smallint NOT NULL);',
    'IF EXISTS (SELECT 1 FROM @BatchDelta)',
    'BEGIN',
    'UPDATE b SET b.Succeeded = b.Succeeded + d.Succeeded, b.Failed = b.Failed + d.Failed,',
    `  b.SettledAtUtc = CASE WHEN ${reached} THEN @now END,`,
    `  b.Fired = b.Fired | CASE WHEN ${reached} THEN ${due('b.Failed + d.Failed')} ELSE 0 END`,
    'OUTPUT inserted.Id, deleted.Fired AS FiredBefore, inserted.Fired INTO @BatchSettled (Id, FiredBefore, Fired)',
    'FROM @BatchDelta AS d',
    `INNER LOOP JOIN ${t.batches} AS b ON b.Id = d.BatchId;`,
    `INSERT INTO ${t.hot} (Id, Queue, Type, Payload, Tags, Priority, Status, AttemptCount, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, LastUpdatedUtc, CreatedBy, TraceContext, PayloadVersion, BatchId, GroupKey)`,
    'SELECT c.JobId, c.Queue, c.Type, c.Payload, c.Tags, c.Priority, 0, 0, @now, @now, @now, @now, c.CreatedBy, c.TraceContext, c.PayloadVersion, c.BatchId,',
    `  ${storedGroup(t, 'c.GroupKey', 'c.Queue')}`,
    'FROM @BatchSettled AS s',
    `INNER JOIN ${t.callbacks} AS c ON c.BatchId = s.Id AND (s.Fired & ~s.FiredBefore & c.Kind) <> 0;`,
    'END;',
  ].join('\n');
}

/**
 * The reopen step of a resurrect, in its transaction, after the rows it took from the DLQ
 * (`@Moved`) went back into the hot table and before its counters: each batch among them (callbacks
 * excluded) has that many fewer failed jobs and is no longer settled. The callbacks that fired stay
 * fired; those that did not may fire when it settles again. Lock/isolation: the batch's row as in
 * {@link batchSettle}, in id order from `@BatchReopened`.
 */
export function batchReopen(t: MssqlTables): string {
  return [
    ...batchDelta(t, '@BatchReopened', { N: 'COUNT(*)' }),
    'UPDATE b SET b.Failed = b.Failed - d.N, b.SettledAtUtc = NULL',
    'FROM @BatchReopened AS d',
    `INNER LOOP JOIN ${t.batches} AS b ON b.Id = d.BatchId;`,
  ].join('\n');
}

/**
 * batchHotJobIds (a cancel of a batch) — the ids of batch `id`'s jobs still in the hot table (a
 * batch has at most `MAX_ENQUEUE_MANY`), a seek of `IX_JobsHot_Batch` (`BatchId IS NOT NULL`
 * repeated so the filtered index matches, as for the idempotency key's); its callbacks are not
 * among them. Read committed, no update locks: the cancel that follows takes the rows by id and
 * re-checks their status under its own locks.
 */
export function batchHotJobIds(schema: MssqlSchema, id: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const key = p.varchar(id, 36);
  return p.statement(
    [
      `SELECT TOP (${MAX_ENQUEUE_MANY}) h.Id FROM ${t.hot} AS h`,
      `WHERE h.BatchId = ${key} AND h.BatchId IS NOT NULL`,
      `  AND NOT EXISTS (SELECT 1 FROM ${t.callbacks} AS x WHERE x.JobId = h.Id);`,
    ].join('\n'),
  );
}

/**
 * getBatchResults — a page of batch `batchId`'s results: its jobs in the Archive after `after`
 * (exclusive; `''` for the first page, before every id) in id order, `limit + 1` rows at most (the
 * extra one says whether a next page exists), each with its stored `Result`; its callbacks are not
 * among them. A seek of `IX_JobsArchive_Batch` on `(BatchId, Id)` (`BatchId IS NOT NULL` repeated
 * so the filtered index matches), one range read in its order, then a lookup of each row's
 * `Result` in the clustered index. Ids compare in the column's collation, as the lists' cursors
 * do (`listJobs`): byte order on an install with binary keys, and the same order in a database
 * collation for these ids (lower-case hexadecimal digits, hyphens at the same places in each).
 * Read committed, no update locks: a page shows the jobs archived when it ran.
 */
export function getBatchResults(
  schema: MssqlSchema,
  batchId: string,
  after: string,
  limit: number,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const top = p.int(limit + 1);
  const key = p.varchar(batchId, 36);
  const from = p.varchar(after, 36);
  return p.statement(
    [
      `SELECT TOP (${top}) a.Id, a.Result FROM ${t.archive} AS a`,
      `WHERE a.BatchId = ${key} AND a.BatchId IS NOT NULL AND a.Id > ${from}`,
      `  AND NOT EXISTS (SELECT 1 FROM ${t.callbacks} AS x WHERE x.JobId = a.Id)`,
      'ORDER BY a.Id;',
    ].join('\n'),
  );
}

/**
 * getBatch — the batch's row with its callbacks: one row per callback in kind order, or one row
 * with NULL callback columns for a batch without callbacks; none for no such batch. Two seeks of
 * clustered keys (the batch's id, then its callbacks' range), read committed; times as ISO text.
 */
export function getBatch(schema: MssqlSchema, id: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const key = p.varchar(id, 36);
  return p.statement(
    [
      `SELECT ${selectColumns('b', BATCH_COLUMNS)}, c.Kind, c.JobId, c.Queue, c.Type`,
      `FROM ${t.batches} AS b`,
      `LEFT JOIN ${t.callbacks} AS c ON c.BatchId = b.Id`,
      `WHERE b.Id = ${key}`,
      'ORDER BY c.Kind;',
    ].join('\n'),
  );
}
