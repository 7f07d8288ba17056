/**
 * Dedupe keys (`NewJob.dedupe`): the statements of the `DedupeKeys` table (schema version 16). An
 * enqueue with a key runs them in ONE transaction with the job's insert (ChokaQ's own READ
 * COMMITTED transaction, or the caller's), in the order of `storage/shared/dedupe.ts`: take a
 * free key ({@link dedupeTake}); else lock and read its holder ({@link dedupeHolder}) and hold,
 * replace the Pending holder ({@link dedupeReplace}), or insert the job (the keyless `enqueue`
 * batch) and point the key at it ({@link dedupeMove}). `getJob` reads the key a job holds
 * ({@link dedupeOfJob}); retention removes the keys that hold nothing
 * ({@link applyRetentionDedupeKeys}).
 *
 * None of these batches begins or commits a transaction: the enqueue's transaction does. In
 * ChokaQ's own transaction they run with `XACT_ABORT` (an error rolls the whole enqueue back, and
 * the storage runs it again from scratch); in a caller's (`callerTransaction`) with neither the
 * session prologue nor `XACT_ABORT`, as `enqueueMany` there: an error ends the failing statement
 * only and reaches the caller, whose transaction decides (see `enqueueMany`).
 *
 * Lock order of a keyed enqueue: the key's row (or, for a key no row holds yet, its range) in
 * `DedupeKeys` first, held to COMMIT; then what the keyless enqueue locks (`Queues` and
 * `StatsSummary` rows of a new queue, the new `JobsHot` row), or the holder's hot row (replace).
 * Nothing else locks a `DedupeKeys` row while it holds a `JobsHot` lock (retention reads the hot
 * and archive rows of the keys it deletes, and skips the keys an enqueue holds), so no cycle.
 *
 * The table hints: "UPDLOCK — Specifies that update locks are to be taken and held until the
 * transaction completes"; "HOLDLOCK — Equivalent to SERIALIZABLE", applied to that table reference
 * only, so a read of a key no row holds locks the key's range
 * (https://learn.microsoft.com/en-us/sql/t-sql/queries/hints-transact-sql-table). Update locks are
 * incompatible with each other (and with exclusive locks) and compatible with shared ones, so two
 * enqueues of one key wait for each other while `getJob` reads on; the key-range modes and their
 * compatibility: https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide#key-range-locking
 * (the same locking the idempotency key of `enqueue` relies on). Every `OUTPUT` goes `INTO` a
 * table variable (docs/storage.md: a bare `OUTPUT` fails on a table with an enabled trigger).
 */
import type { ValidatedDedupe } from '../../../validation/validate-job';
import { dedupeColumns } from '../../shared/dedupe';
import { MssqlBatchOptions, MssqlStatement, ParamList } from '../mssql-params';
import { DEDUPE_KEY_COLUMNS } from '../mssql.schema';
import {
  DECLARE_NOW,
  PROLOGUE,
  READPAST_UNDER_RCSI,
  addMs,
  selectColumns,
  subtractMs,
  tables,
  type MssqlSchema,
} from './fragments';

/** A validated job as the dedupe builders take it (`ValidatedJob` is one). */
export interface MssqlKeyedJob {
  id: string;
  payload: string;
  payloadVersion: number;
  /** The producer's trace context as JSON text (printable ASCII), or null. */
  traceContext: string | null;
  /** The job's key: the builders are only called for a job that has one. */
  dedupe: ValidatedDedupe | null;
}

/** The job's key; a job without one never reaches these builders. */
function keyOf(job: MssqlKeyedJob): ValidatedDedupe {
  if (job.dedupe === null) throw new Error(`ChokaQ mssql: job ${job.id} has no dedupe key`);
  return job.dedupe;
}

/**
 * The first line of a batch: `XACT_ABORT` in ChokaQ's own transaction, nothing of a transaction's
 * in a caller's (see the file's header).
 */
function opening(options: MssqlBatchOptions | undefined): string {
  return options?.callerTransaction ? 'SET NOCOUNT ON;' : PROLOGUE;
}

