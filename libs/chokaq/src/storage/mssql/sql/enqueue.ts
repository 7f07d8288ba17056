/** The producer's batches: one job, and many through one JSON parameter read with `OPENJSON`. */
import { MssqlBatchOptions, MssqlStatement, ParamList } from '../mssql-params';
import { GROUP_KEY_COLUMN, columnType } from '../mssql.schema';
import {
  DECLARE_NOW,
  PROLOGUE,
  addMs,
  ensureQueueRows,
  storedGroup,
  tables,
  type MssqlSchema,
} from './fragments';

/** One validated job as the enqueue builders take it. */
export interface MssqlNewJob {
  id: string;
  queue: string;
  type: string;
  payload: string;
  tags: string | null;
  idempotencyKey: string | null;
  priority: number;
  delayMs: number | null;
  runAt: Date | null;
  createdBy: string | null;
  /** The producer's trace context as JSON text (printable ASCII), or null. */
  traceContext: string | null;
  /** The payload's version (1 for an unversioned job). */
  payloadVersion: number;
  /** The job's group (`NewJob.group`), or null. */
  group: string | null;
  /** The batch the job belongs to (`enqueueBatch`), or null. */
  batchId: string | null;
}

/**
 * enqueue (one job). Idempotent on `Id` across all three pillars, so a retry after an ambiguous
 * commit never duplicates, not even after the job has already finished.
 *
 * Idempotency key without deadlocks: the `INSERT … SELECT … WHERE NOT EXISTS (SELECT … FROM
 * JobsHot WITH (UPDLOCK, HOLDLOCK) WHERE IdempotencyKey = @key)` takes a key-range *update* lock
 * on that key in the unique filtered index. Update locks are incompatible with each other, so a
 * second caller with the same key waits for the first to commit and then sees its row, instead
 * of both holding shared range locks and both trying to insert (the deadlock of the .NET ChokaQ,
 * which read under SERIALIZABLE without UPDLOCK). The loser then reads the holder's id. The
 * unique filtered index `UX_JobsHot_IdempotencyKey` is the backstop (e.g. under SNAPSHOT
 * isolation chosen by a caller's transaction): error 2601/2627 makes the storage run this
 * statement again, which then returns the holder.
 * `IdempotencyKey IS NOT NULL` is repeated in the predicates so the filtered index matches.
 *
 * The group (schema version 17): the job's own, else the shared group `''` when its queue has group
 * limits ({@link storedGroup}), else NULL. The batch (schema version 18): the job's `batchId`, NULL
 * for a job of none (a batch's jobs come through {@link enqueueMany}; the value is stored wherever
 * it is given).
 */
