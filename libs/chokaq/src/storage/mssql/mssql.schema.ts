/**
 * SQL Server / Azure SQL DDL of ChokaQ (SPEC §2). The same text is run by `ensureSchema()` and
 * printed by `npx chokaq schema --dialect mssql` for DBAs who apply scripts by hand.
 *
 * Requirements: SQL Server 2016 SP1+ or Azure SQL, database compatibility level 130+ (OPENJSON,
 * DATEDIFF_BIG, `DATA_COMPRESSION` in every edition).
 *
 * Why the types are what they are:
 * - `Id varchar(36)` clustered, not `uniqueidentifier`: SQL Server sorts `uniqueidentifier` by its
 *   last byte group first, which would scatter the time-ordered UUIDv7 ids across the index.
 * - `Payload nvarchar(max)`: the queue never looks inside a payload; JSON stays text.
 * - Status codes are `tinyint` and appear as literals in every statement, so the filtered indexes
 *   below match (a parameterised `Status = @p` cannot use an index filtered on `Status = 0`).
 * - Times are `datetime2(3)` from `SYSUTCDATETIME()`: the database clock, millisecond precision.
 * - `DueAtUtc` (not in SPEC §2's list, and invisible to the row mappers) is the claim's ordering
 *   key, always `COALESCE(ScheduledAtUtc, EnqueuedAtUtc)`. It is a real column written by every
 *   statement that changes either time, because a filtered index cannot key a computed column, and
 *   without it "priority desc, then due time" could not be read in index order (O(batch)).
 *
 * There is no FILLFACTOR: the hot table's keys grow at the end (UUIDv7) and the history tables are
 * append-only, so the default (100 %) is right, and the T-SQL grammar the tests use rejects it.
 */

import { JobStatus } from '../../interfaces/job-status.enum';
import { MAX_ATTEMPT_ERROR } from '../../validation/limits';
import { BATCH_CALLBACK_BITS } from '../shared/batches';
import { EdgeState, PolicyCode } from '../shared/dependencies';

/**
 * Schema version this build creates; recorded in `SchemaMigrations`.
 * - 1: the tables and indexes.
 * - 2: `IX_JobsHot_ClaimType` (the claim seeks exact (queue, type) pairs) and `JobsHot` with
 *   `LOCK_ESCALATION = DISABLE` (see {@link mssqlSchemaDdl}).
 * - 3: `RecurringJobs.Source` ('decorator' | 'runtime') and `RecurringJobs.LastJobId`, added to a
 *   table of an earlier version by `ALTER TABLE … ADD` (see {@link mssqlSchemaDdl}).
 * - 4: the `Workers` table, and `ProgressNote` beside `Progress` in `JobsHot`, `JobsArchive` and
 *   `JobsDLQ`.
 * - 5: the keyset lists' indexes that were missing: `IX_JobsHot_Enqueued`,
 *   `IX_JobsHot_QueueEnqueued` and `IX_JobsArchive_Type`. A list page reads `(sort key, Id)` from
 *   its cursor on; every nonclustered index here already ends with `Id`, the clustered key, which
 *   SQL Server adds to the keys of a nonunique nonclustered index
 *   (https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-index-design-guide#nonclustered-index-architecture),
 *   so the archive and DLQ indexes of version 1 serve the lists as they are.
 *
 * - 6: `MetricBuckets` counts retries (outcome 3) and starts (outcome 4), the starts with their
 *   start lag (`LagCount`, `LagSumMs`, `LagMaxMs`), in one-minute buckets; and
 *   `IX_MetricBuckets_Queue` for one queue's series and start lag.
 * - 7: the `AuditLog` table (one row per operator action, written in the transaction of the
 *   change it records; read newest first through `IX_AuditLog_At`) and the `Settings` table (the
 *   secret that signs confirmation tokens of bulk actions). New tables only, created like the
 *   others where missing: workers of version 6 never read or write them.
 * - 8: `IX_AuditLog_Target`, for the audit entries of one target (a job's, in a dashboard's job
 *   view), on the computed column `TargetKey` (see {@link AUDIT_TARGET_KEY}).
 * - 9: `TraceContext` in `JobsHot`, `JobsArchive` and `JobsDLQ`: the trace context of the
 *   enqueuing code (the JSON text of a propagation carrier: W3C `traceparent`, `tracestate`),
 *   which every move copies, so a resurrected job keeps it. `varchar(2048)`: propagation headers
 *   are printable ASCII (the edge refuses anything else), and 2,048 is `LIMITS.traceContext`.
 *   Added where missing like version 4's progress note: a nullable column without a default, a
 *   metadata-only change. A worker of version 8 keeps running (its statements name their
 *   columns); a job it moves leaves its trace context behind, as a job it enqueues has none.
 * - 10: the `JobAttempts` table: one row per attempt of a job that did not end in the archive
 *   (retried, timed out, zombie, cancelled while running, failed), written in the transaction of
 *   the move that ended it (`storage/shared/attempts.ts` has the rules); clustered on
 *   `(JobId, Seq)`, so a job's history is one range, read and deleted with its archive or DLQ row.
 *   A new table only, created like the others where missing: workers of version 9 never read or
 *   write it.
 * - 11: a queue's start rate limit and the claim's window state in `Queues`
 *   ({@link QUEUE_RATE_COLUMNS}): nullable columns without a default, added where missing like
 *   version 9's. A worker of version 10 keeps running and ignores the limit (its claim does not
 *   know it): upgrade every worker before relying on one.
 * - 12: `PayloadVersion` in `JobsHot`, `JobsArchive` and `JobsDLQ`: the version of the job
 *   definition that enqueued the payload (`defineJob(…, { version })`, 1 without one), which every
 *   move copies and the claim filters on. In `JobsHot` `int NOT NULL` with the constant default 1,
 *   added where missing like version 6's columns (existing rows get 1); in the Archive and the DLQ
 *   nullable without a default and read as 1 ({@link HISTORY_PAYLOAD_VERSION}), so the upgrade
 *   never rewrites the history tables.
 *   A worker of version 11 keeps running (its inserts take the default; its claim does not filter
 *   on the version, so upgrade every worker before enqueuing a version 2).
 * - 13: `JobsHot.HeldSinceUtc` (a job an open circuit holds, since when it was first due) with
 *   `IX_JobsHot_Held`, and `StatsSummary.DeferredTotal` (see {@link HELD_SINCE_COLUMN}).
 * - 14: `IX_JobsHot_ClaimType` INCLUDEs `PayloadVersion`: the claim of exact (queue, type) pairs
 *   tests each candidate's version, which without it cost a key lookup into the clustered index per
 *   candidate row. Rebuilt where it lacks the column (`DROP_EXISTING`, in the bootstrap
 *   transaction: writers to `JobsHot` wait while it builds, and the hot table holds only live jobs).
 * - 15: `JobsArchive.Result` ({@link ARCHIVE_RESULT_COLUMN}): the JSON text a handler that records
 *   its result returned, NULL for every other job. A nullable column without a default, added where
 *   missing like version 9's (a metadata-only change, see {@link RESULT_V15_NOTE}). A worker of
 *   version 14 keeps running: its archive move names its columns, so the jobs it archives store no
 *   result.
 * - 16: the `DedupeKeys` table ({@link DEDUPE_KEY_COLUMNS}, `NewJob.dedupe`) and
 *   `IX_DedupeKeys_Job`, created where missing in their version's own step (see
 *   {@link DEDUPE_V16_NOTE}). A new table only: no existing row changes, and workers of version 15
 *   never read or write it (an enqueue with a dedupe key needs this version).
 * - 17: groups (`NewJob.group`) and per-group limits ({@link GROUPS_V17_NOTE}): `GroupKey` in
 *   `JobsHot`, `JobsArchive` and `JobsDLQ` (every move copies it), the queue's group limits and
 *   its walk's cursor in `Queues` ({@link QUEUE_GROUP_COLUMNS}), the `JobGroups` table of the
 *   groups' rate windows ({@link JOB_GROUP_COLUMNS}), and two filtered indexes of the grouped
 *   rows (`IX_JobsHot_GroupPending`, `IX_JobsHot_GroupActive`). Nullable columns without a default
 *   (metadata-only, like version 9's) and a new table. A worker of version 16 keeps running, but
 *   its claim does not know the limits: upgrade every worker before setting one.
 * - 18: batches (`enqueueBatch`, {@link BATCHES_V18_NOTE}): `BatchId` in `JobsHot`, `JobsArchive`
 *   and `JobsDLQ` ({@link BATCH_ID_COLUMN}: every move copies it), the `Batches` table of each
 *   batch's counts and fired callbacks ({@link BATCH_COLUMNS}), the `BatchCallbacks` table of the
 *   callbacks' jobs made at enqueue ({@link BATCH_CALLBACK_COLUMNS}) with its unique index of their
 *   ids, a filtered index of the settled batches ({@link BATCH_SETTLED_INDEX}: retention of
 *   batches), and a filtered index of the batch rows in each pillar ({@link BATCH_INDEXES}). A
 *   nullable column without a default (metadata-only, like version 9's) and new tables. A worker of version
 *   17 keeps running, but its moves neither copy `BatchId` nor count a batch's jobs: upgrade every
 *   worker before enqueuing a batch.
 * - 19: dependencies (`NewJob.dependsOn`, {@link DEPENDENCIES_V19_NOTE}): `WaitingOn` and
 *   `HasDependents` in `JobsHot`, `JobsArchive` and `JobsDLQ` (every move copies them), status 7
 *   (Waiting) in `CK_JobsHot_Status`, the `JobDependencies` table of the edges
 *   ({@link DEPENDENCY_COLUMNS}) with its index by dependent and its filtered index of the edges
 *   the check pass must look at, and a filtered index of the Waiting rows. A worker of version 18
 *   keeps running, but its moves neither copy the two columns nor settle edges: upgrade every
 *   worker before the first `dependsOn`.
 *
 * The script is idempotent and creates what is missing, so running it on an older database
 * applies the versions it lacks: the version-2 index is built inside its version's transaction
 * (writers to `JobsHot` wait while it builds; the hot table holds only live jobs); the columns of
 * versions 3 and 4 are added where missing. Version 4's are nullable columns without a default,
 * which SQL Server adds by changing the table's metadata, not its rows (the data-touching cases
 * are a `NOT NULL` column or a default with `WITH VALUES`; see ALTER TABLE,
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql); the schema
 * modification lock it takes is held to its version's COMMIT. Statements of the previous
 * release name their columns, so a column more breaks none of them. Version 5's indexes are built
 * inside their version's transaction too: writers to their table wait while one builds (the
 * archive's type index takes time in proportion to the archive). Version 6's columns are added
 * only when `COL_LENGTH` says they are missing (NULL:
 * https://learn.microsoft.com/en-us/sql/t-sql/functions/col-length-transact-sql), as `NOT NULL`
 * with a constant default, which fills the existing rows with it
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql#adding-not-null-columns-as-an-online-operation:
 * a metadata-only change where the edition supports it, a rewrite of the table otherwise);
 * `MetricBuckets` is small (retention), so either is short.
 */
export const MSSQL_SCHEMA_VERSION = 19;

/**
 * Every version with the description its ledger row records, oldest first (the script writes
 * each row from here, and `schemaStatus` names the pending ones by it). Append new versions.
 */
export const MSSQL_MIGRATIONS: readonly { version: number; description: string }[] = [
  { version: 1, description: 'initial schema' },
  { version: 2, description: 'claim by (queue, type); no lock escalation on JobsHot' },
  { version: 3, description: 'recurring jobs: source and last job id' },
  { version: 4, description: 'Workers table; progress note' },
  { version: 5, description: 'keyset list indexes' },
  { version: 6, description: 'metric buckets count retries and starts with their start lag' },
  { version: 7, description: 'audit log; settings' },
  { version: 8, description: 'audit log index by target' },
  { version: 9, description: 'trace context of the enqueuing code' },
  { version: 10, description: 'attempt history of jobs' },
  { version: 11, description: 'queue rate limits' },
  { version: 12, description: 'payload version of each job' },
  { version: 13, description: 'jobs held by an open circuit; deferral counter' },
  { version: 14, description: 'claim index by type includes the payload version' },
  { version: 15, description: 'stored results in the archive' },
  { version: 16, description: 'dedupe keys' },
  { version: 17, description: 'groups and per-group limits' },
  { version: 18, description: 'batches and their callbacks' },
  { version: 19, description: 'job dependencies' },
];

/** One column of a ChokaQ table. */
export interface MssqlColumn {
  /** PascalCase column name (SPEC §2). */
  readonly name: string;
  /** SQL Server type. */
  readonly type: string;
  /** NULL allowed. */
  readonly nullable: boolean;
  /** Default expression, if any. */
  readonly default?: string;
  /**
   * A key the application names (queue, job type, idempotency key, queue or recurring job name):
   * compared byte for byte, in {@link BINARY_KEY_COLLATION} on installs created by this version.
   */
  readonly key?: true;
  /**
   * A key compared byte for byte on EVERY install ({@link BINARY_KEY_COLLATION} whatever the
   * install's other keys have): a column added since binary keys, whose rows held no value in
   * another collation when it came (`GroupKey`, schema version 17, added NULL to existing rows).
   * Every declaration of it is binary, the table variables' included (see {@link columnType}),
   * and `chokaq migrate --binary-keys` leaves it alone ({@link keyColumnsOf} does not list it).
   */
  readonly binary?: true;
}

const c = (name: string, type: string, nullable: boolean, def?: string): MssqlColumn => ({
  name,
  type,
  nullable,
  default: def,
});
/** A {@link MssqlColumn.key} column. */
const key = (name: string, type: string, nullable: boolean): MssqlColumn => ({
  ...c(name, type, nullable),
  key: true,
});
/** A {@link MssqlColumn.binary} column. */
const binaryKey = (name: string, type: string, nullable: boolean): MssqlColumn => ({
  ...c(name, type, nullable),
  binary: true,
});

/**
 * The collation of the key columns of a new install ({@link MssqlColumn.key}): a binary one, so
 * `Order-7` and `order-7` are two idempotency keys, `Invoice.V2` and `invoice.v2` two job types,
 * as they are on PostgreSQL and SQLite. The database's default collation is case-insensitive on a
 * default install and on Azure SQL, and a column without `COLLATE` takes it
 * (https://learn.microsoft.com/en-us/sql/relational-databases/collations/set-or-change-the-column-collation).
 * `_BIN2` compares code points (https://learn.microsoft.com/en-us/sql/relational-databases/collations/collation-and-unicode-support#Binary-collations).
 * SQL Server still ignores trailing blanks in `=` under every collation, which is why the edge
 * refuses keys that end with whitespace. Installs created before keep the database's collation
 * until `chokaq migrate --binary-keys` converts them ({@link mssqlBinaryKeysScript}).
 */
