/**
 * A partitioned Archive and DLQ (`storage.partitioning`; docs/storage.md, "A partitioned
 * Archive"): the catalog read of both tables' layout, the conversion of a plain table, the
 * boundaries made ahead, and the removal of one expired partition whole. Each table has a
 * partition function and scheme of its own (`partitionFunctionName`), RANGE RIGHT on its time
 * column, one partition per period; the calendar is `storage/shared/partitions.ts`'s, computed
 * from the database clock this layout read reports, and every instant reaches SQL as a parameter.
 *
 * The partition DDL runs as dynamic SQL (`sp_executesql` with the instant as its parameter, or
 * `EXEC` of text built only from validated identifiers and a partition number the batch read from
 * the catalog): T-SQL takes no variable in `TRUNCATE … WITH (PARTITIONS (…))`, and the grammar the
 * tests parse with has no partition DDL (`test/mssql/tsql-grammar.spec.ts`), so these texts are
 * pinned by the golden files instead.
 *
 * Every change of maintenance is its own short transaction under the schema's partitions applock
 * (`partitionLockResource`) and `SET LOCK_TIMEOUT` ({@link PARTITION_LOCK_WAIT_MS}); a lock not
 * granted in time ends it with {@link PARTITION_LOCK_BUSY_ERROR}, which the storage does not retry
 * at once but leaves to the next pass.
 */
import { MssqlStatement, ParamList } from '../mssql-params';
import {
  MssqlPartitionedTable,
  PARTITION_COLUMNS,
  PARTITION_LOCK_BUSY_ERROR,
  PARTITION_LOCK_WAIT_MS,
  mssqlPartitionScript,
  onItsScheme,
  partitionFunctionName,
  partitionLockResource,
  partitionSchemeName,
  splitBoundaries,
} from '../mssql.schema';
import { dependencyRemove } from './dependencies';
import {
  DECLARE_NOW,
  PROLOGUE,
  attemptsDelete,
  isoText,
  subtractMs,
  tables,
  type MssqlSchema,
} from './fragments';

/** One partition to remove: its number as the layout was read, and its range `[from, to)`. */
export interface MssqlPartitionSlot {
  number: number;
  from: Date;
  to: Date;
}

/** The schema's name (the partition DDL names database-scoped objects after it). */
function nameOf(schema: MssqlSchema): string {
  return typeof schema === 'string' ? schema : schema.name;
}

/** A JSON list of instants as ISO text without a zone, read with `CONVERT(…, 126)`. */
function instants(p: ParamList, values: readonly Date[]): string {
  return p.json(values.map((at) => at.toISOString().slice(0, 23)));
}

/** The applock of the schema's partitions, then the short lock wait, inside `BEGIN TRY`. */
function lockPartitions(schema: string): string[] {
  return [
    `  EXEC @lockResult = sp_getapplock @Resource = N'${partitionLockResource(schema)}', @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = ${PARTITION_LOCK_WAIT_MS};`,
    '  IF @lockResult < 0',
    `    THROW ${PARTITION_LOCK_BUSY_ERROR}, 'ChokaQ: another process is changing the partitions of schema [${schema}]; the next maintenance pass tries again.', 1;`,
    `  SET LOCK_TIMEOUT ${PARTITION_LOCK_WAIT_MS};`,
  ];
}

/**
 * The end of a change's `TRY`: a lock wait past {@link PARTITION_LOCK_WAIT_MS} (1222) becomes
 * {@link PARTITION_LOCK_BUSY_ERROR}; any other error is raised again as it was (a deadlock stays
 * 1205, which the storage retries). The transaction is rolled back first: under `XACT_ABORT` an
 * error leaves it uncommittable.
 */
const CATCH_LOCK_TIMEOUT = [
  'END TRY',
  'BEGIN CATCH',
  '  IF XACT_STATE() <> 0 ROLLBACK;',
  '  IF ERROR_NUMBER() = 1222',
  `    THROW ${PARTITION_LOCK_BUSY_ERROR}, 'ChokaQ: a partition change waited ${PARTITION_LOCK_WAIT_MS} ms for a table lock; the next maintenance pass tries again.', 1;`,
  '  THROW;',
  'END CATCH;',
];