/** The window's end for mode `mode` and a window of `windowMs` ms from `@now`: none for unique (3). */
function windowEnd(mode: string, windowMs: string): string {
  return `CASE WHEN ${mode} = 3 THEN NULL ELSE ${addMs('@now', windowMs)} END`;
}

/** The key's columns as parameters: key, job id, mode, state bits, window (ms; 0 for none). */
function keyParams(p: ParamList, job: MssqlKeyedJob) {
  const d = keyOf(job);
  const columns = dedupeColumns(d);
  return {
    key: p.nvarchar(d.key, 255),
    jobId: p.varchar(job.id, 36),
    mode: p.int(columns.mode),
    states: p.int(columns.states),
    windowMs: p.bigint(columns.windowMs),
  };
}

/**
 * dedupeTake — inserts the key's row for the job (mode, state bits, a window from now: none for
 * unique) if no row holds the key; returns the job's id (`JobId`) when it did, no row otherwise.
 *
 * Locks: `INSERT … SELECT … WHERE NOT EXISTS (SELECT … FROM DedupeKeys WITH (UPDLOCK, HOLDLOCK)
 * WHERE [Key] = @key)`. A key no row holds: the read takes a key-range update lock on the key's
 * range of the primary key, held to COMMIT, so a second enqueue of the same key waits for the
 * first to commit and then sees its row (no row inserted: it goes on to {@link dedupeHolder})
 * instead of both reading "free" and one failing on the primary key (2627); N concurrent enqueues
 * of one key make one row. A key a row holds: the read update-locks that row to COMMIT, which is
 * the lock {@link dedupeHolder} then reads under. The range lock also holds back, until COMMIT, a
 * new key that falls into the same gap of the index (the price of the idempotency key of `enqueue`
 * too). The primary key is the backstop (e.g. a caller's SNAPSHOT transaction): 2627, which the
 * storage answers as "taken" in a caller's transaction and by running the enqueue again in its own.
 */
export function dedupeTake(
  schema: MssqlSchema,
  job: MssqlKeyedJob,
  options?: MssqlBatchOptions,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const k = keyParams(p, job);
  return p.statement(
    [
      opening(options),
      DECLARE_NOW,
      'DECLARE @Taken TABLE (JobId varchar(36) NOT NULL);',
      `INSERT INTO ${t.keys} ([Key], JobId, Mode, States, WindowMs, WindowStartedUtc, WindowEndsUtc)`,
      'OUTPUT inserted.JobId INTO @Taken (JobId)',
      `SELECT ${k.key}, ${k.jobId}, ${k.mode}, ${k.states}, ${k.windowMs}, @now, ${windowEnd(k.mode, k.windowMs)}`,
      `WHERE NOT EXISTS (SELECT 1 FROM ${t.keys} AS k WITH (UPDLOCK, HOLDLOCK) WHERE k.[Key] = ${k.key});`,
      'SELECT t.JobId FROM @Taken AS t;',
    ].join('\n'),
    options,
  );
}

/**
 * dedupeHolder — the key's holder, its row locked until the enqueue commits: the job it names
 * (`JobId`), whether the key's window is still open (`InWindow`, 1/0), the holder's hot status
 * (`HotStatus`, NULL when it is not hot) and whether it succeeded within the enqueue's own window
 * (`FinishedWithinWindow`, 1/0; never with a window of 0). No row when the key is free again.
 *
 * Locks: `WITH (UPDLOCK, HOLDLOCK)` on the key's row: an update lock held to COMMIT serialises
 * every enqueue of this key from here to its end (each takes the same lock, in
 * {@link dedupeTake} already), and retention's delete, whose `READPAST` skips the row while it is
 * held, never removes a key an enqueue has decided on; shared-lock readers (`getJob`) are not
 * blocked. `HOLDLOCK` keeps the key's range locked too when the row is gone (retention removed it
 * before this enqueue took its lock), until the storage takes the key anew in the same
 * transaction. The holder's hot row and its archive row are read without a hint (READ COMMITTED):
 * read, not locked, so a claim may take the hot row after this read, which the guard of
 * {@link dedupeReplace} (`Status = 0`) catches.
 */