export const BINARY_KEY_COLLATION = 'Latin1_General_100_BIN2';

/**
 * The collation the search filter compares in, whatever the columns': case-insensitive (and
 * accent-sensitive), as PostgreSQL's `ILIKE` and SQLite's `LIKE` are for ASCII, so a
 * search for `invoice` finds `Invoice.V2` on a binary-key install too. An explicit `COLLATE` on
 * the column wins over its own collation
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/collation-precedence-transact-sql); the
 * search reads with a leading `%`, a scan in any collation.
 */
export const SEARCH_COLLATION = 'Latin1_General_100_CI_AS';
const NOW = 'SYSUTCDATETIME()';

/**
 * `GroupKey` (schema version 17): the job's group (`NewJob.group`: 1–255 characters, no trailing
 * blanks), in `JobsHot`, `JobsArchive` and `JobsDLQ`; NULL for a job without one, `''` for the
 * shared group of a grouped queue's jobs without one (read back as none). `nvarchar(255)` like
 * `IdempotencyKey`, and compared byte for byte on every install ({@link MssqlColumn.binary}): it
 * is new, so an install of an earlier release has no value of it in another collation (its rows
 * get NULL), and a group is the same group on every dialect. `=` still ignores trailing blanks
 * under a binary collation
 * (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/string-comparison-assignment:
 * SQL Server pads the shorter string with blanks before it compares), which is why the validating
 * edge refuses a group that ends with whitespace; like the other keys it has no CHECK of its own.
 * The same padding decides `<` and `>`, so the grouped claim's walk, in this column's order, visits
 * the groups in code-point order except where one group is a prefix of another followed by a
 * character below U+0020: a total order all the same (two groups never compare equal), which is
 * all the walk needs.
 */
export const GROUP_KEY_COLUMN: MssqlColumn = binaryKey('GroupKey', 'nvarchar(255)', true);

/**
 * `BatchId` (schema version 18): the batch a job belongs to (`enqueueBatch`), NULL for a job of
 * none, in `JobsHot`, `JobsArchive` and `JobsDLQ`: every move copies it, so a job keeps its batch
 * in every pillar and a resurrected one brings it back. A batch's callbacks carry it too, though
 * they are not its members (`BatchCallbacks.JobId` tells them apart). An id like the others
 * (`varchar(36)`, the library's own UUIDv7, in the install's collation, never a key the
 * application names), nullable without a default, so adding it changes the tables' metadata only.
 */
export const BATCH_ID_COLUMN: MssqlColumn = c('BatchId', 'varchar(36)', true);

/**
 * `WaitingOn` (schema version 19): for a job enqueued with `dependsOn`, how many of its
 * dependencies it still counts (its open edges and those failed under `cancel`); 0 once released;
 * NULL for a job that never waited. In `JobsHot`, `JobsArchive` and `JobsDLQ`, nullable without a
 * default (a metadata-only change, like version 9's), copied by every move. The rules:
 * docs/storage.md, "Dependencies".
 */
export const WAITING_ON_COLUMN: MssqlColumn = c('WaitingOn', 'int', true);

/**
 * `JobsHot.HasDependents` (schema version 19): some job waits or waited on this one, so a move of
 * it looks for edges to settle (a move of any other row looks up none). `bit NOT NULL DEFAULT 0`
 * in the hot table, which holds only live jobs, as version 12 adds `PayloadVersion` there.
 */
const HAS_DEPENDENTS_COLUMN: MssqlColumn = c('HasDependents', 'bit', false, '0');

/**
 * `HasDependents` of the Archive and the DLQ (schema version 19): nullable without a default and
 * read as 0 where NULL (rows of an earlier version), as {@link HISTORY_PAYLOAD_VERSION} is, so
 * the upgrade never rewrites the history tables: a `NOT NULL` column with a default is a
 * metadata-only change only on Enterprise-class editions
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql#adding-not-null-columns-as-an-online-operation).
 * Every move writes it from the hot row; the resurrect copies `ISNULL(…, 0)` back.
 */
const HISTORY_HAS_DEPENDENTS: MssqlColumn = c('HasDependents', 'bit', true);

/**
 * `JobsHot` columns, in table order. Every statement that copies rows names these columns
 * (`OUTPUT deleted.Id, … INTO @Moved (Id, …)`), so a table with a column more still works.
 */
export const HOT_COLUMNS: readonly MssqlColumn[] = [
  c('Id', 'varchar(36)', false),
  key('Queue', 'varchar(255)', false),
  key('Type', 'nvarchar(255)', false),
  c('Payload', 'nvarchar(max)', false),
  c('Tags', 'nvarchar(max)', true),
  key('IdempotencyKey', 'nvarchar(255)', true),
  c('Priority', 'int', false),
  c('Status', 'tinyint', false),
  c('AttemptCount', 'int', false, '0'),
  c('WorkerId', 'nvarchar(255)', true),
  c('LeaseId', 'varchar(36)', true),
  c('HeartbeatUtc', 'datetime2(3)', true),
  c('ScheduledAtUtc', 'datetime2(3)', true),
  c('DueAtUtc', 'datetime2(3)', false, NOW),
  c('CreatedAtUtc', 'datetime2(3)', false, NOW),
  c('EnqueuedAtUtc', 'datetime2(3)', false, NOW),
  c('StartedAtUtc', 'datetime2(3)', true),
  c('LastUpdatedUtc', 'datetime2(3)', false, NOW),
  c('CreatedBy', 'nvarchar(100)', true),
  c('LastModifiedBy', 'nvarchar(100)', true),
  c('LastError', 'nvarchar(max)', true),
  c('CancelRequestedUtc', 'datetime2(3)', true),
  c('Progress', 'float', true),
  // Schema versions 4 and 9; last, where `ALTER TABLE … ADD` puts them in a database of an older
  // version.
  c('ProgressNote', 'nvarchar(500)', true),
  c('TraceContext', 'varchar(2048)', true),
  // Schema version 12.
  c('PayloadVersion', 'int', false, '1'),
  // Schema version 17: the job's group (`NewJob.group`; '' is the shared group of a grouped
  // queue's jobs without one), binary on every install ({@link GROUP_KEY_COLUMN}).
  GROUP_KEY_COLUMN,
  // Schema version 18: the job's batch ({@link BATCH_ID_COLUMN}).
  BATCH_ID_COLUMN,
  // Schema version 19: the job's dependencies ({@link WAITING_ON_COLUMN}) and whether it has
  // dependents ({@link HAS_DEPENDENTS_COLUMN}).
  WAITING_ON_COLUMN,
  HAS_DEPENDENTS_COLUMN,
];

/**
 * `HeldSinceUtc` (schema version 13): set while an open circuit breaker holds a Pending job back,
 * to when the job was first due; the queue's lag counts from it. Not one of {@link HOT_COLUMNS}:
 * no claim, move or copy carries it (it means nothing outside the hot table, and a job that runs
 * again has it cleared by its retry), only the hand-back that sets it, the retries that clear it
 * and the reads that show it.
 */
export const HELD_SINCE_COLUMN: MssqlColumn = c('HeldSinceUtc', 'datetime2(3)', true);

/** Every `JobsHot` column, in table order: {@link HOT_COLUMNS}, then {@link HELD_SINCE_COLUMN}. */
export const HOT_TABLE_COLUMNS: readonly MssqlColumn[] = [...HOT_COLUMNS, HELD_SINCE_COLUMN];

/**
 * `PayloadVersion` of the Archive and the DLQ (schema version 12): nullable without a default,
 * read as 1 when NULL. Adding it is then a metadata-only change on every edition (a nullable
 * column without a default changes the table's metadata, not its rows:
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql), where
 * `NOT NULL DEFAULT 1` rewrites every archived row on Standard, Web and Express editions ("online"
 * only on Enterprise-class ones:
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql#adding-not-null-columns-as-an-online-operation),
 * holding a schema-modification lock for as long. Every move writes it from the hot row, so only
 * rows archived before the upgrade hold NULL; the resurrect copies `ISNULL(…, 1)` back to the hot
 * table, whose column stays `NOT NULL DEFAULT 1` (it holds only live jobs, so adding it is short
 * on any edition).
 */
const HISTORY_PAYLOAD_VERSION: MssqlColumn = c('PayloadVersion', 'int', true);

/** The columns the history tables declare nullable where `JobsHot` has them `NOT NULL`. */
const HISTORY_VARIANTS: ReadonlyMap<string, MssqlColumn> = new Map(
  [HISTORY_PAYLOAD_VERSION, HISTORY_HAS_DEPENDENTS].map((col) => [col.name, col]),
);

/** Hot columns that still mean something once a job has left the hot table. */
const HISTORY_BASE: readonly MssqlColumn[] = HOT_COLUMNS.filter(
  (col) =>
    !['Status', 'LeaseId', 'HeartbeatUtc', 'DueAtUtc', 'CancelRequestedUtc'].includes(col.name),
).map((col) => HISTORY_VARIANTS.get(col.name) ?? col);

/**
 * `JobsArchive` columns every archive move writes, in table order (the table has
 * {@link ARCHIVE_RESULT_COLUMN} after them: {@link ARCHIVE_TABLE_COLUMNS}).
 */
export const ARCHIVE_COLUMNS: readonly MssqlColumn[] = [
  ...HISTORY_BASE,
  c('FinishedAtUtc', 'datetime2(3)', false, NOW),
  c('DurationMs', 'bigint', true),
];

/**
 * `JobsArchive.Result` (schema version 15): the JSON text a handler that records its result
 * (`recordResult`) returned, NULL for every other job. `nvarchar(max)`, as `Payload`: the queue
 * never looks inside it. Not one of {@link ARCHIVE_COLUMNS}: only the archive move of a batch in
 * which some run records a result names it (`archiveSucceeded`), so the move of every other batch
 * keeps the text it had at version 14.
 */
export const ARCHIVE_RESULT_COLUMN: MssqlColumn = c('Result', 'nvarchar(max)', true);

/**
 * Every `JobsArchive` column, in table order: {@link ARCHIVE_COLUMNS}, then
 * {@link ARCHIVE_RESULT_COLUMN} (what CREATE TABLE declares and `getJob` reads).
 */
export const ARCHIVE_TABLE_COLUMNS: readonly MssqlColumn[] = [
  ...ARCHIVE_COLUMNS,
  ARCHIVE_RESULT_COLUMN,
];

/** `JobsDLQ` columns, in table order (named in every statement that copies rows, as above). */
export const DLQ_COLUMNS: readonly MssqlColumn[] = [
  ...HISTORY_BASE.slice(0, 7),
  c('Status', 'tinyint', false),
  ...HISTORY_BASE.slice(7),
  c('FailureReason', 'smallint', false),
  c('ErrorDetails', 'nvarchar(max)', true),
  c('FailedAtUtc', 'datetime2(3)', false, NOW),
  c('DurationMs', 'bigint', true),
];

/** `StatsSummary.DeferredTotal` (schema version 13): jobs an open circuit handed back unrun. */
const DEFERRED_TOTAL_COLUMN: MssqlColumn = c('DeferredTotal', 'bigint', false, '0');

/** `StatsSummary` columns: lifetime counters per queue, never decremented. */
export const STATS_COLUMNS: readonly MssqlColumn[] = [
  key('Queue', 'varchar(255)', false),
  c('SucceededTotal', 'bigint', false, '0'),
  c('FailedTotal', 'bigint', false, '0'),
  c('CancelledTotal', 'bigint', false, '0'),
  c('RetriedTotal', 'bigint', false, '0'),
  c('ResurrectedTotal', 'bigint', false, '0'),
  c('LastActivityUtc', 'datetime2(3)', true),
  // Schema version 13: open-circuit deferrals, which RetriedTotal no longer counts.
  DEFERRED_TOTAL_COLUMN,
];

/** The start-lag columns version 6 adds to `MetricBuckets` (see {@link MSSQL_SCHEMA_VERSION}). */
export const BUCKET_LAG_COLUMNS: readonly MssqlColumn[] = [
  c('LagCount', 'bigint', false, '0'),
  c('LagSumMs', 'bigint', false, '0'),
  c('LagMaxMs', 'bigint', false, '0'),
];

/**
 * `MetricBuckets` columns: one row per (minute, queue, outcome, failure reason or −1). Outcomes:
 * 0 succeeded, 1 failed, 2 cancelled, 3 retried, 4 started (with the start lag). An open circuit's
 * hand-back has none since schema version 13 (it was outcome 3 with reason 3).
 */
export const BUCKET_COLUMNS: readonly MssqlColumn[] = [
  c('BucketUtc', 'datetime2(0)', false),
  key('Queue', 'varchar(255)', false),
  c('Outcome', 'tinyint', false),
  c('FailureReason', 'smallint', false),
  c('CompletedCount', 'bigint', false, '0'),
  c('DurationCount', 'bigint', false, '0'),
  c('TotalDurationMs', 'bigint', false, '0'),
  c('MaxDurationMs', 'bigint', false, '0'),
  ...BUCKET_LAG_COLUMNS,
];

/**
 * `Queues` columns of schema version 10: a queue's start rate limit (`RateLimitMax` starts per
 * `RateLimitPerMs`) and the state the claim keeps for it (the current window's first and last
 * start and count, the previous window's last start and count; see `fetchNextBatch`).
 */
export const QUEUE_RATE_COLUMNS: readonly MssqlColumn[] = [
  c('RateLimitMax', 'int', true),
  c('RateLimitPerMs', 'int', true),
  c('RateWindowStart', 'datetime2(3)', true),
  c('RateWindowLast', 'datetime2(3)', true),
  c('RateWindowCount', 'int', true),
  c('RatePrevLast', 'datetime2(3)', true),
  c('RatePrevCount', 'int', true),
];

/**
 * `Queues` columns of schema version 17: the queue's group limits (`GroupConcurrency`, and
 * `GroupRateMax` starts per `GroupRatePerMs` for each group) and `GroupCursor`, the last group
 * the queue's grouped claim visited (its next walk starts after it; binary like `GroupKey`, whose
 * values it holds). A queue with either limit is a grouped queue. The groups' rate windows are
 * rows of `JobGroups` ({@link JOB_GROUP_COLUMNS}).
 */