/**
 * partitionLayout (maintenance reads it at each retention pass, `ensureSchema` before converting) —
 * for the Archive and the DLQ: whether the table is partitioned as ChokaQ partitions it (its
 * clustered index on the scheme `PS_<schema>_<Table>`, whose function `PF_<schema>_<Table>` is
 * RANGE RIGHT, on the table's time column), whether every other index is aligned with it (same
 * scheme and column: `Unaligned` counts the others), whether anything forbids truncating a
 * partition (`Blocked`: a foreign key referencing the table, replication or change data capture;
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/truncate-table-transact-sql), and the
 * function's boundaries in order, one row each (one row with none for a table not partitioned);
 * with the database clock on every row. A table partitioned any other way (a DBA's scheme) reads as
 * not partitioned, and keeps the row-by-row retention.
 *
 * Lock/isolation: catalog views only (`sys.tables`, `sys.indexes`, `sys.index_columns`,
 * `sys.partition_schemes`, `sys.partition_functions`, `sys.partition_range_values`), READ
 * COMMITTED, no hint: a reading, which each change re-checks under the partitions applock.
 */
export function partitionLayout(schema: MssqlSchema): MssqlStatement {
  const name = nameOf(schema);
  // A derived table of SELECTs rather than `(VALUES …) AS t (columns)`, whose column list the
  // grammar the tests parse with reads as the table hints of the next table.
  const rows = (['archive', 'dlq'] as const).map(
    (table) =>
      `SELECT '${table}' AS Pillar, N'${tables(schema)[table]}' AS TableName, N'${partitionSchemeName(name, table)}' AS SchemeName, N'${partitionFunctionName(name, table)}' AS FunctionName, N'${PARTITION_COLUMNS[table]}' AS TimeColumn`,
  );
  const onColumn = (alias: string) =>
    `EXISTS (SELECT 1 FROM sys.index_columns AS k WHERE k.object_id = ${alias}.object_id AND k.index_id = ${alias}.index_id AND k.partition_ordinal = 1 AND COL_NAME(k.object_id, k.column_id) = t.TimeColumn)`;
  return new ParamList().statement(
    [
      'SET NOCOUNT ON;',
      'DECLARE @now datetime2(3) = SYSUTCDATETIME();',
      'SELECT t.Pillar,',
      '  CASE WHEN pf.function_id IS NULL THEN 0 ELSE 1 END AS Partitioned,',
      `  CASE WHEN pf.function_id IS NULL THEN 0 ELSE (SELECT COUNT(*) FROM sys.indexes AS i WHERE i.object_id = c.object_id AND i.index_id > 1 AND i.is_hypothetical = 0`,
      `    AND (i.data_space_id <> c.data_space_id OR NOT ${onColumn('i')})) END AS Unaligned,`,
      '  CASE WHEN st.is_replicated = 1 OR st.is_merge_published = 1 OR st.is_tracked_by_cdc = 1',
      '    OR EXISTS (SELECT 1 FROM sys.foreign_keys AS fk WHERE fk.referenced_object_id = st.object_id) THEN 1 ELSE 0 END AS Blocked,',
      `  v.boundary_id AS BoundaryId, ${isoText('CAST(v.value AS datetime2(3))')} AS Boundary, ${isoText('@now')} AS NowUtc`,
      `FROM (${rows.join('\n  UNION ALL ')}) AS t`,
      "LEFT JOIN sys.tables AS st ON st.object_id = OBJECT_ID(t.TableName, N'U')",
      'LEFT JOIN sys.indexes AS c ON c.object_id = st.object_id AND c.index_id IN (0, 1)',
      'LEFT JOIN sys.partition_schemes AS ps ON ps.data_space_id = c.data_space_id AND ps.name = t.SchemeName',
      `LEFT JOIN sys.partition_functions AS pf ON pf.function_id = ps.function_id AND pf.name = t.FunctionName AND pf.boundary_value_on_right = 1 AND ${onColumn('c')}`,
      'LEFT JOIN sys.partition_range_values AS v ON v.function_id = pf.function_id',
      'ORDER BY t.Pillar, v.boundary_id;',
    ].join('\n'),
  );
}