export function enqueue(
  schema: MssqlSchema,
  job: MssqlNewJob,
  options?: MssqlBatchOptions,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.varchar(job.id, 36);
  const queue = p.varchar(job.queue, 255);
  const type = p.nvarchar(job.type, 255);
  const payload = p.nvarchar(job.payload, 'max');
  const tags = p.nvarchar(job.tags, 'max');
  const key = job.idempotencyKey === null ? 'NULL' : p.nvarchar(job.idempotencyKey, 255);
  const priority = p.int(job.priority);
  const delay = p.bigint(job.delayMs);
  const runAt = p.instant(job.runAt);
  const createdBy = p.nvarchar(job.createdBy, 100);
  const traceContext = p.varchar(job.traceContext, 2048);
  const payloadVersion = p.int(job.payloadVersion);
  const batch = p.varchar(job.batchId, 36);
  const group = p.nvarchar(job.group, 255);
  const exists = (table: string) => `EXISTS (SELECT 1 FROM ${table} WHERE Id = ${id})`;
  // Two shapes: only a keyed enqueue takes the key-range lock, so key-less enqueues never
  // serialise on the idempotency index. The Id checks take no lock on purpose: UUIDv7 ids all
  // land at the end of the clustered index, and a range lock there would serialise every
  // concurrent enqueue; a same-id race is a retry of one producer, and the primary key (2627)
  // backstops it.
  const keyed = job.idempotencyKey !== null;
  return p.statement(
    [
      'SET NOCOUNT ON;',
      DECLARE_NOW,
      `DECLARE @scheduled datetime2(3) = CASE WHEN ${delay} IS NOT NULL THEN ${addMs('@now', delay)} ELSE ${runAt} END;`,
      'DECLARE @created int = 0;',
      'DECLARE @holder varchar(36) = NULL;',
      `DECLARE @NewQueues TABLE (Queue varchar(255)${t.key} NOT NULL PRIMARY KEY);`,
      ensureQueueRows(t, `(SELECT ${queue} AS Queue)`),
      `INSERT INTO ${t.hot} (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, LastUpdatedUtc, CreatedBy, TraceContext, PayloadVersion, BatchId, GroupKey)`,
      `SELECT ${id}, ${queue}, ${type}, ${payload}, ${tags}, ${key}, ${priority}, 0, 0, @scheduled, ISNULL(@scheduled, @now), @now, @now, @now, ${createdBy}, ${traceContext}, ${payloadVersion}, ${batch},`,
      `  ${storedGroup(t, group, queue)}`,
      `WHERE NOT ${exists(t.hot)}`,
      `  AND NOT ${exists(t.archive)}`,
      keyed
        ? `  AND NOT ${exists(t.dlq)}\n  AND NOT EXISTS (SELECT 1 FROM ${t.hot} AS k WITH (UPDLOCK, HOLDLOCK) WHERE k.IdempotencyKey = ${key} AND k.IdempotencyKey IS NOT NULL);`
        : `  AND NOT ${exists(t.dlq)};`,
      'SET @created = @@ROWCOUNT;',
      ...(keyed
        ? [
            'IF @created = 0',
            `  SELECT @holder = k.Id FROM ${t.hot} AS k WITH (READCOMMITTEDLOCK) WHERE k.IdempotencyKey = ${key} AND k.IdempotencyKey IS NOT NULL;`,
          ]
        : []),
      `SELECT @created AS Created, @holder AS HolderId,`,
      `  CASE WHEN ${exists(t.hot)} OR ${exists(t.archive)} OR ${exists(t.dlq)} THEN 1 ELSE 0 END AS IdExists;`,
    ].join('\n'),
    options,
  );
}

/**
 * enqueueMany (one chunk): all rows travel as ONE JSON parameter through `OPENJSON` (a request
 * carries at most 2,100 parameters). One transaction per chunk. Same rules as {@link enqueue}:
 * an active key's holder wins (range-locked with `UPDLOCK, HOLDLOCK`), the first copy of a key or
 * an id repeated inside the chunk wins, ids already in any pillar are not inserted again and
 * report themselves (before any key holder: see below). Returns one row per input item, in input
 * order.
 *
 * Lock order: the `Queues` and `StatsSummary` rows of missing queues in name order (`@NewQueues`
 * is keyed by name), then the idempotency keys' ranges in key order (`@Keys`, keyed by the key,
 * drives one seek per key), whatever order the items came in.
 *
 * In a caller's transaction (`callerTransaction`) the batch has no `SET XACT_ABORT ON` and no
 * `BEGIN TRAN … COMMIT` of its own: the caller's transaction gives the atomicity, and XACT_ABORT
 * would let any error here roll back (doom) the caller's whole transaction, after which `mssql`
 * rejects the caller's own `rollbackTransaction()` with `EABORT`. An error then ends only the
 * failing statement (the INSERT into JobsHot is one statement: all rows or none) and reaches the
 * caller, whose transaction decides. A deadlock (1205) is the exception: SQL Server rolls back the
 * victim's whole transaction whatever XACT_ABORT says, so the caller retries its whole unit of work.
 *
 * Groups as {@link enqueue}: a job's `group` is in its item only when it has one (`OPENJSON` reads
 * a missing path as NULL in its default lax mode:
 * https://learn.microsoft.com/en-us/sql/t-sql/functions/openjson-transact-sql), so the document of
 * a chunk without groups is what it was before. A job's `batchId` (a chunk of `enqueueBatch`) the
 * same way: in the item only when it has one.
 *
 * `waiting` (schema version 19): the rows are inserted Waiting (status 7), jobs that wait on
 * others (`dependsOn`); the same transaction then marks their dependencies and writes their edges
 * and counts (`locateDependencies`, `insertDependencies`), which make the ones with nothing to wait
 * for Pending. Only the status literal differs.
 */