export const QUEUE_GROUP_COLUMNS: readonly MssqlColumn[] = [
  c('GroupConcurrency', 'int', true),
  c('GroupRateMax', 'int', true),
  c('GroupRatePerMs', 'int', true),
  binaryKey('GroupCursor', 'nvarchar(255)', true),
];

/** `Queues` columns: the runtime controls of each queue. */
export const QUEUE_COLUMNS: readonly MssqlColumn[] = [
  key('Name', 'varchar(255)', false),
  c('IsPaused', 'bit', false, '0'),
  c('IsActive', 'bit', false, '1'),
  c('MaxWorkers', 'int', true),
  c('ZombieTimeoutSeconds', 'int', true),
  c('ExecutionTimeoutMs', 'int', true),
  c('RetryZombies', 'bit', false, '0'),
  c('LastUpdatedUtc', 'datetime2(3)', false, NOW),
  ...QUEUE_RATE_COLUMNS,
  ...QUEUE_GROUP_COLUMNS,
];

/** `RecurringJobs` columns. */
export const RECURRING_COLUMNS: readonly MssqlColumn[] = [
  key('Name', 'nvarchar(255)', false),
  c('Cron', 'varchar(255)', false),
  c('TimeZone', 'varchar(100)', false),
  key('Queue', 'varchar(255)', false),
  key('Type', 'nvarchar(255)', false),
  c('Payload', 'nvarchar(max)', false),
  c('LastSlotUtc', 'datetime2(3)', true),
  c('NextSlotUtc', 'datetime2(3)', false),
  c('MisfirePolicy', 'varchar(10)', false),
  c('IsPaused', 'bit', false, '0'),
  c('LastUpdatedUtc', 'datetime2(3)', false, NOW),
  // Schema version 3 (see RECURRING_V3_NOTE): added by ALTER TABLE to a table of an earlier version.
  c('Source', 'varchar(10)', false, "'decorator'"),
  c('LastJobId', 'varchar(36)', true),
];

/**
 * `Workers` columns (schema version 4): one row per worker process, upserted with its heartbeat.
 * A few dozen rows, read whole by `listWorkers`, so the clustered primary key is the only index.
 */
export const WORKER_COLUMNS: readonly MssqlColumn[] = [
  c('WorkerId', 'nvarchar(255)', false),
  c('Host', 'nvarchar(255)', false),
  c('Pid', 'int', false),
  c('LibraryVersion', 'nvarchar(100)', false),
  c('StartedAtUtc', 'datetime2(3)', false, NOW),
  c('LastSeenUtc', 'datetime2(3)', false, NOW),
  c('Concurrency', 'int', false),
  c('Running', 'int', false),
  c('Handled', 'nvarchar(max)', false),
  c('Circuits', 'nvarchar(max)', false),
  c('IsDraining', 'bit', false, '0'),
  c('StoppedAtUtc', 'datetime2(3)', true),
];

/**
 * `AuditLog` columns (schema version 7): one row per operator action. `Id` is a UUIDv7 given
 * before the first write, so the batches of one bulk action add to one row; `AtUtc` is the
 * database clock at its first write.
 */
export const AUDIT_COLUMNS: readonly MssqlColumn[] = [
  c('Id', 'varchar(36)', false),
  c('AtUtc', 'datetime2(3)', false),
  c('Actor', 'nvarchar(100)', false),
  c('Action', 'varchar(50)', false),
  c('Target', 'nvarchar(4000)', true),
  c('RowsAffected', 'bigint', false, '0'),
  c('Details', 'nvarchar(max)', true),
];

/**
 * How many leading characters of an audit entry's target `TargetKey` holds (schema version 8):
 * every target but a bulk action's filter is whole in it (job ids are 36 characters, queue and
 * recurring names at most 255). Part of the column's definition: changing it needs a migration.
 */
export const AUDIT_TARGET_KEY_LENGTH = 255;

/**
 * Why the audit log's target index keys a computed prefix of `Target` (schema version 8; printed
 * above the statements in the DDL). Without an index on the target, the entries of one job are
 * found by walking `IX_AuditLog_At` from the newest entry, and for a job with fewer entries than a
 * page (nearly every job) that reads the whole log, which retention keeps 90 days. `Target` itself
 * (`nvarchar(4000)`, up to 8,000 bytes: a bulk action's filter as JSON) cannot be a key: a
 * nonclustered index key holds at most 1,700 bytes, and an insert beyond it fails
 * (https://learn.microsoft.com/en-us/sql/sql-server/maximum-capacity-specifications-for-sql-server),
 * which would fail the audited change with it. `TargetKey`, the first 255 characters (510 bytes),
 * is a computed column: deterministic and precise, so it can key an index without being
 * persisted, and it takes no space in the table
 * (https://learn.microsoft.com/en-us/sql/relational-databases/indexes/indexes-on-computed-columns);
 * the session options such an index requires are the ones the filtered indexes already need. The
 * read compares `TargetKey` (the seek) and the whole `Target`. The index is created by `EXEC`:
 * "a table cannot be changed and then the new columns referenced in the same batch"
 * (https://learn.microsoft.com/en-us/previous-versions/sql/sql-server-2008-r2/ms175502(v=sql.105)),
 * and dynamic SQL compiles when it runs, after the column was added. Statements of version 7 name
 * their columns, so the column more breaks none of them.
 */
const AUDIT_TARGET_V8_NOTE: readonly string[] = [
  'AuditLog: TargetKey and IX_AuditLog_Target (schema version 8). Target (nvarchar(4000)) exceeds',
  'the 1,700-byte key limit of a nonclustered index, so a computed prefix of it is the key:',
  'https://learn.microsoft.com/en-us/sql/relational-databases/indexes/indexes-on-computed-columns',
  'The index is built through EXEC: a batch cannot reference a column it added.',
];

/** `Settings` columns (schema version 7): named values, today the confirmation secret. */
export const SETTING_COLUMNS: readonly MssqlColumn[] = [
  c('Name', 'varchar(100)', false),
  c('Value', 'nvarchar(max)', false),
];

/** The outcomes an attempt row may hold (schema version 10). */
const ATTEMPT_OUTCOME_CHECK = `CONSTRAINT [CK_JobAttempts_Outcome] CHECK (Outcome IN ('retried', 'timeout', 'zombie', 'cancelled', 'failed'))`;

/**
 * `JobAttempts` columns (schema version 10): one row per attempt of a job that did not end in the
 * archive. `Error` keeps the first `MAX_ATTEMPT_ERROR` (4,000) characters, so it is a bounded
 * `nvarchar(4000)`, stored in the row.
 */
export const ATTEMPT_COLUMNS: readonly MssqlColumn[] = [
  c('JobId', 'varchar(36)', false),
  c('Seq', 'int', false),
  c('Attempt', 'int', false),
  c('WorkerId', 'nvarchar(255)', true),
  c('LeaseId', 'varchar(36)', true),
  c('StartedAtUtc', 'datetime2(3)', true),
  c('FinishedAtUtc', 'datetime2(3)', false),
  c('Outcome', 'varchar(10)', false),
  c('Error', `nvarchar(${MAX_ATTEMPT_ERROR})`, true),
  c('DurationMs', 'bigint', true),
];

/**
 * `DedupeKeys` columns (schema version 16): one row per dedupe key taken with a window
 * (`NewJob.dedupe`, the steps in `storage/shared/dedupe.ts`): the job that holds it, the mode
 * (1 throttle, 2 debounce, 3 unique), a unique key's states (bits: 1 pending, 2 running,
 * 4 finished), the window's length in ms (0 for unique without `finished`), its start and its end
 * (NULL for unique, whose end follows its holder). `[Key]` is bracketed: `KEY` is a reserved word
 * of T-SQL
 * (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/reserved-keywords-transact-sql).
 *
 * `[Key]` is a key column ({@link MssqlColumn.key}) in {@link BINARY_KEY_COLLATION} on EVERY
 * install, an install of an earlier release included: the table is new in version 16, so it has no
 * rows in the database's collation to convert, and a dedupe key is compared byte for byte
 * (`DedupeOption`) whatever the other keys of the install do. So `chokaq migrate --binary-keys`
 * leaves it alone ({@link keyColumnsOf} does not list it), and no statement declares a table
 * variable column that is compared with it (the statements compare it with a parameter only,
 * whose collation yields to the column's:
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/collation-precedence-transact-sql).
 * Trailing blanks: `=` ignores them under every collation, as for the other keys, and as for them
 * the validating edge refuses a key that ends with whitespace; like them it has no CHECK of its
 * own.
 */
export const DEDUPE_KEY_COLUMNS: readonly MssqlColumn[] = [
  key('[Key]', 'nvarchar(255)', false),
  c('JobId', 'varchar(36)', false),
  c('Mode', 'smallint', false),
  c('States', 'smallint', false),
  c('WindowMs', 'bigint', false),
  c('WindowStartedUtc', 'datetime2(3)', false),
  c('WindowEndsUtc', 'datetime2(3)', true),
];

/**
 * `JobGroups` columns (schema version 17): one row per group of a queue with a group rate limit
 * that started a job within its window, with the group's rate window (the columns and the rule of
 * the queue's own window, {@link QUEUE_RATE_COLUMNS}, at the queue's `GroupRatePerMs`). Written
 * only by the grouped claim (under its lock on the queue's row) and removed by retention once it
 * no longer counts; no row is the whole of `GroupRateMax`.
 *
 * `Queue` is a key in the install's collation, like every other queue name ({@link MssqlColumn.key}:
 * it is compared with `Queues.Name`, and two column collations meet in `=` only when equal), so the
 * version-17 step creates the table with the collation `JobsHot.Queue` has, and
 * `chokaq migrate --binary-keys` converts it with the others. `GroupKey` is binary on every
 * install, as in `JobsHot` ({@link GROUP_KEY_COLUMN}).
 */
export const JOB_GROUP_COLUMNS: readonly MssqlColumn[] = [
  key('Queue', 'varchar(255)', false),
  binaryKey('GroupKey', 'nvarchar(255)', false),
  c('RateWindowStart', 'datetime2(3)', true),
  c('RateWindowLast', 'datetime2(3)', true),
  c('RateWindowCount', 'int', true),
  c('RatePrevLast', 'datetime2(3)', true),
  c('RatePrevCount', 'int', true),
];

/**
 * `Batches` columns (schema version 18): one row per batch (`enqueueBatch`), written with its jobs
 * in one transaction. `Total` is the number of its jobs (its callbacks not counted); `Succeeded`
 * and `Failed` count those in the Archive and in the DLQ, kept by every move of a member in the
 * move's own transaction (a resurrect takes one back from `Failed`); `Fired` holds a bit per
 * callback kind (`BatchCallbackBit`) once that callback's job was enqueued, so each fires at most
 * once; `SettledAtUtc` is when the batch last reached its total, NULL while a job of it is hot.
 * There is no column of the bits an update fired: the settle step reads them as the difference of
 * the row's `Fired` before and after its UPDATE, through that UPDATE's `OUTPUT deleted.Fired,
 * inserted.Fired` (see `sql/batches.ts`).
 */
export const BATCH_COLUMNS: readonly MssqlColumn[] = [
  c('Id', 'varchar(36)', false),
  c('CreatedAtUtc', 'datetime2(3)', false, NOW),
  c('CreatedBy', 'nvarchar(100)', true),
  c('Total', 'int', false),
  c('Succeeded', 'int', false, '0'),
  c('Failed', 'int', false, '0'),
  c('Fired', 'smallint', false, '0'),
  c('SettledAtUtc', 'datetime2(3)', true),
];

/**
 * `BatchCallbacks` columns (schema version 18): one row per callback of a batch, with the job it
 * enqueues when the batch settles, made at enqueue with its id (`JobId`, unique: a move tells a
 * callback from a member of its batch by one seek, {@link BATCH_CALLBACK_JOB_INDEX}); `Kind` is its
 * `BatchCallbackBit`. The job's columns are those of the hot row it becomes, declared as
 * `JobsHot` declares them: `Queue` and `Type` are keys in the install's collation
 * ({@link MssqlColumn.key}: `Queue` is compared with `Queues.Name` when the callback fires, and two
 * column collations meet in `=` only when equal), so the version-18 step creates the table in the
 * collation of `JobsHot.Queue`, as version 17 creates `JobGroups`, and `chokaq migrate
 * --binary-keys` converts it with the others; `GroupKey` (the callback's own group, or NULL: the
 * shared group of a grouped queue is decided when it fires) is binary on every install.
 */
export const BATCH_CALLBACK_COLUMNS: readonly MssqlColumn[] = [
  c('BatchId', 'varchar(36)', false),
  c('Kind', 'smallint', false),
  c('JobId', 'varchar(36)', false),
  ...[
    'Queue',
    'Type',
    'Payload',
    'Tags',
    'Priority',
    'CreatedBy',
    'TraceContext',
    'PayloadVersion',
    'GroupKey',
  ].map((name) => columnOf('hot', HOT_COLUMNS, name)),
];

/** The kinds a callback row may have: the bits of `BatchCallbackBit` (schema version 18). */
const BATCH_CALLBACK_KIND_CHECK = `CONSTRAINT [CK_BatchCallbacks_Kind] CHECK (Kind IN (${Object.values(
  BATCH_CALLBACK_BITS,
).join(', ')}))`;

/**
 * `JobDependencies` columns (schema version 19): one row per edge of the dependency graph, the job
 * `JobId` waiting on the job `DependsOn`, with what a failure of the dependency does (`OnFailure`,
 * a `PolicyCode`), where the edge stands (`State`, an `EdgeState`), whether the check pass of the
 * rescue loop must look at it (`NeedsCheck`: a dependent to cancel or one whose dependency was
 * removed), when it was written and when it settled. The primary key leads with the dependency,
 * which is how a move finds the edges of the rows it moved (one range per moved row). Both ids are
 * the library's own UUIDs, in the install's collation as every other id column (`Id`, `BatchId`,
 * `JobAttempts.JobId`), so they compare with them and with the table variables that hold ids
 * (two column collations meet in `=` only when equal:
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/collation-precedence-transact-sql).
 * The rules: docs/storage.md, "Dependencies".
 */
export const DEPENDENCY_COLUMNS: readonly MssqlColumn[] = [
  c('DependsOn', 'varchar(36)', false),
  c('JobId', 'varchar(36)', false),
  c('OnFailure', 'tinyint', false),
  c('State', 'tinyint', false),
  c('NeedsCheck', 'bit', false),
  c('CreatedAtUtc', 'datetime2(3)', false),
  c('SettledAtUtc', 'datetime2(3)', true),
];