/**
 * convertToPartitioned (`ensureSchema` with `storage.partitioning`) — `table` partitioned, if it
 * is not yet, with `boundaries` (the current period's start and those after it) as its first
 * boundaries: `mssqlPartitionScript`, which says how and what it costs. Run as the schema batch
 * (its own request timeout), under the schema's applock.
 */
export function convertToPartitioned(
  schema: MssqlSchema,
  table: MssqlPartitionedTable,
  boundaries: readonly Date[],
): MssqlStatement {
  const p = new ParamList();
  return p.statement(mssqlPartitionScript(nameOf(schema), table, instants(p, boundaries)));
}

/**
 * makePartitionsAhead (each retention pass, and `ensureSchema`) — the boundaries of `boundaries`
 * above the last one the table's function has, each where no row of the table is at or after it
 * (`splitBoundaries`: the split range is then the empty rightmost partition, a change of metadata
 * only), under the partitions applock. Selects the boundaries made, oldest first. Nothing when the
 * table is not on its scheme (any more).
 *
 * Locks: each split takes the table's Sch-M lock to the end of the transaction, waiting at most
 * {@link PARTITION_LOCK_WAIT_MS} ({@link CATCH_LOCK_TIMEOUT}); the row check before it is a plain
 * READ COMMITTED seek of the time column's index in the rightmost partition.
 */
export function makePartitionsAhead(
  schema: MssqlSchema,
  table: MssqlPartitionedTable,
  boundaries: readonly Date[],
): MssqlStatement {
  const name = nameOf(schema);
  const p = new ParamList();
  const wanted = instants(p, boundaries);
  return p.statement(
    [
      PROLOGUE,
      'DECLARE @lockResult int;',
      'DECLARE @b datetime2(3);',
      'DECLARE @Bounds TABLE (Boundary datetime2(3) NOT NULL PRIMARY KEY);',
      'DECLARE @Made TABLE (Boundary datetime2(3) NOT NULL);',
      `INSERT INTO @Bounds (Boundary) SELECT DISTINCT CONVERT(datetime2(3), j.At, 126) FROM OPENJSON(${wanted}) WITH (At varchar(23) '$') AS j;`,
      'BEGIN TRAN;',
      'BEGIN TRY',
      ...lockPartitions(name),
      `  IF EXISTS (${onItsScheme(name, table)})`,
      '  BEGIN',
      ...splitBoundaries(name, table, true).map((line) => `    ${line}`),
      '  END;',
      '  COMMIT;',
      ...CATCH_LOCK_TIMEOUT,
      `SELECT ${isoText('m.Boundary')} AS Boundary FROM @Made AS m ORDER BY m.Boundary;`,
    ].join('\n'),
  );
}

/**
 * dropPartition (applyRetention, one expired partition of a partitioned table) — removes the
 * partition `slot` whole, with what row-by-row retention settles for each row it removes, in one
 * transaction under the partitions applock: the partition's rows go into `@Gone` (each id with
 * `HasDependents` and `WaitingOn`), their `JobAttempts` rows are deleted ({@link attemptsDelete})
 * and their edges settled ({@link dependencyRemove}: the edges waiting on a removed job are marked
 * removed for the check pass, a removed dependent's own edges deleted), the fragments the
 * row-by-row statements run; then `TRUNCATE TABLE … WITH (PARTITIONS (n))` (SQL Server 2016+;
 * every index must be aligned, which `partitionLayout` checked:
 * https://learn.microsoft.com/en-us/sql/t-sql/statements/truncate-table-transact-sql), and MERGE
 * RANGE of the partition's lower boundary, which folds the emptied partition into the one before
 * it: RANGE RIGHT, the boundary belongs to the emptied partition, which is the one dropped, so no
 * row moves, and the function keeps as many boundaries as periods. Selects `Removed` (1: done; 0:
 * the partition is no longer `slot`, or not wholly expired by the database clock now) and
 * `Affected`, the rows removed, which retention reports.
 *
 * The partition is re-read under the applock: `slot.number` must still lie between the boundaries
 * `slot.from` and `slot.to` (a merge by another process since the layout was read renumbers the
 * partitions after it), and `slot.to` must be at most now − `ageMs`. Its number goes into the
 * TRUNCATE as text (T-SQL takes no variable there), an `int` the batch checked.
 *
 * Locks: the Archive's rows of an expired partition never change (no statement updates an archived
 * row, and a new one is archived at now), so they are read without a lock of the table; the DLQ's
 * may (a resurrect or a purge deletes one, an enqueue with `dependsOn` marks one `HasDependents`),
 * so the DLQ is read `WITH (TABLOCK, HOLDLOCK)`, a shared lock of the table to the end of the
 * transaction: DLQ writers wait while the partition is settled, readers do not. TRUNCATE and MERGE
 * then take the table's Sch-M lock to COMMIT, briefly. Each wait is at most
 * {@link PARTITION_LOCK_WAIT_MS}. Lock order: the DLQ (shared), `JobAttempts` and
 * `JobDependencies` rows of the removed jobs, the table's Sch-M; a move holds its hot rows and then
 * the new Archive or DLQ row before its attempt rows and edges, so a move into the DLQ waits at the
 * DLQ holding nothing this needs. A deadlock with a move into the Archive (whose settle step may
 * want an edge of a removed dependent this holds) ends one of the two with 1205, retried.
 */