export function enqueueMany(
  schema: MssqlSchema,
  jobs: readonly MssqlNewJob[],
  options?: MssqlBatchOptions,
  waiting = false,
): MssqlStatement {
  const own = !options?.callerTransaction;
  const t = tables(schema);
  const p = new ParamList();
  const doc = p.json(
    jobs.map((j) => ({
      id: j.id,
      queue: j.queue,
      type: j.type,
      payload: j.payload,
      tags: j.tags,
      key: j.idempotencyKey,
      priority: j.priority,
      delayMs: j.delayMs,
      runAt: j.runAt ? j.runAt.toISOString().slice(0, 23) : null,
      createdBy: j.createdBy,
      traceContext: j.traceContext,
      payloadVersion: j.payloadVersion,
      ...(j.group === null ? {} : { group: j.group }),
      ...(j.batchId === null ? {} : { batchId: j.batchId }),
    })),
  );
  // Only a chunk with keys takes key-range locks (see enqueue); ids are checked without locks.
  const keyed = jobs.some((j) => j.idempotencyKey !== null);
  return p.statement(
    [
      own ? PROLOGUE : 'SET NOCOUNT ON;',
      DECLARE_NOW,
      `DECLARE @In TABLE (Ord int NOT NULL PRIMARY KEY, Id varchar(36) NOT NULL, Queue varchar(255)${t.key} NOT NULL, Type nvarchar(255)${t.key} NOT NULL, Payload nvarchar(max) NOT NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255)${t.key} NULL, Priority int NOT NULL, ScheduledAtUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, TraceContext varchar(2048) NULL, PayloadVersion int NOT NULL, GroupKey ${columnType(GROUP_KEY_COLUMN, t.key)} NULL, BatchId varchar(36) NULL, Holder varchar(36) NULL);`,
      'DECLARE @Created TABLE (Id varchar(36) NOT NULL PRIMARY KEY);',
      `DECLARE @NewQueues TABLE (Queue varchar(255)${t.key} NOT NULL PRIMARY KEY);`,
      'INSERT INTO @In (Ord, Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, ScheduledAtUtc, CreatedBy, TraceContext, PayloadVersion, GroupKey, BatchId)',
      `SELECT CAST(a.[key] AS int), j.Id, j.Queue, j.Type, j.Payload, j.Tags, j.IdempotencyKey, j.Priority,`,
      `  CASE WHEN j.DelayMs IS NOT NULL THEN ${addMs('@now', 'j.DelayMs')} ELSE CONVERT(datetime2(3), j.RunAt, 126) END, j.CreatedBy, j.TraceContext, ISNULL(j.PayloadVersion, 1), j.GroupKey, j.BatchId`,
      `FROM OPENJSON(${doc}) AS a`,
      `CROSS APPLY OPENJSON(a.value) WITH (Id varchar(36) '$.id', Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', Payload nvarchar(max) '$.payload', Tags nvarchar(max) '$.tags', IdempotencyKey nvarchar(255) '$.key', Priority int '$.priority', DelayMs bigint '$.delayMs', RunAt varchar(23) '$.runAt', CreatedBy nvarchar(100) '$.createdBy', TraceContext varchar(2048) '$.traceContext', PayloadVersion int '$.payloadVersion', GroupKey nvarchar(255) '$.group', BatchId varchar(36) '$.batchId') AS j;`,
      '-- An id repeated inside the chunk: later copies return the first copy.',
      'UPDATE i SET i.Holder = i.Id FROM @In AS i WHERE EXISTS (SELECT 1 FROM @In AS e WHERE e.Id = i.Id AND e.Ord < i.Ord);',
      '-- An id already stored (any pillar), e.g. a retry after an ambiguous commit: it reports its own',
      '-- id, never the holder of its key (its job may have finished and freed the key for another).',
      'UPDATE i SET i.Holder = i.Id FROM @In AS i',
      `WHERE i.Holder IS NULL AND (EXISTS (SELECT 1 FROM ${t.hot} AS h WHERE h.Id = i.Id)`,
      `  OR EXISTS (SELECT 1 FROM ${t.archive} AS a WHERE a.Id = i.Id) OR EXISTS (SELECT 1 FROM ${t.dlq} AS d WHERE d.Id = i.Id));`,
      ...(own ? ['BEGIN TRAN;'] : []),
      ensureQueueRows(t, '@In'),
      ...(keyed
        ? [
            '-- Keys an active job already holds: key-range update locks until COMMIT (see enqueue),',
            '-- taken in key order (one seek per key of @Keys, keyed by the key), so two chunks that',
            '-- share keys wait for each other instead of deadlocking.',
            `DECLARE @Keys TABLE (IdempotencyKey nvarchar(255)${t.key} NOT NULL PRIMARY KEY, Holder varchar(36) NULL);`,
            'INSERT INTO @Keys (IdempotencyKey)',
            'SELECT DISTINCT i.IdempotencyKey FROM @In AS i WHERE i.Holder IS NULL AND i.IdempotencyKey IS NOT NULL;',
            'UPDATE k SET k.Holder = h.Id',
            `FROM @Keys AS k INNER LOOP JOIN ${t.hot} AS h WITH (UPDLOCK, HOLDLOCK) ON h.IdempotencyKey = k.IdempotencyKey`,
            'WHERE h.IdempotencyKey IS NOT NULL;',
            'UPDATE i SET i.Holder = k.Holder',
            'FROM @In AS i INNER JOIN @Keys AS k ON k.IdempotencyKey = i.IdempotencyKey',
            'WHERE i.Holder IS NULL AND k.Holder IS NOT NULL;',
            '-- A key repeated inside the chunk: the first copy wins.',
            'UPDATE i SET i.Holder = f.Id',
            'FROM @In AS i CROSS APPLY (SELECT TOP (1) e.Id FROM @In AS e WHERE e.IdempotencyKey = i.IdempotencyKey ORDER BY e.Ord) AS f',
            'WHERE i.Holder IS NULL AND i.IdempotencyKey IS NOT NULL AND f.Id <> i.Id;',
          ]
        : []),
      `INSERT INTO ${t.hot} (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, LastUpdatedUtc, CreatedBy, TraceContext, PayloadVersion, BatchId, GroupKey)`,
      'OUTPUT inserted.Id INTO @Created (Id)',
      `SELECT i.Id, i.Queue, i.Type, i.Payload, i.Tags, i.IdempotencyKey, i.Priority, ${waiting ? 7 : 0}, 0, i.ScheduledAtUtc, ISNULL(i.ScheduledAtUtc, @now), @now, @now, @now, i.CreatedBy, i.TraceContext, i.PayloadVersion, i.BatchId,`,
      `  ${storedGroup(t, 'i.GroupKey', 'i.Queue')}`,
      'FROM @In AS i',
      'WHERE i.Holder IS NULL',
      `  AND NOT EXISTS (SELECT 1 FROM ${t.hot} AS h WHERE h.Id = i.Id)`,
      `  AND NOT EXISTS (SELECT 1 FROM ${t.archive} AS a WHERE a.Id = i.Id)`,
      `  AND NOT EXISTS (SELECT 1 FROM ${t.dlq} AS d WHERE d.Id = i.Id);`,
      ...(own ? ['COMMIT;'] : []),
      'SELECT i.Ord, COALESCE(i.Holder, i.Id) AS Id, CASE WHEN c.Id IS NOT NULL AND i.Holder IS NULL THEN 1 ELSE 0 END AS Created',
      'FROM @In AS i LEFT JOIN @Created AS c ON c.Id = i.Id',
      'ORDER BY i.Ord;',
    ].join('\n'),
    options,
  );
}