/** The codes an edge's policy and state may hold (`PolicyCode`, `EdgeState`; schema version 19). */
const DEPENDENCY_CHECKS: readonly string[] = [
  `CONSTRAINT [CK_JobDependencies_OnFailure] CHECK (OnFailure IN (${enumCodes(PolicyCode)}))`,
  `CONSTRAINT [CK_JobDependencies_State] CHECK (State IN (${enumCodes(EdgeState)}))`,
];

/** The numeric members of a TypeScript enum, as a literal list. */
function enumCodes(codes: Record<string, string | number>): string {
  return Object.values(codes)
    .filter((v) => typeof v === 'number')
    .join(', ');
}

/** `SchemaMigrations` columns: the ledger of applied versions. */
export const MIGRATION_COLUMNS: readonly MssqlColumn[] = [
  c('Version', 'int', false),
  c('Description', 'nvarchar(200)', false),
  c('AppliedAtUtc', 'datetime2(3)', false, NOW),
];

/** Physical table names. */
export const MSSQL_TABLES = {
  hot: 'JobsHot',
  archive: 'JobsArchive',
  dlq: 'JobsDLQ',
  stats: 'StatsSummary',
  buckets: 'MetricBuckets',
  queues: 'Queues',
  recurring: 'RecurringJobs',
  migrations: 'SchemaMigrations',
  workers: 'Workers',
  audit: 'AuditLog',
  settings: 'Settings',
  attempts: 'JobAttempts',
  keys: 'DedupeKeys',
  groups: 'JobGroups',
  batches: 'Batches',
  callbacks: 'BatchCallbacks',
  dependencies: 'JobDependencies',
} as const;

/** Logical table key. */
export type MssqlTable = keyof typeof MSSQL_TABLES;

/** `[schema].[Table]`; `schema` must already be a validated identifier. */
export function qualify(schema: string, table: MssqlTable): string {
  return `[${schema}].[${MSSQL_TABLES[table]}]`;
}

/** A column as a new install declares it: name, type (keys binary) and nullability. */
function columnSpec(col: MssqlColumn): string {
  return `${col.name} ${columnType(col, keyCollate(true))} ${col.nullable ? 'NULL' : 'NOT NULL'}`;
}

/** {@link columnSpec} with the column's named default, as CREATE TABLE and ALTER TABLE … ADD declare it. */
function columnDdl(table: string, col: MssqlColumn): string {
  const def = col.default ? ` CONSTRAINT [DF_${table}_${col.name}] DEFAULT ${col.default}` : '';
  return `${columnSpec(col)}${def}`;
}

/**
 * The type of `col` as declared: a key column followed by `collate` ({@link keyCollate}: the
 * tables of a new install, and the table variables of statements run against a binary-key
 * install, which must compare in the same collation: two column collations meet in `=` only when
 * equal, else error 468, and a table variable's columns take the database's default
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/collation-precedence-transact-sql)).
 * A {@link MssqlColumn.binary} column is binary whatever `collate` says: it is binary in every
 * install's tables, so a table variable that holds it is too.
 */
export function columnType(col: MssqlColumn, collate: string): string {
  if (col.binary) return `${col.type}${keyCollate(true)}`;
  return col.key ? `${col.type}${collate}` : col.type;
}

/** ` COLLATE <BINARY_KEY_COLLATION>` for a key of a binary-key install, else nothing. */
export function keyCollate(binaryKeys: boolean): string {
  return binaryKeys ? ` COLLATE ${BINARY_KEY_COLLATION}` : '';
}

/** The clustered primary key of each table, `PK_<Table>`. */
const PRIMARY_KEYS: Record<MssqlTable, string> = {
  hot: 'Id',
  archive: 'Id',
  dlq: 'Id',
  stats: 'Queue',
  buckets: 'BucketUtc, Queue, Outcome, FailureReason',
  queues: 'Name',
  recurring: 'Name',
  migrations: 'Version',
  workers: 'WorkerId',
  audit: 'Id',
  settings: 'Name',
  attempts: 'JobId, Seq',
  keys: '[Key]',
  groups: 'Queue, GroupKey',
  batches: 'Id',
  callbacks: 'BatchId, Kind',
  dependencies: 'DependsOn, JobId',
};

/** The tables stored with `DATA_COMPRESSION = PAGE` (the history, the buckets, the attempts). */
const PAGE_COMPRESSED: ReadonlySet<MssqlTable> = new Set(['archive', 'dlq', 'buckets', 'attempts']);

/** `WITH (…)` of a table or an index: its compression, then `options`; nothing without either. */
function withClause(compressed: boolean, options: readonly string[] = []): string {
  const all = [...(compressed ? ['DATA_COMPRESSION = PAGE'] : []), ...options];
  return all.length > 0 ? ` WITH (${all.join(', ')})` : '';
}

/** The primary key constraint of `table`, as CREATE TABLE and ALTER TABLE … ADD declare it. */
function primaryKey(table: MssqlTable): string {
  return `CONSTRAINT [PK_${MSSQL_TABLES[table]}] PRIMARY KEY CLUSTERED (${PRIMARY_KEYS[table]})`;
}

/**
 * `CREATE TABLE` of `table` where it is missing (and, with `also`, where that condition holds too):
 * its columns as a new install declares them, its clustered primary key, its `checks`.
 */
function createTable(
  schema: string,
  table: MssqlTable,
  columns: readonly MssqlColumn[],
  checks: readonly string[] = [],
  also = '',
): string {
  const name = MSSQL_TABLES[table];
  const body = [...columns.map((col) => columnDdl(name, col)), primaryKey(table), ...checks]
    .map((line) => `    ${line}`)
    .join(',\n');
  return [
    `IF OBJECT_ID(N'${qualify(schema, table)}', N'U') IS NULL${also}`,
    `BEGIN`,
    `  CREATE TABLE ${qualify(schema, table)} (`,
    body,
    `  )${withClause(PAGE_COMPRESSED.has(table))};`,
    `END;`,
  ].join('\n');
}

interface IndexSpec {
  /** Which query the index serves (printed as a comment above it). */
  serves: string;
  table: MssqlTable;
  name: string;
  unique?: boolean;
  keys: string;
  include?: string;
  where?: string;
  compressed?: boolean;
}

const INDEXES: readonly IndexSpec[] = [
  {
    serves:
      'fetchNextBatch, queue-wide handlers: CROSS APPLY (SELECT TOP (…) … WHERE Queue = q AND Status = 0 ORDER BY Priority DESC, DueAtUtc, Id) reads each queue in index order (Id is the row locator, the last key)',
    table: 'hot',
    name: 'IX_JobsHot_Claim',
    keys: 'Queue, Priority DESC, DueAtUtc',
    include: 'Type, ScheduledAtUtc',
    where: 'Status = 0',
  },
  {
    serves:
      'fetchNextBatch, exact (queue, type) pairs: the seek carries the type, so rows of types this worker cannot run are never read (schema version 2; INCLUDE (PayloadVersion) from version 14, below)',
    table: 'hot',
    name: 'IX_JobsHot_ClaimType',
    keys: 'Queue, Type, Priority DESC, DueAtUtc',
    where: 'Status = 0',
  },
  {
    serves:
      'fetchNextBatch active count per budgeted queue (READCOMMITTEDLOCK), queue stats and health',
    table: 'hot',
    name: 'IX_JobsHot_Active',
    keys: 'Queue',
    where: 'Status IN (1, 2)',
  },
  {
    serves:
      'enqueue: the active idempotency key (range-locked with UPDLOCK, HOLDLOCK); the unique backstop',
    table: 'hot',
    name: 'UX_JobsHot_IdempotencyKey',
    unique: true,
    keys: 'IdempotencyKey',
    where: 'IdempotencyKey IS NOT NULL',
  },
  {
    serves: 'recoverAbandoned: Fetched rows whose LastUpdatedUtc is older than the timeout',
    table: 'hot',
    name: 'IX_JobsHot_FetchedRecovery',
    keys: 'LastUpdatedUtc',
    where: 'Status = 1',
  },
  {
    serves:
      'archiveZombies: Processing rows by HeartbeatUtc, with the queue for its zombie timeout',
    table: 'hot',
    name: 'IX_JobsHot_ProcessingHeartbeat',
    keys: 'HeartbeatUtc',
    include: 'Queue',
    where: 'Status = 2',
  },
  {
    serves:
      'listActive: (EnqueuedAtUtc, Id) newest or oldest first from the cursor (Id is the row locator, the last key) (schema version 5)',
    table: 'hot',
    name: 'IX_JobsHot_Enqueued',
    keys: 'EnqueuedAtUtc',
  },
  {
    serves: 'listActive filtered by queue (schema version 5)',
    table: 'hot',
    name: 'IX_JobsHot_QueueEnqueued',
    keys: 'Queue, EnqueuedAtUtc',
  },
  {
    serves:
      'listArchive: (FinishedAtUtc, Id) from the cursor (Id is the row locator, the last key); archive retention by date',
    table: 'archive',
    name: 'IX_JobsArchive_FinishedAtUtc',
    keys: 'FinishedAtUtc',
    compressed: true,
  },
  {
    serves: 'listArchive filtered by queue; countExactly of the archive by queue',
    table: 'archive',
    name: 'IX_JobsArchive_Queue',
    keys: 'Queue, FinishedAtUtc',
    compressed: true,
  },
  {
    serves: 'listArchive filtered by job type (schema version 5)',
    table: 'archive',
    name: 'IX_JobsArchive_Type',
    keys: 'Type, FinishedAtUtc',
    compressed: true,
  },
  {
    serves:
      'listDlq: (FailedAtUtc, Id) from the cursor (Id is the row locator, the last key); resurrectByFilter oldest first, DLQ retention by date, top errors (recent rows)',
    table: 'dlq',
    name: 'IX_JobsDLQ_FailedAtUtc',
    keys: 'FailedAtUtc',
    compressed: true,
  },
  {
    serves: 'listDlq and bulk DLQ actions filtered by queue; countExactly of the DLQ by queue',
    table: 'dlq',
    name: 'IX_JobsDLQ_Queue',
    keys: 'Queue, FailedAtUtc',
    compressed: true,
  },
  {
    serves: 'listDlq and bulk DLQ actions filtered by failure reason',
    table: 'dlq',
    name: 'IX_JobsDLQ_Reason',
    keys: 'FailureReason, FailedAtUtc',
    compressed: true,
  },
  {
    serves: 'listDlq and bulk DLQ actions filtered by job type',
    table: 'dlq',
    name: 'IX_JobsDLQ_Type',
    keys: 'Type, FailedAtUtc',
    compressed: true,
  },
  {
    serves:
      "getThroughputSeries of one queue and getQueueHealth's start lag: one queue's buckets by time (schema version 6)",
    table: 'buckets',
    name: 'IX_MetricBuckets_Queue',
    keys: 'Queue, BucketUtc',
    compressed: true,
  },
  {
    serves:
      'getAuditLog: (AtUtc, Id) newest first from the cursor, and audit retention (schema version 7)',
    table: 'audit',
    name: 'IX_AuditLog_At',
    keys: 'AtUtc, Id',
  },
];

/** `IX_JobsHot_ClaimType` as version 14 defines it: version 2's keys, INCLUDE (PayloadVersion). */
const CLAIM_TYPE_INDEX: IndexSpec = {
  ...INDEXES.find((index) => index.name === 'IX_JobsHot_ClaimType')!,
  include: 'PayloadVersion',
};

/** `IX_JobsHot_Held` (schema version 13): the held rows of a queue, and only those. */
const HELD_INDEX: IndexSpec = {
  serves:
    'getQueueHealth: the held rows of one queue (schema version 13); the index holds only those.',
  table: 'hot',
  name: 'IX_JobsHot_Held',
  keys: 'Queue, HeldSinceUtc',
  include: 'DueAtUtc',
  where: 'Status = 0 AND HeldSinceUtc IS NOT NULL',
};

/**
 * `IX_JobsHot_GroupPending` (schema version 17): a grouped queue's Pending rows by group, in claim
 * order within each group, and only rows that have a group, so a queue without groups never
 * writes to it. The grouped claim's walk seeks it once per group (the first key after the last
 * one visited: a drained group has no entry left), and reads each group's due rows from it in
 * claim order; `Type` and `PayloadVersion` are included for the handler filter of a worker that
 * runs only some types of the queue. `Id` is the row locator, the last key.
 */
const GROUP_PENDING_INDEX: IndexSpec = {
  serves:
    "the grouped claim's walk over a queue's groups and each group's rows in claim order (schema version 17)",
  table: 'hot',
  name: 'IX_JobsHot_GroupPending',
  keys: 'Queue, GroupKey, Priority DESC, DueAtUtc',
  include: 'Type, PayloadVersion',
  where: 'Status = 0 AND GroupKey IS NOT NULL',
};

/**
 * `IX_JobsHot_GroupActive` (schema version 17): the Fetched and Processing rows of one group of a
 * queue, what its group concurrency counts (and `getQueueGroups` reads).
 */
const GROUP_ACTIVE_INDEX: IndexSpec = {
  serves:
    "the grouped claim's group concurrency: one group's Fetched and Processing rows (schema version 17)",
  table: 'hot',
  name: 'IX_JobsHot_GroupActive',
  keys: 'Queue, GroupKey',
  where: 'Status IN (1, 2) AND GroupKey IS NOT NULL',
};

/** The indexes of version 17, created in its step. */
const GROUP_INDEXES: readonly IndexSpec[] = [GROUP_PENDING_INDEX, GROUP_ACTIVE_INDEX];

/** `IX_DedupeKeys_Job` (schema version 16): which key a job holds (`getJob`). */
const DEDUPE_JOB_INDEX: IndexSpec = {
  serves: 'getJob: the dedupe key a job holds, a seek by its id (schema version 16)',
  table: 'keys',
  name: 'IX_DedupeKeys_Job',
  keys: 'JobId',
};

/** The statement each pillar's batch index serves, before its generic use (a view of a batch). */
const BATCH_INDEX_USE: Record<'archive' | 'dlq' | 'hot', string> = {
  archive: 'getBatchResults (a page of results, in id order): ',
  dlq: '',
  hot: 'batchHotJobIds (a cancel of a batch): ',
};