export function dedupeHolder(
  schema: MssqlSchema,
  job: MssqlKeyedJob,
  options?: MssqlBatchOptions,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const d = keyOf(job);
  const key = p.nvarchar(d.key, 255);
  const windowMs = p.bigint(dedupeColumns(d).windowMs);
  return p.statement(
    [
      opening(options),
      DECLARE_NOW,
      'SELECT k.JobId, CASE WHEN k.WindowEndsUtc > @now THEN 1 ELSE 0 END AS InWindow, h.Status AS HotStatus,',
      `  CASE WHEN EXISTS (SELECT 1 FROM ${t.archive} AS a WHERE a.Id = k.JobId AND a.FinishedAtUtc > ${subtractMs('@now', windowMs)}) THEN 1 ELSE 0 END AS FinishedWithinWindow`,
      `FROM ${t.keys} AS k WITH (UPDLOCK, HOLDLOCK)`,
      `LEFT JOIN ${t.hot} AS h ON h.Id = k.JobId`,
      `WHERE k.[Key] = ${key};`,
    ].join('\n'),
    options,
  );
}

/**
 * dedupeReplace (debounce) — gives holder `holderId`, if it is still Pending (`Status = 0`), the new
 * job's payload, payload version and trace context, and a run time a window from now
 * (`ScheduledAtUtc` and `DueAtUtc`, the claim's ordering column, as `updatePending` sets them);
 * then moves the key's window to start now and end at that run time. Returns the holder's id
 * (`Id`) when it was replaced, no row otherwise (the storage then inserts a new job).
 *
 * Locks: a plain UPDATE of the hot row by its primary key (U → X, read committed). A claim that
 * holds the row first makes it wait; it then reads the row as the claim committed it, and
 * `Status = 0` no longer holds, so a Fetched or started job is never replaced ("UPDATE
 * (Transact-SQL)", Locking behavior:
 * https://learn.microsoft.com/en-us/sql/t-sql/queries/update-transact-sql#locking-behavior). The
 * key's row is already update-locked by {@link dedupeHolder}; its UPDATE converts that lock to X.
 */
export function dedupeReplace(
  schema: MssqlSchema,
  holderId: string,
  job: MssqlKeyedJob,
  options?: MssqlBatchOptions,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const d = keyOf(job);
  const holder = p.varchar(holderId, 36);
  const payload = p.nvarchar(job.payload, 'max');
  const payloadVersion = p.int(job.payloadVersion);
  const traceContext = p.varchar(job.traceContext, 2048);
  const windowMs = p.bigint(dedupeColumns(d).windowMs);
  const key = p.nvarchar(d.key, 255);
  return p.statement(
    [
      opening(options),
      DECLARE_NOW,
      `DECLARE @due datetime2(3) = ${addMs('@now', windowMs)};`,
      'DECLARE @Replaced TABLE (Id varchar(36) NOT NULL);',
      `UPDATE h SET h.Payload = ${payload}, h.PayloadVersion = ${payloadVersion}, h.TraceContext = ${traceContext},`,
      '  h.ScheduledAtUtc = @due, h.DueAtUtc = @due, h.LastUpdatedUtc = @now',
      'OUTPUT inserted.Id INTO @Replaced (Id)',
      `FROM ${t.hot} AS h`,
      `WHERE h.Id = ${holder} AND h.Status = 0;`,
      'UPDATE k SET k.WindowStartedUtc = @now, k.WindowEndsUtc = @due',
      `FROM ${t.keys} AS k`,
      `WHERE k.[Key] = ${key} AND EXISTS (SELECT 1 FROM @Replaced);`,
      'SELECT r.Id FROM @Replaced AS r;',
    ].join('\n'),
    options,
  );
}

/**
 * dedupeMove — points the key at the job just inserted, with the job's mode and state bits and a
 * new window from now (none for unique). The key's row is already update-locked by
 * {@link dedupeHolder}; the UPDATE, by the primary key, converts that lock to X.
 */
