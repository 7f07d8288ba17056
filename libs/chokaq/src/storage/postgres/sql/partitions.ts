/**
 * A partitioned Archive and DLQ (`storage.partitioning`): native declarative partitions by range
 * of the finish time (`jobs_archive.finished_at_utc`, `jobs_dlq.failed_at_utc`). Partition names
 * carry their bounds, so the store reads the calendar back from the catalog by name alone:
 * `<table>_<from>_<to>` (UTC days, `YYYYMMDD`) for a period, `<table>_min_<to>` for the rows an
 * unpartitioned table held when it was converted, and `<table>_default` for a row no range takes
 * (which only happens when maintenance has not run for longer than the periods it makes ahead).
 *
 * Locks (https://www.postgresql.org/docs/15/sql-altertable.html, ATTACH / DETACH PARTITION, and
 * https://www.postgresql.org/docs/15/sql-droptable.html): attaching a partition takes SHARE UPDATE
 * EXCLUSIVE on the parent (reads and writes go on) and ACCESS EXCLUSIVE on the default partition;
 * dropping one takes ACCESS EXCLUSIVE on the parent for as long as the catalog change takes. Every
 * such transaction first sets a short `lock_timeout` ({@link partitionLockTimeout}): a move or a
 * read that holds the table then makes maintenance give up and try again on its next pass, instead
 * of queueing the moves behind a waiting ACCESS EXCLUSIVE request.
 */
import { dependencyRemove } from './dependencies';

/** The two partitioned tables and the time column each is partitioned by. */
export const PARTITIONED_TABLES = {
  jobs_archive: 'finished_at_utc',
  jobs_dlq: 'failed_at_utc',
} as const;

export type PartitionedTable = keyof typeof PARTITIONED_TABLES;

/**
 * The layout of the Archive and the DLQ, one row per (table, partition): `kind` is `p` for a
 * partitioned table, `r` for a plain one (whose `partition` is null). With the database clock.
 * $1 the schema name (unquoted).
 */
export const SELECT_PARTITION_LAYOUT = `
SELECT c.relname AS "table", c.relkind::text AS kind, p.relname AS "partition", now() AS now
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_inherits i ON i.inhparent = c.oid
LEFT JOIN pg_catalog.pg_class p ON p.oid = i.inhrelid
WHERE n.nspname = $1 AND c.relname IN ('jobs_archive', 'jobs_dlq')
ORDER BY 1, 3`;

/** Binds {@link SELECT_PARTITION_LAYOUT}: $1 the schema name (unquoted). */
export function selectPartitionLayoutParams(schemaName: string): unknown[] {
  return [schemaName];
}

/**
 * The indexes of one plain table ($1 schema, $2 table), with the statement that makes each (as
 * `pg_get_indexdef` prints it, naming the table by its name at the time of the read) and whether it
 * is the primary key's.
 */
export const SELECT_TABLE_INDEXES = `
SELECT ic.relname AS name, pg_catalog.pg_get_indexdef(x.indexrelid) AS definition,
       x.indisprimary AS "primary"
FROM pg_catalog.pg_index x
JOIN pg_catalog.pg_class ic ON ic.oid = x.indexrelid
JOIN pg_catalog.pg_class t ON t.oid = x.indrelid
JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = $1 AND t.relname = $2
ORDER BY 1`;

/** Binds {@link SELECT_TABLE_INDEXES}: $1 the schema name (unquoted), $2 the table. */
export function selectTableIndexesParams(schemaName: string, table: string): unknown[] {
  return [schemaName, table];
}

/**
 * Serialises the partition changes of one schema across processes (every process runs
 * maintenance): an advisory lock held to the end of the transaction, whose wait the transaction's
 * `lock_timeout` bounds like any other. $1 the schema name (unquoted).
 */
export const LOCK_PARTITIONS = `SELECT pg_advisory_xact_lock(hashtextextended('chokaq.partitions:' || $1, 0))`;

/** Binds {@link LOCK_PARTITIONS}: $1 the schema name (unquoted). */
export function lockPartitionsParams(schemaName: string): unknown[] {
  return [schemaName];
}

/** Bounds every lock wait of the transaction it runs in (a partition's DDL), in ms. */
export const partitionLockTimeout = (ms: number): string =>
  `SET LOCAL lock_timeout = ${Math.max(1, Math.trunc(ms))}`;

/** True when the table holds no row at all (one page read at most). */
export const tableIsEmpty = (s: string, table: string): string =>
  `SELECT NOT EXISTS (SELECT 1 FROM ${s}.${table}) AS empty`;

/**
 * Converting a plain table into a partitioned one (`ensureSchema` with `storage.partitioning`, under
 * the schema lock), in one transaction: the plain table and its indexes are renamed to `legacy`;
 * a partitioned table of the same columns, defaults and checks takes the old name, with a primary
 * key of (id, time column) — a partitioned table's unique keys must hold its partition key — and the
 * old table's other indexes made again by their own definitions (`indexes`, read before the
 * rename: they name the old table, which is now the partitioned one). Then the old table becomes
 * the partition of every time before `bound` (its rows stay where they are: no copy), or is
 * dropped when it held nothing, and the default partition is made.
 *
 * What it costs on a table with rows: the attach checks the partition bound by one scan (the check
 * constraint added first lets it skip that scan, but proving the check is the same scan) and
 * builds the (id, time) unique index, both under the ACCESS EXCLUSIVE lock the rename took; the
 * moves into that table wait meanwhile (docs/storage.md: 2.3 s for 1,000,000 rows here).
 */