/**
 * The filtered indexes of schema version 18: the rows of a batch in each pillar (a batch's jobs
 * wherever they are: the hot ones for a cancel of the batch, `batchHotJobIds`; the archived ones,
 * keyed `(BatchId, Id)`, for a page of their results, `getBatchResults`; the others for a view of
 * its finished jobs), and only those, so a job outside any batch writes no entry in them. The
 * pillars' rows of an earlier version all hold NULL, so building each one reads its table once and
 * writes nothing.
 */
const BATCH_INDEXES: readonly IndexSpec[] = (['archive', 'dlq', 'hot'] as const).map((table) => ({
  serves: `${BATCH_INDEX_USE[table]}a batch's jobs in ${MSSQL_TABLES[table]}, only rows of a batch (schema version 18)`,
  table,
  name: `IX_${MSSQL_TABLES[table]}_Batch`,
  // The Archive's in id order: a page of results is one range of it.
  keys: table === 'archive' ? 'BatchId, Id' : 'BatchId',
  where: 'BatchId IS NOT NULL',
  compressed: PAGE_COMPRESSED.has(table),
}));

/**
 * `UX_BatchCallbacks_Job` (schema version 18): whether a job is a callback, a seek by its id (the
 * settle step of every move leaves callbacks out of their batch's counts); unique, as each
 * callback's job id is.
 */
const BATCH_CALLBACK_JOB_INDEX: IndexSpec = {
  serves:
    'the moves: whether a moved job is a callback rather than a member of its batch, a seek by its id (schema version 18)',
  table: 'callbacks',
  name: 'UX_BatchCallbacks_Job',
  unique: true,
  keys: 'JobId',
};

/**
 * `IX_Batches_Settled` (schema version 18): the settled batches in the order they settled, only
 * those (`SettledAtUtc IS NOT NULL`), so retention reads the oldest before its cutoff as one range.
 */
const BATCH_SETTLED_INDEX: IndexSpec = {
  serves:
    'applyRetention: retention of batches, those settled before a cutoff, oldest first (schema version 18)',
  table: 'batches',
  name: 'IX_Batches_Settled',
  keys: 'SettledAtUtc',
  where: 'SettledAtUtc IS NOT NULL',
};

/**
 * `IX_JobDependencies_Job` (schema version 19): a job's own edges (the primary key leads with the
 * dependency), a seek by its id.
 */
const DEPENDENCY_JOB_INDEX: IndexSpec = {
  serves:
    'getDependencies (the edges a job waits on) and a purge or retention of a dependent (its edges go with it), a seek by its id (schema version 19)',
  table: 'dependencies',
  name: 'IX_JobDependencies_Job',
  keys: 'JobId',
};

/**
 * `IX_JobDependencies_Check` (schema version 19): the edges marked for the check pass, oldest
 * first, and only those (`NeedsCheck = 1`), so the pass reads them as one range of an index that
 * is empty while nothing failed.
 */
const DEPENDENCY_CHECK_INDEX: IndexSpec = {
  serves:
    'checkDependencies: the edges the check pass must look at, oldest first; the index holds only those (schema version 19)',
  table: 'dependencies',
  name: 'IX_JobDependencies_Check',
  keys: 'CreatedAtUtc',
  where: 'NeedsCheck = 1',
};

/**
 * `IX_JobsHot_Waiting` (schema version 19): a queue's Waiting rows in enqueue order, and only
 * those, so the active list filtered on status 7 and the waiting counts read them alone.
 */
const WAITING_INDEX: IndexSpec = {
  serves:
    'listActive of the Waiting rows, the waiting counts of getSummary and getQueueStats (schema version 19); the index holds only those',
  table: 'hot',
  name: 'IX_JobsHot_Waiting',
  keys: 'Queue, EnqueuedAtUtc',
  where: 'Status = 7',
};

/**
 * The statuses a `JobsHot` row may hold: Pending, Fetched, Processing and (schema version 19)
 * Waiting.
 */
const HOT_STATUS_CHECK = `CONSTRAINT [CK_JobsHot_Status] CHECK (Status IN (0, 1, 2, ${JobStatus.Waiting}))`;

/**
 * `CREATE … INDEX` of `index`, with `options` after its compression in `WITH (…)`, and `ON
 * <dataSpace>` when given (a partition scheme and its column, {@link mssqlPartitionScript}).
 */
function indexStatement(
  schema: string,
  index: IndexSpec,
  options: readonly string[] = [],
  dataSpace?: string,
): string {
  const kind = index.unique ? 'UNIQUE NONCLUSTERED' : 'NONCLUSTERED';
  return (
    `CREATE ${kind} INDEX [${index.name}] ON ${qualify(schema, index.table)} (${index.keys})` +
    (index.include ? ` INCLUDE (${index.include})` : '') +
    (index.where ? ` WHERE ${index.where}` : '') +
    withClause(index.compressed ?? false, options) +
    (dataSpace ? ` ON ${dataSpace}` : '') +
    ';'
  );
}

/**
 * `index` where missing. `apart`: compiled apart (`EXEC`), for an index that names a column the
 * same batch may have just added to an existing table, which a statement compiled with the batch
 * could not name (see {@link HELD_V13_NOTE}).
 */
function createIndex(schema: string, index: IndexSpec, apart = false): string {
  const table = qualify(schema, index.table);
  const statement = indexStatement(schema, index);
  return [
    `-- ${index.serves}`,
    `IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'${table}') AND name = N'${index.name}')`,
    apart ? `  EXEC(N'${statement}');` : `  ${statement}`,
  ].join('\n');
}

/**
 * Why `JobsHot` has `LOCK_ESCALATION = DISABLE` (printed above the statement in the DDL).
 *
 * SQL Server escalates to a table lock when one statement holds about 5,000 locks on one table
 * or index
 * (https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide#lock-escalation).
 * On the hot table a table lock stops every worker: claims read `WITH (READPAST)`, which skips
 * locked rows but cannot skip a table lock. Claims and rescues lock O(batch) rows by key, but a
 * `cancel` of up to 10,000 ids, an `enqueueMany` chunk of 1,000 rows (each row also has keys in
 * up to six nonclustered indexes) or a DBA's ad-hoc UPDATE can cross it. `DISABLE` keeps row
 * locks, at about 100 bytes of lock memory each
 * ("prevents lock escalation in most cases":
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql#lock_escalation--auto--table--disable-).
 * Set once, by the version-2 step: a DBA who prefers `AUTO` may set it back, and a later run of
 * this script leaves that choice alone. The archive, DLQ and counter tables keep the default.
 */
const LOCK_ESCALATION_NOTE: readonly string[] = [
  'JobsHot: LOCK_ESCALATION = DISABLE. An escalated table lock on the hot table would stop every',
  'worker (READPAST skips locked rows, not a table lock); claims lock O(batch) rows, but a bulk',
  'cancel or an ad-hoc update can cross the ~5,000-lock threshold. Set once (schema version 2);',
  'a DBA may set AUTO again and this script will not undo it. See',
  'https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide#lock-escalation',
];

/** The values `RecurringJobs.Source` may hold (schema version 3). */
const RECURRING_SOURCE_CHECK = `CONSTRAINT [CK_RecurringJobs_Source] CHECK (Source IN ('decorator', 'runtime'))`;

/** The column `name` of `table` as its column list defines it (what a version that adds it adds). */
function columnOf(table: MssqlTable, columns: readonly MssqlColumn[], name: string): MssqlColumn {
  const column = columns.find((col) => col.name === name);
  if (!column) throw new Error(`${MSSQL_TABLES[table]} has no column ${name}`);
  return column;
}

/**
 * Why version 3 adds its columns the way it does (printed above the statements in the DDL).
 * `COL_LENGTH` is NULL for a column that does not exist, so the step runs once and a re-run of the
 * script changes nothing
 * (https://learn.microsoft.com/en-us/sql/t-sql/functions/col-length-transact-sql). A NOT NULL
 * column added with a DEFAULT gets the default in every existing row, and with a constant default
 * it is a metadata-only change on Enterprise edition and Azure SQL
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql#adding-not-null-columns-as-an-online-operation).
 * Rows of earlier versions came from `@RecurringJob`, hence 'decorator'. A worker of version 2
 * keeps running: it names its columns on insert and on select.
 */
const RECURRING_V3_NOTE: readonly string[] = [
  'RecurringJobs: Source and LastJobId (schema version 3). COL_LENGTH is NULL while a column is',
  'missing, so each ADD runs once. Existing rows get the default (they came from decorators):',
  'https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql#adding-not-null-columns-as-an-online-operation',
];

/**
 * Why version 13 adds its columns and index the way it does (printed above the statements). A
 * nullable column without a default is a metadata-only change
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql); `StatsSummary`
 * has a row per queue, so its `NOT NULL DEFAULT 0` column is short on any edition. The index names
 * a column this batch may have just added, so it is compiled apart (`EXEC`), after the ALTER: a
 * statement naming a missing column of an existing table fails when the batch compiles
 * (deferred name resolution covers missing tables, not missing columns:
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/create-procedure-transact-sql#deferred-name-resolution).
 */
const HELD_V13_NOTE: readonly string[] = [
  'JobsHot.HeldSinceUtc and StatsSummary.DeferredTotal (schema version 13): added where missing.',
  'IX_JobsHot_Held names the new column, so EXEC compiles it after the ALTER.',
];

/**
 * Why version 15 adds `JobsArchive.Result` the way it does (printed above the statement). The
 * column is nullable and has no default, so `ALTER TABLE … ADD` changes the table's metadata, not
 * its rows: every row archived before reads NULL and none is rewritten, on every edition. What
 * touches the rows is a `NOT NULL` column or a default added `WITH VALUES`: each existing row gets
 * the value, which is a metadata-only ("online") change only for a runtime-constant default on
 * Enterprise-class editions
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql#adding-not-null-columns-as-an-online-operation),
 * and the archive grows until retention. The schema-modification lock the ADD takes is held to the
 * step's COMMIT, briefly. `COL_LENGTH` is NULL while the column is missing, so the ADD runs once
 * (https://learn.microsoft.com/en-us/sql/t-sql/functions/col-length-transact-sql).
 */
const RESULT_V15_NOTE: readonly string[] = [
  'JobsArchive.Result (schema version 15): the stored result of a job, added where missing. A',
  'nullable column without a default: a metadata-only change, no archived row is rewritten:',
  'https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql',
];

/**
 * Why version 16 creates `DedupeKeys` the way it does (printed above the statements). A new table
 * and its index, created where missing (`OBJECT_ID … IS NULL`, `sys.indexes`), in the version's
 * own step, so the locks they take end with that step's COMMIT; nothing else changes, and no
 * existing table is locked. The index is created by a plain statement, not through `EXEC`: on a
 * database without the table the statement naming it compiles anyway, since deferred name
 * resolution covers a missing table (it does not cover a missing column of an existing table,
 * which is why version 13 compiles its index apart)
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/create-procedure-transact-sql#deferred-name-resolution);
 * version 1's step creates its tables and their indexes in the same way. The key is binary on every
 * install ({@link DEDUPE_KEY_COLUMNS}).
 */
const DEDUPE_V16_NOTE: readonly string[] = [
  'DedupeKeys and IX_DedupeKeys_Job (schema version 16): dedupe keys of NewJob.dedupe, created where',
  'missing. A new table: no existing row changes. [Key] is binary on every install (a new table has',
  'no rows of another collation to convert).',
];

/**
 * Why version 17 adds what it adds the way it does (printed above the statements). `GroupKey` and
 * the queue's group columns are nullable without a default: adding one changes the table's
 * metadata, not its rows (https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql),
 * and `COL_LENGTH` is NULL while one is missing, so each ADD runs once
 * (https://learn.microsoft.com/en-us/sql/t-sql/functions/col-length-transact-sql). `GroupKey` and
 * `GroupCursor` are binary on every install ({@link GROUP_KEY_COLUMN}). `JobGroups` is created
 * where missing with its `Queue` in the collation of `JobsHot.Queue` (binary on an install created
 * or converted with binary keys, the database's otherwise, as every queue name of that install),
 * so that it compares with `Queues.Name` (two column collations meet in `=` only when equal,
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/collation-precedence-transact-sql): the
 * install of an earlier release gets it through `EXEC`, a statement built for that case and
 * compiled only when it runs, so the script's one static `CREATE TABLE` of it is a new install's. The
 * two filtered indexes name `GroupKey`, which this batch may have just added, so they are compiled
 * apart (`EXEC`) after the ALTER, like version 13's: deferred name resolution covers a missing
 * table, not a missing column of an existing one
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/create-procedure-transact-sql#deferred-name-resolution).
 * Writers to `JobsHot` wait while they build (the hot table holds only live jobs).
 */
const GROUPS_V17_NOTE: readonly string[] = [
  'Groups (schema version 17): GroupKey in JobsHot, JobsArchive and JobsDLQ and the group columns of',
  'Queues (nullable, no default: metadata-only), the JobGroups table (its Queue in the collation of',
  'JobsHot.Queue) and the filtered indexes of the grouped rows, compiled apart (EXEC) since they',
  'name a column this batch may have added.',
];

/**
 * Why version 18 adds what it adds the way it does (printed above the statements). `BatchId` is
 * nullable without a default: adding it changes each pillar's metadata, not its rows
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql), and
 * `COL_LENGTH` is NULL while it is missing, so each ADD runs once
 * (https://learn.microsoft.com/en-us/sql/t-sql/functions/col-length-transact-sql). `Batches` is
 * created where missing like any new table; `BatchCallbacks` in the collation of `JobsHot.Queue`,
 * as version 17 creates `JobGroups` (its `Queue` is compared with `Queues.Name` when a callback
 * fires), with its unique index of the callbacks' job ids and the filtered index of the settled
 * batches (retention of batches) created by plain statements (deferred name resolution covers a
 * missing table, as in version 16). The pillars' filtered indexes name
 * the column this batch may have just added, so they are compiled apart (`EXEC`) after the ALTERs,
 * as version 13's: deferred name resolution does not cover a missing column of an existing table
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/create-procedure-transact-sql#deferred-name-resolution).
 * Each build reads its table once (no row of an earlier version is in the index) while writers to
 * that table wait, like version 5's archive index: the Archive and the DLQ first, the hot table
 * last.
 */
const BATCHES_V18_NOTE: readonly string[] = [
  'Batches (schema version 18): BatchId in JobsHot, JobsArchive and JobsDLQ (nullable, no default:',
  'metadata-only), the Batches table, the BatchCallbacks table (its Queue and Type in the collation',
  'of JobsHot.Queue) and its unique job index, the filtered index of the settled batches (retention',
  'of batches), and the filtered indexes of the batch rows, compiled apart (EXEC) since they name a',
  'column this batch may have added.',
];