export function dedupeMove(
  schema: MssqlSchema,
  job: MssqlKeyedJob,
  options?: MssqlBatchOptions,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const k = keyParams(p, job);
  return p.statement(
    [
      opening(options),
      DECLARE_NOW,
      `UPDATE k SET k.JobId = ${k.jobId}, k.Mode = ${k.mode}, k.States = ${k.states}, k.WindowMs = ${k.windowMs},`,
      `  k.WindowStartedUtc = @now, k.WindowEndsUtc = ${windowEnd(k.mode, k.windowMs)}`,
      `FROM ${t.keys} AS k`,
      `WHERE k.[Key] = ${k.key};`,
    ].join('\n'),
    options,
  );
}

/**
 * dedupeOfJob (`getJob`) — the key job `id` holds, if any: a seek of `IX_DedupeKeys_Job`, read
 * committed. The times as ISO text, as every read of this dialect renders them.
 */
export function dedupeOfJob(schema: MssqlSchema, id: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const jobId = p.varchar(id, 36);
  const columns = DEDUPE_KEY_COLUMNS.filter((col) => col.name !== 'JobId');
  return p.statement(
    `SELECT ${selectColumns('k', columns)} FROM ${t.keys} AS k WHERE k.JobId = ${jobId};`,
  );
}

/**
 * applyRetention, dedupe keys step — deletes at most `batch` keys that hold nothing any more,
 * whatever the policy (the age is unused): a throttle or debounce window that ended; a unique key
 * whose holder is neither hot nor succeeded within the key's window (a holder in the DLQ never
 * holds a unique key). Selects the count deleted (`Affected`), as every retention batch of this
 * dialect, from the keys captured by `OUTPUT deleted.[Key] INTO @Gone`.
 *
 * Locks: one DELETE, its own short transaction (or the audited run's). A DELETE selects its rows
 * with a blocking scan that takes an update (U) lock on each row as it reads it, under row
 * versioning too, and evaluates the predicate under that lock
 * (https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide,
 * update locks; behavior when modifying data). U is incompatible with the U an enqueue holds on
 * its key (`UPDLOCK`, to its COMMIT), so `READPAST, ROWLOCK` (under `READCOMMITTEDLOCK`, see
 * {@link READPAST_UNDER_RCSI}) skips those rows: a key an enqueue is deciding on is never removed
 * under it, nor removed after it from what it was before, and an enqueue finds its key gone only
 * before it locked it, when it takes the key anew. The holder's hot
 * and archive rows are read without `READPAST`: a locked hot row is waited for, never taken for
 * absent (that would free a key a running job holds). A holder moving from the hot table to the
 * archive is seen in one of them: under locking READ COMMITTED the hot read waits for the move's
 * COMMIT before the archive is read, under READ_COMMITTED_SNAPSHOT the statement reads one snapshot.
 */
export function applyRetentionDedupeKeys(
  schema: MssqlSchema,
  _ageMs: number,
  batch: number,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const max = p.int(batch);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      DECLARE_NOW,
      'DECLARE @Gone TABLE ([Key] nvarchar(255) NOT NULL);',
      'WITH Expired AS (',
      `  SELECT TOP (${max}) k.[Key] FROM ${t.keys} AS k WITH (${READPAST_UNDER_RCSI})`,
      '  WHERE (k.Mode = 3',
      `      AND NOT EXISTS (SELECT 1 FROM ${t.hot} AS h WHERE h.Id = k.JobId)`,
      `      AND NOT EXISTS (SELECT 1 FROM ${t.archive} AS a WHERE a.Id = k.JobId AND a.FinishedAtUtc > ${subtractMs('@now', 'k.WindowMs')}))`,
      '    OR (k.Mode <> 3 AND k.WindowEndsUtc <= @now)',
      ')',
      'DELETE FROM Expired OUTPUT deleted.[Key] INTO @Gone ([Key]);',
      'SELECT COUNT_BIG(*) AS Affected FROM @Gone;',
    ].join('\n'),
  );
}