export function dropPartition(
  schema: MssqlSchema,
  table: MssqlPartitionedTable,
  slot: MssqlPartitionSlot,
  ageMs: number,
): MssqlStatement {
  const name = nameOf(schema);
  const t = tables(schema);
  const p = new ParamList();
  const number = p.int(slot.number);
  const from = p.instant(slot.from);
  const to = p.instant(slot.to);
  const age = p.bigint(ageMs);
  const column = PARTITION_COLUMNS[table];
  const pf = partitionFunctionName(name, table);
  const hint = table === 'dlq' ? ' WITH (TABLOCK, HOLDLOCK)' : '';
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      `DECLARE @partition int = ${number};`,
      `DECLARE @from datetime2(3) = ${from};`,
      `DECLARE @to datetime2(3) = ${to};`,
      `DECLARE @cutoff datetime2(3) = ${subtractMs('@now', age)};`,
      'DECLARE @lockResult int;',
      'DECLARE @found int = 0;',
      'DECLARE @truncate nvarchar(400);',
      'DECLARE @Gone TABLE (Id varchar(36) NOT NULL PRIMARY KEY, HasDependents bit NULL, WaitingOn int NULL);',
      'BEGIN TRAN;',
      'BEGIN TRY',
      ...lockPartitions(name),
      '  SELECT @found = COUNT(*) FROM sys.partition_functions AS pf',
      '  INNER JOIN sys.partition_range_values AS lo ON lo.function_id = pf.function_id AND lo.boundary_id = @partition - 1',
      '  INNER JOIN sys.partition_range_values AS hi ON hi.function_id = pf.function_id AND hi.boundary_id = @partition',
      `  WHERE pf.name = N'${pf}' AND CAST(lo.value AS datetime2(3)) = @from AND CAST(hi.value AS datetime2(3)) = @to AND @to <= @cutoff;`,
      '  IF @found = 1',
      '  BEGIN',
      '    INSERT INTO @Gone (Id, HasDependents, WaitingOn)',
      `    SELECT x.Id, x.HasDependents, x.WaitingOn FROM ${t[table]} AS x${hint}`,
      `    WHERE x.${column} >= @from AND x.${column} < @to;`,
      // The row-by-row retention's own steps, unindented: the same text as theirs.
      attemptsDelete(t),
      dependencyRemove(t),
      `    SET @truncate = N'TRUNCATE TABLE ${t[table]} WITH (PARTITIONS (' + CAST(@partition AS nvarchar(10)) + N'));';`,
      '    EXEC sys.sp_executesql @truncate;',
      `    EXEC sys.sp_executesql N'ALTER PARTITION FUNCTION [${pf}]() MERGE RANGE (@b);', N'@b datetime2(3)', @b = @from;`,
      '  END;',
      '  COMMIT;',
      ...CATCH_LOCK_TIMEOUT,
      'SELECT @found AS Removed, COUNT_BIG(*) AS Affected FROM @Gone;',
    ].join('\n'),
  );
}