/**
 * Why version 19 adds what it adds the way it does (printed above the statements). `WaitingOn` is
 * nullable without a default in every pillar, and so is `HasDependents` in the Archive and the DLQ
 * ({@link HISTORY_HAS_DEPENDENTS}): adding them changes the tables' metadata, not their rows
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql); in `JobsHot`
 * `HasDependents` is `bit NOT NULL DEFAULT 0`, which fills the live jobs' rows (a metadata-only
 * change where the edition supports it). `COL_LENGTH` is NULL while a column is missing, so each
 * ADD runs once (https://learn.microsoft.com/en-us/sql/t-sql/functions/col-length-transact-sql).
 *
 * `CK_JobsHot_Status` admits status 7 (Waiting): a CHECK constraint cannot be altered, so it is
 * dropped (where it exists: a constraint is an object of the schema, `OBJECT_ID(…, N'C')`) and
 * added again, once (guarded by the ledger, as version 2's lock escalation is), in the step's one
 * transaction, so no writer sees the table without it. It is added with the default of a new
 * constraint, `WITH CHECK` ("If not specified, WITH CHECK is assumed for new constraints",
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-table-transact-sql, "WITH CHECK |
 * WITH NOCHECK"; the T-SQL grammar the tests parse with refuses the explicit keywords before a
 * CHECK): every existing row is validated against it (all hold 0–2, so it passes), and the
 * constraint stays trusted, which a `NOCHECK` one is not until a later `WITH CHECK CHECK
 * CONSTRAINT`. The validation reads the hot table, which holds only live jobs, under the schema
 * modification lock the step holds to its COMMIT, as version 14's index rebuild does.
 *
 * `JobDependencies` and its two indexes are created where missing, by plain statements (deferred
 * name resolution covers a missing table, as in version 16); its ids keep the install's collation
 * ({@link DEPENDENCY_COLUMNS}). `IX_JobsHot_Waiting` names columns every version had, so it is a
 * plain statement too; it is built last, reading the hot table once.
 */
const DEPENDENCIES_V19_NOTE: readonly string[] = [
  'Dependencies (schema version 19): WaitingOn in JobsHot, JobsArchive and JobsDLQ and HasDependents',
  'in the Archive and the DLQ (nullable, no default: metadata-only), HasDependents NOT NULL DEFAULT 0',
  'in JobsHot; CK_JobsHot_Status admits 7 (Waiting), dropped and added again (validated), once; the',
  'JobDependencies table with its indexes, and the filtered index of the Waiting rows.',
];

/**
 * `table` where missing, its key columns ({@link MssqlColumn.key}) in the collation of
 * `JobsHot.Queue`, as that install's other keys: binary where `JobsHot.Queue` is binary, else (an
 * install of an earlier release, until `--binary-keys`) in the database's collation, through
 * `EXEC`, a statement built for that case and compiled only when it runs. `JobGroups` (version
 * 17) and `BatchCallbacks` (version 18).
 */
function createInKeyCollation(
  schema: string,
  table: MssqlTable,
  columns: readonly MssqlColumn[],
  checks: readonly string[] = [],
): string[] {
  const name = qualify(schema, table);
  const binaryHot =
    ` AND EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(N'${qualify(schema, 'hot')}')` +
    ` AND name = N'Queue' AND collation_name = N'${BINARY_KEY_COLLATION}')`;
  const legacy = columns.map((col) =>
    col.key ? c(col.name, col.type, col.nullable, col.default) : col,
  );
  const legacyBody = [
    ...legacy.map((col) => columnDdl(MSSQL_TABLES[table], col)),
    primaryKey(table),
    ...checks,
  ]
    .join(', ')
    .replace(/'/g, "''");
  return [
    createTable(schema, table, columns, checks, binaryHot),
    `IF OBJECT_ID(N'${name}', N'U') IS NULL`,
    `  EXEC(N'CREATE TABLE ${name} (${legacyBody});');`,
  ];
}

/** The ledger row of `version` (from {@link MSSQL_MIGRATIONS}), collected into `@Applied`. */
function recordVersion(schema: string, version: number): string {
  const migration = MSSQL_MIGRATIONS.find((m) => m.version === version);
  if (!migration) throw new Error(`SQL Server schema version ${version} has no description`);
  const description = migration.description.replace(/'/g, "''");
  return (
    `  INSERT INTO ${qualify(schema, 'migrations')} (Version, Description) OUTPUT inserted.Version ` +
    `INTO @Applied (Version) VALUES (${version}, N'${description}');`
  );
}

/**
 * How long one DDL statement of the bootstrap waits for its table's lock, in ms. An `ALTER TABLE`
 * or `CREATE INDEX` needs a schema-modification lock (Sch-M), and while it waits for one (behind a
 * long transaction that reads the table), every later request for the table queues behind the
 * waiting Sch-M: a worker's claim would stall as long as the upgrade waits
 * (https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide#lock-compatibility).
 * So the wait is bounded (`SET LOCK_TIMEOUT`,
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/set-lock-timeout-transact-sql): past it
 * the statement fails with 1222, `XACT_ABORT` rolls its version's step back (the versions before
 * it stay committed), and the storage's transient retry (1222 is transient) runs the bootstrap
 * again after a jittered pause, from that version, in which the queued
 * requests go through. The applock keeps its own, longer wait (`@LockTimeout`).
 */
export const SCHEMA_LOCK_WAIT_MS = 5_000;

const SCHEMA_LOCK_WAIT_NOTE: readonly string[] = [
  `Each DDL statement waits at most ${SCHEMA_LOCK_WAIT_MS} ms for its table's schema lock: a waiting Sch-M`,
  "queues every later request for the table (a worker's claim) behind it. On timeout (1222) the",
  'step rolls back (XACT_ABORT) and the bootstrap is run again from it after a pause.',
];

/** The applock resource that serialises schema bootstrap across processes. */
export function schemaLockResource(schema: string): string {
  return `chokaq:schema:${schema}`;
}

/**
 * The error the bootstrap raises when the applock is busy past its wait: a user error number
 * (above 50000, as `THROW` requires:
 * https://learn.microsoft.com/en-us/sql/t-sql/language-elements/throw-transact-sql), classed as
 * transient, so a pod that starts during another's long upgrade retries with backoff instead of
 * failing its start.
 */
export const SCHEMA_LOCK_BUSY_ERROR = 51000;

/**
 * Why each schema version commits on its own (printed above the first step). A step that fails
 * (its DDL lock wait, a timeout) rolls back only itself (`XACT_ABORT`), the versions before it
 * stay committed and recorded, and the next run starts from the failed one: a large upgrade is
 * never rolled back and repeated from the start, and the locks a step takes on a table are held
 * only until that step's COMMIT, not to the end of the whole upgrade. Every step takes the applock
 * again, and every statement of a step is guarded (`IF … IS NULL`, `IF NOT EXISTS`), so two
 * processes that interleave between steps each find the other's versions done.
 */
const PER_VERSION_NOTE: readonly string[] = [
  'Each version commits on its own: a failed step rolls back only itself, the versions before it',
  'stay recorded, and the next run starts from it. Every step takes the applock again.',
];

/** How both schema scripts begin: the session options their DDL needs, and the applock's result. */
const SCRIPT_PROLOGUE: readonly string[] = [
  `SET NOCOUNT ON;`,
  `SET XACT_ABORT ON;`,
  `-- Filtered indexes need these (sqlcmd starts with QUOTED_IDENTIFIER OFF).`,
  `SET ANSI_NULLS ON;`,
  `SET QUOTED_IDENTIFIER ON;`,
  `DECLARE @lockResult int;`,
];

/** The opening of one step: a transaction holding the schema's applock (exclusive, transaction-owned). */
function beginStep(schema: string): string[] {
  return [
    `BEGIN TRAN;`,
    `EXEC @lockResult = sp_getapplock @Resource = N'${schemaLockResource(schema)}', @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 60000;`,
    `IF @lockResult < 0`,
    `BEGIN`,
    `  THROW ${SCHEMA_LOCK_BUSY_ERROR}, 'ChokaQ: could not take the schema bootstrap lock within 60 s (another process is migrating the schema).', 1;`,
    `END;`,
  ];
}

/**
 * The complete, idempotent DDL for `schema` as one T-SQL batch (no `GO`), in one transaction per
 * schema version ({@link PER_VERSION_NOTE}): each step takes an exclusive, transaction-owned
 * `sp_getapplock` so several processes can start at once, creates what is missing
 * (`IF OBJECT_ID … IS NULL`, `IF NOT EXISTS … sys.indexes`, `COL_LENGTH`), records its version in
 * `SchemaMigrations`, and commits. Its one result set lists the versions this run recorded
 * (empty when the schema was current), so a start logs a migration once and a current schema not
 * at all. `schema` must be a validated identifier (it is inlined: DDL cannot take identifiers as
 * parameters, and a DBA runs this text without parameters).
 *
 * `CREATE SCHEMA` must be alone in its batch, hence `EXEC(N'…')`. Run through TypeORM the batch
 * executes inside `sp_executesql`, so its `SET` options end with it.
 */
export function mssqlSchemaDdl(schema: string): string {
  const t = (name: MssqlTable) => qualify(schema, name);
  const parts: string[] = [
    `-- ChokaQ for NestJS: SQL Server schema [${schema}], version ${MSSQL_SCHEMA_VERSION}.`,
    `-- Idempotent: safe to run again, and safe while other processes run it (sp_getapplock).`,
    ...SCRIPT_PROLOGUE,
    `-- The versions this run records: the script's one result set, selected after the last COMMIT.`,
    `-- A table variable is not rolled back with a transaction, and lives as long as the batch.`,
    `DECLARE @Applied TABLE (Version int NOT NULL);`,
    ...PER_VERSION_NOTE.map((line) => `-- ${line}`),
    ...beginStep(schema),
    ...SCHEMA_LOCK_WAIT_NOTE.map((line) => `-- ${line}`),
    `SET LOCK_TIMEOUT ${SCHEMA_LOCK_WAIT_MS};`,
    `IF SCHEMA_ID(N'${schema}') IS NULL EXEC(N'CREATE SCHEMA [${schema}]');`,
    createTable(schema, 'hot', HOT_TABLE_COLUMNS, [HOT_STATUS_CHECK]),
    createTable(schema, 'archive', ARCHIVE_TABLE_COLUMNS),
    createTable(schema, 'dlq', DLQ_COLUMNS, [
      `CONSTRAINT [CK_JobsDLQ_Status] CHECK (Status IN (4, 5, 6))`,
    ]),
    createTable(schema, 'stats', STATS_COLUMNS),
    createTable(schema, 'buckets', BUCKET_COLUMNS),
    createTable(schema, 'queues', QUEUE_COLUMNS),
    createTable(schema, 'recurring', RECURRING_COLUMNS, [RECURRING_SOURCE_CHECK]),
    createTable(schema, 'migrations', MIGRATION_COLUMNS),
    createTable(schema, 'workers', WORKER_COLUMNS),
    createTable(schema, 'audit', AUDIT_COLUMNS),
    createTable(schema, 'settings', SETTING_COLUMNS),
    `-- JobAttempts (schema version 10): the attempts of jobs that did not end in the archive.`,
    createTable(schema, 'attempts', ATTEMPT_COLUMNS, [ATTEMPT_OUTCOME_CHECK]),
    ...INDEXES.map((index) => createIndex(schema, index)),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 1)`,
    recordVersion(schema, 1),
    `COMMIT;`,
    ...beginStep(schema),
    ...LOCK_ESCALATION_NOTE.map((line) => `-- ${line}`),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 2)`,
    `  ALTER TABLE ${t('hot')} SET (LOCK_ESCALATION = DISABLE);`,
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 2)`,
    recordVersion(schema, 2),
    `COMMIT;`,
    ...beginStep(schema),
    ...RECURRING_V3_NOTE.map((line) => `-- ${line}`),
    `IF COL_LENGTH(N'${t('recurring')}', N'Source') IS NULL`,
    `  ALTER TABLE ${t('recurring')} ADD ${columnDdl(MSSQL_TABLES.recurring, columnOf('recurring', RECURRING_COLUMNS, 'Source'))} ${RECURRING_SOURCE_CHECK};`,
    `IF COL_LENGTH(N'${t('recurring')}', N'LastJobId') IS NULL`,
    `  ALTER TABLE ${t('recurring')} ADD ${columnDdl(MSSQL_TABLES.recurring, columnOf('recurring', RECURRING_COLUMNS, 'LastJobId'))};`,
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 3)`,
    recordVersion(schema, 3),
    `COMMIT;`,
    ...beginStep(schema),
    // Version 4 on an older database: the Workers table is created above with the others; the
    // progress note is added where CREATE TABLE did not put it.
    `-- ProgressNote (schema version 4): a nullable column without a default, added where missing.`,
    ...(['archive', 'dlq', 'hot'] as const).map(
      (table) =>
        `IF COL_LENGTH(N'${t(table)}', N'ProgressNote') IS NULL\n` +
        `  ALTER TABLE ${t(table)} ADD ProgressNote nvarchar(500) NULL;`,
    ),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 4)`,
    recordVersion(schema, 4),
    `COMMIT;`,
    ...beginStep(schema),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 5)`,
    recordVersion(schema, 5),
    `COMMIT;`,
    ...beginStep(schema),
    `-- Version 6: start lag columns of MetricBuckets (a table created at version 6 has them already).`,
    ...BUCKET_LAG_COLUMNS.map(
      (col) =>
        `IF COL_LENGTH(N'${t('buckets')}', N'${col.name}') IS NULL\n  ALTER TABLE ${t('buckets')} ADD ${columnDdl(MSSQL_TABLES.buckets, col)};`,
    ),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 6)`,
    recordVersion(schema, 6),
    `COMMIT;`,
    ...beginStep(schema),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 7)`,
    recordVersion(schema, 7),
    `COMMIT;`,
    ...beginStep(schema),
    ...AUDIT_TARGET_V8_NOTE.map((line) => `-- ${line}`),
    `IF COL_LENGTH(N'${t('audit')}', N'TargetKey') IS NULL`,
    `  ALTER TABLE ${t('audit')} ADD TargetKey AS CAST(LEFT(Target, ${AUDIT_TARGET_KEY_LENGTH}) AS nvarchar(${AUDIT_TARGET_KEY_LENGTH}));`,
    `-- getAuditLog by target: one target's entries, (AtUtc, Id) newest first from the cursor (schema version 8)`,
    `IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'${t('audit')}') AND name = N'IX_AuditLog_Target')`,
    `  EXEC(N'CREATE NONCLUSTERED INDEX [IX_AuditLog_Target] ON ${t('audit')} (TargetKey, AtUtc, Id);');`,
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 8)`,
    recordVersion(schema, 8),
    `COMMIT;`,
    ...beginStep(schema),
    `-- TraceContext (schema version 9): a nullable column without a default, added where missing.`,
    ...(['archive', 'dlq', 'hot'] as const).map(
      (table) =>
        `IF COL_LENGTH(N'${t(table)}', N'TraceContext') IS NULL\n` +
        `  ALTER TABLE ${t(table)} ADD TraceContext varchar(2048) NULL;`,
    ),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 9)`,
    recordVersion(schema, 9),
    `COMMIT;`,
    ...beginStep(schema),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 10)`,
    recordVersion(schema, 10),
    `COMMIT;`,
    ...beginStep(schema),
    `-- Queue rate limits (schema version 11): nullable columns without a default, added where missing.`,
    ...QUEUE_RATE_COLUMNS.map(
      (col) =>
        `IF COL_LENGTH(N'${t('queues')}', N'${col.name}') IS NULL\n` +
        `  ALTER TABLE ${t('queues')} ADD ${columnDdl(MSSQL_TABLES.queues, col)};`,
    ),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 11)`,
    recordVersion(schema, 11),
    `COMMIT;`,
    ...beginStep(schema),
    `-- PayloadVersion (schema version 12), added where missing: nullable in the Archive and the DLQ`,
    `-- (metadata only on every edition; read as 1), int NOT NULL DEFAULT 1 in JobsHot (live jobs only).`,
    ...(
      [
        ['archive', ARCHIVE_COLUMNS],
        ['dlq', DLQ_COLUMNS],
        ['hot', HOT_COLUMNS],
      ] as const
    ).map(
      ([table, columns]) =>
        `IF COL_LENGTH(N'${t(table)}', N'PayloadVersion') IS NULL\n` +
        `  ALTER TABLE ${t(table)} ADD ${columnDdl(MSSQL_TABLES[table], columnOf(table, columns, 'PayloadVersion'))};`,
    ),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 12)`,
    recordVersion(schema, 12),
    `COMMIT;`,
    ...beginStep(schema),
    ...HELD_V13_NOTE.map((line) => `-- ${line}`),
    `IF COL_LENGTH(N'${t('hot')}', N'HeldSinceUtc') IS NULL`,
    `  ALTER TABLE ${t('hot')} ADD ${columnDdl(MSSQL_TABLES.hot, HELD_SINCE_COLUMN)};`,
    `IF COL_LENGTH(N'${t('stats')}', N'DeferredTotal') IS NULL`,
    `  ALTER TABLE ${t('stats')} ADD ${columnDdl(MSSQL_TABLES.stats, DEFERRED_TOTAL_COLUMN)};`,
    createIndex(schema, HELD_INDEX, true),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 13)`,
    recordVersion(schema, 13),
    `COMMIT;`,
    ...beginStep(schema),
    `-- IX_JobsHot_ClaimType INCLUDE (PayloadVersion) (schema version 14): rebuilt where it lacks the column,`,
    `-- compiled apart (EXEC) since the column may have been added by this batch.`,
    `IF NOT EXISTS (SELECT 1 FROM sys.index_columns AS ic INNER JOIN sys.indexes AS ix ON ix.object_id = ic.object_id AND ix.index_id = ic.index_id WHERE ix.object_id = OBJECT_ID(N'${t('hot')}') AND ix.name = N'IX_JobsHot_ClaimType' AND COL_NAME(ic.object_id, ic.column_id) = N'PayloadVersion')`,
    `  EXEC(N'${indexStatement(schema, CLAIM_TYPE_INDEX, ['DROP_EXISTING = ON'])}');`,
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 14)`,
    recordVersion(schema, 14),
    `COMMIT;`,
    ...beginStep(schema),
    ...RESULT_V15_NOTE.map((line) => `-- ${line}`),
    `IF COL_LENGTH(N'${t('archive')}', N'${ARCHIVE_RESULT_COLUMN.name}') IS NULL`,
    `  ALTER TABLE ${t('archive')} ADD ${columnDdl(MSSQL_TABLES.archive, ARCHIVE_RESULT_COLUMN)};`,
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 15)`,
    recordVersion(schema, 15),
    `COMMIT;`,
    ...beginStep(schema),
    ...DEDUPE_V16_NOTE.map((line) => `-- ${line}`),
    createTable(schema, 'keys', DEDUPE_KEY_COLUMNS),
    createIndex(schema, DEDUPE_JOB_INDEX),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 16)`,
    recordVersion(schema, 16),
    `COMMIT;`,
    ...beginStep(schema),
    ...GROUPS_V17_NOTE.map((line) => `-- ${line}`),
    ...(['archive', 'dlq', 'hot'] as const).map(
      (table) =>
        `IF COL_LENGTH(N'${t(table)}', N'${GROUP_KEY_COLUMN.name}') IS NULL\n` +
        `  ALTER TABLE ${t(table)} ADD ${columnDdl(MSSQL_TABLES[table], GROUP_KEY_COLUMN)};`,
    ),
    ...QUEUE_GROUP_COLUMNS.map(
      (col) =>
        `IF COL_LENGTH(N'${t('queues')}', N'${col.name}') IS NULL\n` +
        `  ALTER TABLE ${t('queues')} ADD ${columnDdl(MSSQL_TABLES.queues, col)};`,
    ),
    ...createInKeyCollation(schema, 'groups', JOB_GROUP_COLUMNS),
    ...GROUP_INDEXES.map((index) => createIndex(schema, index, true)),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 17)`,
    recordVersion(schema, 17),
    `COMMIT;`,
    ...beginStep(schema),
    ...BATCHES_V18_NOTE.map((line) => `-- ${line}`),
    ...(['archive', 'dlq', 'hot'] as const).map(
      (table) =>
        `IF COL_LENGTH(N'${t(table)}', N'${BATCH_ID_COLUMN.name}') IS NULL\n` +
        `  ALTER TABLE ${t(table)} ADD ${columnDdl(MSSQL_TABLES[table], BATCH_ID_COLUMN)};`,
    ),
    createTable(schema, 'batches', BATCH_COLUMNS),
    ...createInKeyCollation(schema, 'callbacks', BATCH_CALLBACK_COLUMNS, [
      BATCH_CALLBACK_KIND_CHECK,
    ]),
    createIndex(schema, BATCH_CALLBACK_JOB_INDEX),
    createIndex(schema, BATCH_SETTLED_INDEX),
    ...BATCH_INDEXES.map((index) => createIndex(schema, index, true)),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 18)`,
    recordVersion(schema, 18),
    `COMMIT;`,
    ...beginStep(schema),
    ...DEPENDENCIES_V19_NOTE.map((line) => `-- ${line}`),
    ...(
      [
        ['archive', ARCHIVE_COLUMNS],
        ['dlq', DLQ_COLUMNS],
        ['hot', HOT_COLUMNS],
      ] as const
    ).flatMap(([table, columns]) =>
      [WAITING_ON_COLUMN.name, HAS_DEPENDENTS_COLUMN.name].map(
        (name) =>
          `IF COL_LENGTH(N'${t(table)}', N'${name}') IS NULL\n` +
          `  ALTER TABLE ${t(table)} ADD ${columnDdl(MSSQL_TABLES[table], columnOf(table, columns, name))};`,
      ),
    ),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 19)`,
    `BEGIN`,
    `  IF OBJECT_ID(N'[${schema}].[CK_JobsHot_Status]', N'C') IS NOT NULL`,
    `    ALTER TABLE ${t('hot')} DROP CONSTRAINT [CK_JobsHot_Status];`,
    `  ALTER TABLE ${t('hot')} ADD ${HOT_STATUS_CHECK};`,
    `END;`,
    createTable(schema, 'dependencies', DEPENDENCY_COLUMNS, DEPENDENCY_CHECKS),
    createIndex(schema, DEPENDENCY_JOB_INDEX),
    createIndex(schema, DEPENDENCY_CHECK_INDEX),
    createIndex(schema, WAITING_INDEX),
    `IF NOT EXISTS (SELECT 1 FROM ${t('migrations')} WHERE Version = 19)`,
    recordVersion(schema, 19),
    `COMMIT;`,
    `SELECT Version FROM @Applied ORDER BY Version;`,
  ];
  return `${parts.join('\n')}\n`;
}