export function convertToPartitioned(args: {
  s: string;
  table: PartitionedTable;
  legacy: string;
  bound: Date;
  indexes: readonly { name: string; definition: string; primary: boolean }[];
  empty: boolean;
}): string[] {
  const { s, table, legacy, bound, indexes, empty } = args;
  const column = PARTITIONED_TABLES[table];
  const statements = [`ALTER TABLE ${s}.${table} RENAME TO ${legacy}`];
  for (const index of indexes) {
    statements.push(
      `ALTER INDEX ${s}.${index.name} RENAME TO ${legacyName(index.name, table, legacy)}`,
    );
  }
  statements.push(
    `CREATE TABLE ${s}.${table} (LIKE ${s}.${legacy} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
      PARTITION BY RANGE (${column})`,
    `ALTER TABLE ${s}.${table} ADD CONSTRAINT ${table}_pkey PRIMARY KEY (id, ${column})`,
    ...indexes.filter((index) => !index.primary).map((index) => index.definition),
  );
  if (empty) {
    statements.push(`DROP TABLE ${s}.${legacy}`);
  } else {
    // A partition takes its primary key from the parent's, (id, time); the old one, (id), goes.
    for (const index of indexes.filter((i) => i.primary)) {
      statements.push(
        `ALTER TABLE ${s}.${legacy} DROP CONSTRAINT ${legacyName(index.name, table, legacy)}`,
      );
    }
    statements.push(
      `ALTER TABLE ${s}.${legacy} ADD CONSTRAINT ${legacy}_bound CHECK (${column} < ${instant(bound)})`,
      `ALTER TABLE ${s}.${table} ATTACH PARTITION ${s}.${legacy}
        FOR VALUES FROM (MINVALUE) TO (${instant(bound)})`,
    );
  }
  statements.push(`CREATE TABLE ${s}.${table}_default PARTITION OF ${s}.${table} DEFAULT`);
  return statements;
}

/** An index name of `table` as it reads once the table is `legacy`. */
function legacyName(name: string, table: string, legacy: string): string {
  return name.includes(table) ? name.replace(table, legacy) : `${legacy}_${name}`.slice(0, 63);
}

/**
 * Makes the partition `partition` of `table` for `[from, to)`, in one transaction after
 * {@link partitionLockTimeout}: the default partition locked first (the attach would take that
 * lock anyway, and taking it first means no row can reach it between the move and the attach),
 * any of its rows in the range moved into the new table, which is then attached. The new table is
 * made `LIKE` the parent, so its columns are in the parent's order, as `RETURNING d.*` gives them;
 * the attach makes its indexes from the parent's.
 */
export function makePartition(
  s: string,
  table: PartitionedTable,
  partition: string,
  from: Date,
  to: Date,
): string[] {
  const column = PARTITIONED_TABLES[table];
  return [
    `LOCK TABLE ${s}.${table}_default IN ACCESS EXCLUSIVE MODE`,
    `CREATE TABLE ${s}.${partition} (LIKE ${s}.${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`,
    `WITH moved AS (
      DELETE FROM ${s}.${table}_default d
      WHERE d.${column} >= ${instant(from)} AND d.${column} < ${instant(to)}
      RETURNING d.*)
    INSERT INTO ${s}.${partition} SELECT * FROM moved`,
    `ALTER TABLE ${s}.${table} ATTACH PARTITION ${s}.${partition}
      FOR VALUES FROM (${instant(from)}) TO (${instant(to)})`,
  ];
}

/**
 * Before a partition is dropped, in its transaction: a SHARE lock on it, which waits for any move
 * still writing into it and keeps every later one out (a purge, a resurrect, a dependency edge
 * marking it), while reads go on.
 */
export const lockPartition = (s: string, partition: string): string =>
  `LOCK TABLE ${s}.${partition} IN SHARE MODE`;

/**
 * What the row-by-row retention does for each row it deletes, done for every row of a partition
 * about to be dropped whole, as three statements of its transaction (after {@link lockPartition}):
 * `count`, how many rows it holds (what retention reports as removed); `attempts`, their attempt
 * history deleted (what `attemptsDelete` does per batch, here a join the planner runs from whichever side is
 * smaller); `edges`, the dependency edges of the rows that have any ({@link dependencyRemove}: a
 * dependent still waiting on a removed row is told so, a removed dependent's own edges go). Each
 * reads the partition once and none writes to it.
 */
export function settlePartition(
  s: string,
  partition: string,
): { count: string; attempts: string; edges: string } {
  return {
    count: `SELECT count(*)::int AS removed FROM ${s}.${partition}`,
    attempts: `DELETE FROM ${s}.job_attempts t USING ${s}.${partition} p WHERE t.job_id = p.id`,
    edges: `
WITH gone AS MATERIALIZED (
  SELECT p.id, p.has_dependents, p.waiting_on FROM ${s}.${partition} p
  WHERE p.has_dependents OR p.waiting_on IS NOT NULL)${dependencyRemove(s, 'gone')}
SELECT count(*)::int AS settled FROM gone`,
  };
}

/** Drops a partition (detaching it in the same catalog change). */
export const dropPartition = (s: string, partition: string): string =>
  `DROP TABLE ${s}.${partition}`;

/** A UTC instant as a `timestamptz` literal (ISO 8601 from `Date`, never user input). */
function instant(at: Date): string {
  return `'${at.toISOString()}'::timestamptz`;
}