/**
 * The key columns of each table ({@link MssqlColumn.key}), as their tables declare them, that an
 * install of an earlier release may hold in the database's collation. `DedupeKeys.[Key]` is not
 * one: version 16 creates it binary on every install ({@link DEDUPE_KEY_COLUMNS}); nor are the
 * {@link MssqlColumn.binary} columns of version 17 (`GroupKey`, `GroupCursor`), binary on every
 * install too. `JobGroups.Queue` is: version 17 creates it in the collation of `JobsHot.Queue`;
 * so are `BatchCallbacks.Queue` and `.Type`, which version 18 creates the same way.
 */
function keyColumnsOf(): Array<{ table: MssqlTable; column: MssqlColumn }> {
  const byTable: Array<[MssqlTable, readonly MssqlColumn[]]> = [
    ['hot', HOT_COLUMNS],
    ['archive', ARCHIVE_COLUMNS],
    ['dlq', DLQ_COLUMNS],
    ['stats', STATS_COLUMNS],
    ['buckets', BUCKET_COLUMNS],
    ['queues', QUEUE_COLUMNS],
    ['recurring', RECURRING_COLUMNS],
    ['groups', JOB_GROUP_COLUMNS],
    ['callbacks', BATCH_CALLBACK_COLUMNS],
  ];
  return byTable.flatMap(([table, columns]) =>
    columns.filter((col) => col.key).map((column) => ({ table, column })),
  );
}

/** The column names of a key or INCLUDE list (`Priority DESC` is `Priority`). */
function columnNames(list: string | undefined): string[] {
  return (list ?? '').split(',').map((part) => part.trim().split(' ')[0]);
}

/**
 * What names a key column, in its definition of the current version: the tables whose primary key
 * does, and the nonclustered indexes (of {@link INDEXES}, `IX_JobsHot_ClaimType` as version 14
 * has it, version 13's `IX_JobsHot_Held`, version 17's {@link GROUP_INDEXES}, version 19's
 * `IX_JobsHot_Waiting`) that key or INCLUDE one.
 */
function keyedDefinitions(): { primaryKeys: MssqlTable[]; indexes: IndexSpec[] } {
  const keys = new Set(keyColumnsOf().map((k) => `${k.table}.${k.column.name}`));
  const names = (table: MssqlTable, lists: Array<string | undefined>) =>
    lists.flatMap(columnNames).some((name) => keys.has(`${table}.${name}`));
  const current = INDEXES.map((index) =>
    index.name === CLAIM_TYPE_INDEX.name ? CLAIM_TYPE_INDEX : index,
  );
  return {
    primaryKeys: (Object.keys(PRIMARY_KEYS) as MssqlTable[]).filter((table) =>
      names(table, [PRIMARY_KEYS[table]]),
    ),
    indexes: [...current, HELD_INDEX, ...GROUP_INDEXES, WAITING_INDEX].filter((index) =>
      names(index.table, [index.keys, index.include]),
    ),
  };
}

/**
 * Why `--binary-keys` converts an install the way it does (printed above its statements).
 */
const BINARY_KEYS_NOTE: readonly string[] = [
  `Converts the key columns (queue, job type, idempotency key, queue and recurring job names) of an`,
  `install created by an earlier release to ${BINARY_KEY_COLLATION}. A column cannot change its`,
  'collation while an index, a statistic or a constraint names it:',
  'https://learn.microsoft.com/en-us/sql/relational-databases/collations/set-or-change-the-column-collation',
  'so they are dropped, the columns altered and the indexes and keys built again, in one transaction',
  'under the schema applock. It rewrites the indexes of the Archive and the DLQ: run it with the',
  'workers stopped, in a maintenance window. Keys that differ only by case must be told apart before',
  'it runs (a primary key or the unique idempotency index would refuse them after: error 1505).',
  'A second run changes nothing (it tests the collation of JobsHot.Queue first).',
];

/**
 * The conversion of an existing install's key columns to {@link BINARY_KEY_COLLATION}, what
 * `chokaq migrate --binary-keys` runs after the ordinary migration: never at startup, since it
 * rebuilds the Archive's and the DLQ's indexes. One transaction under the schema's applock; it
 * does nothing on an install whose `JobsHot.Queue` already has the collation. Statistics that
 * name a key column and are not an index's own (auto-created or user-created) are dropped first
 * through dynamic SQL (their names are the server's); SQL Server creates them again when a query
 * needs them.
 */
export function mssqlBinaryKeysScript(schema: string): string {
  const t = (name: MssqlTable) => qualify(schema, name);
  const keys = keyColumnsOf();
  const { primaryKeys, indexes } = keyedDefinitions();
  const keyColumnList = [...new Set(keys.map((k) => `N'${k.column.name}'`))].join(', ');
  const tableList = [...new Set(keys.map((k) => `OBJECT_ID(N'${t(k.table)}')`))].join(', ');
  return (
    [
      `-- ChokaQ for NestJS: SQL Server schema [${schema}], binary key columns.`,
      ...BINARY_KEYS_NOTE.map((line) => `-- ${line}`),
      ...SCRIPT_PROLOGUE,
      `DECLARE @dropStats nvarchar(max) = N'';`,
      `DECLARE @converted int = 0;`,
      ...beginStep(schema),
      `IF EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(N'${t('hot')}') AND name = N'Queue' AND collation_name <> N'${BINARY_KEY_COLLATION}')`,
      `BEGIN`,
      ...indexes.map((index) => `  DROP INDEX IF EXISTS [${index.name}] ON ${t(index.table)};`),
      ...primaryKeys.map(
        (table) => `  ALTER TABLE ${t(table)} DROP CONSTRAINT [PK_${MSSQL_TABLES[table]}];`,
      ),
      `  SELECT @dropStats = @dropStats + N'DROP STATISTICS ' + QUOTENAME(OBJECT_SCHEMA_NAME(s.object_id)) + N'.' + QUOTENAME(OBJECT_NAME(s.object_id)) + N'.' + QUOTENAME(s.name) + N';'`,
      `  FROM sys.stats AS s`,
      `  WHERE s.object_id IN (${tableList})`,
      `    AND (s.auto_created = 1 OR s.user_created = 1)`,
      `    AND EXISTS (SELECT 1 FROM sys.stats_columns AS sc INNER JOIN sys.columns AS c ON c.object_id = sc.object_id AND c.column_id = sc.column_id WHERE sc.object_id = s.object_id AND sc.stats_id = s.stats_id AND c.name IN (${keyColumnList}));`,
      `  EXEC sys.sp_executesql @dropStats;`,
      `  SET @converted = 1;`,
      ...keys.map(
        ({ table, column }) => `  ALTER TABLE ${t(table)} ALTER COLUMN ${columnSpec(column)};`,
      ),
      ...primaryKeys.map(
        (table) =>
          `  ALTER TABLE ${t(table)} ADD ${primaryKey(table)}${withClause(PAGE_COMPRESSED.has(table))};`,
      ),
      ...indexes.map((index) => `  ${indexStatement(schema, index)}`),
      `END;`,
      `COMMIT;`,
      `SELECT @converted AS Converted;`,
    ].join('\n') + '\n'
  );
}

// ---------------------------------------------------------------- a partitioned Archive and DLQ

/**
 * The tables `storage.partitioning` partitions, each by the time its rows entered it: RANGE RIGHT
 * on that `datetime2(3)` column, one partition per period (docs/storage.md, "A partitioned
 * Archive"). No schema version records it: the option is the application's, set or not at each
 * start, and a converted table stays converted ({@link mssqlPartitionScript}).
 */
export const PARTITION_COLUMNS = { archive: 'FinishedAtUtc', dlq: 'FailedAtUtc' } as const;

/** A table that `storage.partitioning` partitions. */
export type MssqlPartitionedTable = keyof typeof PARTITION_COLUMNS;

/**
 * `PF_<schema>_<Table>`, the partition function of one table. Partition functions and schemes
 * belong to the database, not to a schema
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/create-partition-function-transact-sql),
 * so the name carries the ChokaQ schema's name, and two ChokaQ schemas in one database never
 * share one. One function per table, never one for both: "ALTER PARTITION FUNCTION affects all of them
 * in a single transaction"
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-partition-function-transact-sql),
 * and the Archive's and the DLQ's retentions differ, so the MERGE RANGE that closes the Archive's
 * emptied partition would merge two of the DLQ's partitions that still hold rows (rows moved under
 * a schema-modification lock). The schema name is a validated identifier of at most 63
 * characters, so the name stays within the 128 of an identifier.
 */
export function partitionFunctionName(schema: string, table: MssqlPartitionedTable): string {
  return `PF_${schema}_${MSSQL_TABLES[table]}`;
}

/** `PS_<schema>_<Table>`, the partition scheme of one table, on its own function (as above). */
export function partitionSchemeName(schema: string, table: MssqlPartitionedTable): string {
  return `PS_${schema}_${MSSQL_TABLES[table]}`;
}

/**
 * The applock that serialises the partition maintenance of one schema across processes (exclusive,
 * transaction-owned, like {@link schemaLockResource}'s): a retention pass reads the layout without
 * it, then each change re-reads what it changes under it, so two processes never split, truncate
 * or merge on a stale reading.
 */
export function partitionLockResource(schema: string): string {
  return `chokaq:partitions:${schema}`;
}

/**
 * How long a partition change of maintenance waits for the applock and for each table lock, in ms.
 * TRUNCATE, SPLIT RANGE and MERGE RANGE take a schema-modification lock (Sch-M) on the table, and
 * while one waits every later request for the table queues behind it
 * (https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide#lock-compatibility):
 * the moves into the Archive or the DLQ stall at most this long. Past it the change gives up
 * (`SET LOCK_TIMEOUT`, error 1222,
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/set-lock-timeout-transact-sql) and the
 * next retention pass tries again.
 */
export const PARTITION_LOCK_WAIT_MS = 1_000;

/**
 * The error a partition change raises when it gave up on a lock ({@link PARTITION_LOCK_WAIT_MS}):
 * a user error number (above 50000, as `THROW` requires), deliberately not transient, so the
 * storage does not retry it at once (a retry would queue the table's writers again) but leaves the
 * change to the next pass.
 */
export const PARTITION_LOCK_BUSY_ERROR = 51001;

/**
 * The ChokaQ indexes of a partitioned table, rebuilt aligned by the conversion: the version-1 and
 * version-5 indexes of {@link INDEXES} and version 18's filtered batch index.
 */
function partitionedIndexes(table: MssqlPartitionedTable): IndexSpec[] {
  return [...INDEXES, ...BATCH_INDEXES].filter((index) => index.table === table);
}

/**
 * The statements that add the boundaries of `@Bounds` (a table variable of `datetime2(3)`, declared
 * by the caller with `@b` and `@Made`) above the last boundary the table's function has, oldest
 * first, each recorded in `@Made`. Only above the last: a boundary inside the bounded ranges would
 * split a partition that holds rows. `guarded`: only where no row of the table is at or after the
 * boundary, so that the range split, the rightmost one, holds nothing that would move to the new
 * partition: SPLIT RANGE makes the range holding the new boundary the new partition
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-partition-function-transact-sql)
 * and moves the rows that belong to it, under the table's Sch-M lock. Maintenance keeps the periods
 * ahead made, so the rightmost partition is empty and every split moves nothing; after a stall
 * longer than the periods ahead, the boundaries below the newest row are skipped (those rows keep
 * the row-by-row retention until a later boundary bounds them). The conversion splits unguarded:
 * no table is on the function yet. NEXT USED names the filegroup the new partition goes to
 * (SPLIT RANGE fails without one): PRIMARY, the only one Azure SQL Database has
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-partition-scheme-transact-sql).
 * The boundary is a parameter of `sp_executesql`, not text.
 */
export function splitBoundaries(
  schema: string,
  table: MssqlPartitionedTable,
  guarded: boolean,
): string[] {
  const pf = partitionFunctionName(schema, table);
  const split = [
    `ALTER PARTITION SCHEME [${partitionSchemeName(schema, table)}] NEXT USED [PRIMARY];`,
    `EXEC sys.sp_executesql N'ALTER PARTITION FUNCTION [${pf}]() SPLIT RANGE (@b);', N'@b datetime2(3)', @b = @b;`,
    `INSERT INTO @Made (Boundary) VALUES (@b);`,
  ];
  const body = guarded
    ? [
        `IF NOT EXISTS (SELECT 1 FROM ${qualify(schema, table)} AS x WHERE x.${PARTITION_COLUMNS[table]} >= @b)`,
        `BEGIN`,
        ...split.map((line) => `  ${line}`),
        `END;`,
      ]
    : split;
  return [
    `SET @b = (SELECT MIN(n.Boundary) FROM @Bounds AS n WHERE n.Boundary > (SELECT MAX(CAST(v.value AS datetime2(3))) FROM sys.partition_range_values AS v INNER JOIN sys.partition_functions AS f ON f.function_id = v.function_id WHERE f.name = N'${pf}'));`,
    `WHILE @b IS NOT NULL`,
    `BEGIN`,
    ...body.map((line) => `  ${line}`),
    `  SET @b = (SELECT MIN(n.Boundary) FROM @Bounds AS n WHERE n.Boundary > @b);`,
    `END;`,
  ];
}

/**
 * A query that yields a row when `table` is partitioned as ChokaQ partitions it: its clustered
 * index (or heap) on its scheme `PS_<schema>_<Table>`. The conversion skips such a table, and
 * maintenance splits only on one.
 */
export function onItsScheme(schema: string, table: MssqlPartitionedTable): string {
  return `SELECT 1 FROM sys.indexes AS c INNER JOIN sys.partition_schemes AS ps ON ps.data_space_id = c.data_space_id WHERE c.object_id = OBJECT_ID(N'${qualify(schema, table)}') AND c.index_id IN (0, 1) AND ps.name = N'${partitionSchemeName(schema, table)}'`;
}

/**
 * Why a table is converted the way it is (printed above the statements of
 * {@link mssqlPartitionScript}).
 */
const PARTITION_NOTE: readonly string[] = [
  'storage.partitioning: the table partitioned by its time column (RANGE RIGHT, one partition per',
  'period) on a function and scheme of its own, if it is not yet. Every index is rebuilt aligned,',
  'which TRUNCATE TABLE ... WITH (PARTITIONS (n)) requires; the primary key becomes (Id, <time>), as',
  'a unique index of a partitioned table must hold the partitioning column. An offline rebuild of',
  'the whole table: its writers wait until it commits.',
];

/**
 * The conversion of one table to a partitioned one (`ensureSchema` with `storage.partitioning`),
 * after the versioned steps, in a step of its own under the schema's applock (as each version's;
 * {@link beginStep}), each DDL statement waiting at most {@link SCHEMA_LOCK_WAIT_MS} for its lock.
 * Nothing is done when the table's clustered index is on the scheme already; the result set says
 * whether it converted now and whether the table had rows (`Converted`, `KeptRows`).
 *
 * `boundaries` is the placeholder of a JSON list of ISO instants without a zone (the current
 * period's start and the starts after it, computed from the database clock: `rangesAhead`). The
 * function is created with the first of them, on `datetime2(3)` as the column is, RANGE RIGHT (a
 * boundary is the first instant of its partition, as a period's start is), and the others are
 * split in before any table is on it ({@link splitBoundaries}); the scheme maps every partition to
 * PRIMARY. Rows before the first boundary (the rows a converted table already had, older than the
 * current period) stay in the leftmost partition, which retention empties row by row.
 *
 * The rebuild: ChokaQ's nonclustered indexes of the table are dropped first, then the clustered
 * primary key, which is added again as `(Id, <time>)` on the scheme (one sort and write of every
 * row into its partition), then the indexes are created on the scheme: each index is built once,
 * where dropping the clustered key under them would rebuild each twice (on the heap's row ids,
 * then on the new key). A nonclustered index of a partitioned table is aligned when it is on the
 * same scheme and column; SQL Server adds the column to a nonunique one itself, and places an
 * index created later without `ON` (a migration's, `--binary-keys`') on the table's scheme
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/create-index-transact-sql, partition
 * scheme). Every ChokaQ index is then aligned, which partition truncation needs
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/truncate-table-transact-sql); an index a
 * DBA added is rebuilt by the key change but left where it is, and maintenance reads whether one
 * is unaligned before it truncates (`partitionLayout`). A unique index of a partitioned table
 * must hold the partitioning column
 * (https://learn.microsoft.com/en-us/sql/relational-databases/partitions/partitioned-tables-and-indexes),
 * hence the primary key `(Id, <time>)`: an id is still in one row of one pillar, since every row
 * enters the Archive or the DLQ by a move that deletes its hot row in the same transaction and
 * enqueue refuses an id the Archive or the DLQ holds; and one move inserts all its rows at one
 * `@now`, so an id twice in one move still meets the key.
 *
 * Cost: the whole table is rewritten, offline (the schema-modification lock is held to COMMIT, so
 * every move into it and every read of it waits), fully logged, in one transaction (a failure rolls
 * it back whole). On a large table run it with `chokaq migrate` in a quiet hour, with
 * `schemaTimeoutMs` 0 (no timeout, the default).
 */
export function mssqlPartitionScript(
  schema: string,
  table: MssqlPartitionedTable,
  boundaries: string,
): string {
  const name = qualify(schema, table);
  const column = PARTITION_COLUMNS[table];
  const ps = partitionSchemeName(schema, table);
  const pf = partitionFunctionName(schema, table);
  const onScheme = `[${ps}] (${column})`;
  const exec = (statement: string) => `  EXEC(N'${statement.replace(/'/g, "''")}');`;
  const indexes = partitionedIndexes(table);
  const primary = `CONSTRAINT [PK_${MSSQL_TABLES[table]}] PRIMARY KEY CLUSTERED (${PRIMARY_KEYS[table]}, ${column})`;
  return [
    `-- ChokaQ for NestJS: SQL Server schema [${schema}], ${MSSQL_TABLES[table]} partitioned by ${column}.`,
    ...PARTITION_NOTE.map((line) => `-- ${line}`),
    ...SCRIPT_PROLOGUE,
    `DECLARE @b datetime2(3);`,
    `DECLARE @Converted bit = 0;`,
    `DECLARE @KeptRows bit = 0;`,
    `DECLARE @Bounds TABLE (Boundary datetime2(3) NOT NULL PRIMARY KEY);`,
    `DECLARE @Made TABLE (Boundary datetime2(3) NOT NULL);`,
    `INSERT INTO @Bounds (Boundary) SELECT DISTINCT CONVERT(datetime2(3), j.At, 126) FROM OPENJSON(${boundaries}) WITH (At varchar(23) '$') AS j;`,
    ...beginStep(schema),
    `SET LOCK_TIMEOUT ${SCHEMA_LOCK_WAIT_MS};`,
    `IF NOT EXISTS (${onItsScheme(schema, table)})`,
    `BEGIN`,
    `  SET @Converted = 1;`,
    `  IF EXISTS (SELECT 1 FROM ${name}) SET @KeptRows = 1;`,
    `  SET @b = (SELECT MIN(n.Boundary) FROM @Bounds AS n);`,
    `  IF NOT EXISTS (SELECT 1 FROM sys.partition_functions WHERE name = N'${pf}')`,
    `    EXEC sys.sp_executesql N'CREATE PARTITION FUNCTION [${pf}] (datetime2(3)) AS RANGE RIGHT FOR VALUES (@b);', N'@b datetime2(3)', @b = @b;`,
    `  IF NOT EXISTS (SELECT 1 FROM sys.partition_schemes WHERE name = N'${ps}')`,
    `    EXEC(N'CREATE PARTITION SCHEME [${ps}] AS PARTITION [${pf}] ALL TO ([PRIMARY]);');`,
    ...splitBoundaries(schema, table, false).map((line) => `  ${line}`),
    ...indexes.map((index) => `  DROP INDEX IF EXISTS [${index.name}] ON ${name};`),
    `  ALTER TABLE ${name} DROP CONSTRAINT [PK_${MSSQL_TABLES[table]}];`,
    exec(`ALTER TABLE ${name} ADD ${primary}${withClause(true)} ON ${onScheme};`),
    ...indexes.map((index) => exec(indexStatement(schema, index, [], onScheme))),
    `END;`,
    `COMMIT;`,
    `SELECT @Converted AS Converted, @KeptRows AS KeptRows;`,
  ].join('\n');
}
