import { toError } from '../../common/error-text';
import {
  type PartitionPeriod,
  type PartitionRange,
  dayStamp,
  expired,
  nextPeriod,
  parseDayStamp,
  partitionEvents,
  periodStart,
  periodToMake,
  rangesAhead,
  uncovered,
} from '../shared/partitions';
import { toDate } from '../shared/row-mapper';
import { isLockNotAvailableError } from './postgres-errors';
import { Exec, PostgresConnection, num } from './postgres.connection';
import * as SQL from './sql';

/** One partition of the Archive or the DLQ, as its name describes it. */
export interface PartitionInfo {
  name: string;
  /**
   * `period`: `[from, to)`, made by maintenance. `legacy`: every time before `to`, the rows of a
   * converted table. `default`: what no range takes. `other`: a partition ChokaQ did not make,
   * which it never touches.
   */
  kind: 'period' | 'legacy' | 'default' | 'other';
  range: PartitionRange | null;
}

/** The Archive's or the DLQ's layout: plain, or partitioned with these partitions. */
export interface TableLayout {
  partitioned: boolean;
  partitions: PartitionInfo[];
}

/** Both tables' layouts, read with the database clock. */
export interface PartitionLayout {
  now: Date;
  tables: Record<SQL.PartitionedTable, TableLayout>;
}

/**
 * How long a partition's DDL waits for a lock before maintenance gives it up until its next pass:
 * the moves queue behind a waiting ACCESS EXCLUSIVE request, so this is the longest they stall.
 */
export const PARTITION_LOCK_TIMEOUT_MS = 1_000;

const TABLES = Object.keys(SQL.PARTITIONED_TABLES) as SQL.PartitionedTable[];

/**
 * The partitioned Archive and DLQ of the PostgreSQL dialect (`storage.partitioning`; the design:
 * `./sql/partitions.ts` and docs/storage.md, "A partitioned Archive"): converting the plain
 * tables at `ensureSchema`, making partitions ahead and dropping expired ones at each retention
 * pass. Each partition's change is its own transaction under a short lock timeout and an advisory
 * lock of the schema's partitions, so two processes' maintenance never make or drop one partition
 * twice; a change that cannot get its locks is logged (`PartitionMaintenanceDeferred`) and left to
 * the next pass.
 */
export class PostgresPartitions {
  constructor(
    private readonly db: PostgresConnection,
    private readonly lockTimeoutMs = PARTITION_LOCK_TIMEOUT_MS,
  ) {}

  /** The two tables' layouts, from the catalog (one read). */
  async layout(): Promise<PartitionLayout> {
    const rows = await this.db.query(
      'partitions.layout',
      SQL.SELECT_PARTITION_LAYOUT,
      SQL.selectPartitionLayoutParams(this.db.schemaName),
    );
    return readLayout(rows);
  }

  /**
   * `ensureSchema`'s step for `storage.partitioning`: converts whichever of the two tables is still
   * plain (under the schema lock, re-reading the layout there), then makes the partitions ahead.
   */
  async ensure(period: PartitionPeriod): Promise<void> {
    let layout = await this.layout();
    if (TABLES.some((table) => !layout.tables[table].partitioned)) {
      const converted = await this.db.transaction('ensureSchema.partition', async (exec) => {
        await exec(SQL.LOCK_SCHEMA, SQL.lockSchemaParams(this.db.schemaName));
        const locked = readLayout(
          await exec(
            SQL.SELECT_PARTITION_LAYOUT,
            SQL.selectPartitionLayoutParams(this.db.schemaName),
          ),
        );
        const done: { table: SQL.PartitionedTable; keptRows: boolean }[] = [];
        for (const table of TABLES) {
          if (locked.tables[table].partitioned) continue;
          done.push({ table, keptRows: await this.convert(exec, table, period, locked.now) });
        }
        return done;
      });
      for (const { table, keptRows } of converted) {
        partitionEvents.converted(this.db.logger, this.where(table), {
          dialect: 'postgres',
          schema: this.db.schemaName,
          table,
          period,
          keptRows,
        });
      }
      layout = await this.layout();
    }
    await this.makeAhead(layout);
  }

  /**
   * Makes the partitions each partitioned table lacks for the current period and
   * `PERIODS_AHEAD` after it (`uncovered`: gaps included, ranges a conversion kept excluded), by
   * the period `periodToMake` gives (the configured one, else that of the newest partition).
   */
  async makeAhead(layout: PartitionLayout): Promise<void> {
    for (const table of TABLES) {
      const { partitioned, partitions } = layout.tables[table];
      if (!partitioned) continue;
      const periods = partitions.filter((p) => p.kind === 'period').map((p) => p.range!);
      const newest = periods.sort((a, b) => b.to.getTime() - a.to.getTime())[0];
      const period = periodToMake(this.db.config.partitioning, newest);
      const kept = partitions.filter((p) => p.kind === 'legacy').map((p) => p.range!);
      const made: string[] = [];
      for (const range of uncovered(rangesAhead(layout.now, period), [...periods, ...kept])) {
        const name = `${table}_${dayStamp(range.from!)}_${dayStamp(range.to)}`;
        const ok = await this.change(table, name, 'absent', async (exec) => {
          for (const sql of SQL.makePartition(this.db.s, table, name, range.from!, range.to)) {
            await exec(sql);
          }
          return true;
        });
        if (ok) made.push(name);
      }
      if (made.length > 0)
        partitionEvents.changed(this.db.logger, this.where(table), table, made, []);
    }
  }

  /** The partitions of `table` whose whole range is older than `retentionMs` (none when plain). */
  expired(layout: PartitionLayout, table: SQL.PartitionedTable, retentionMs: number): string[] {
    // Only the partitions of periods and the kept old table have a range (see describePartition).
    return layout.tables[table].partitions
      .filter((p) => p.range !== null && expired(p.range, layout.now, retentionMs))
      .map((p) => p.name);
  }

  /**
   * Drops one partition of `table` after settling what row-by-row retention settles per row
   * ({@link SQL.settlePartition}); `counted` runs in the same transaction with the partition's row
   * count (the retention's audit). Returns the rows removed: 0 when another process dropped it
   * first or a lock was not granted in time (then the next pass tries again).
   */
  async drop(
    table: SQL.PartitionedTable,
    partition: string,
    counted: (exec: Exec, removed: number) => Promise<void>,
  ): Promise<number> {
    const removed = await this.change(table, partition, 'present', async (exec) => {
      await exec(SQL.lockPartition(this.db.s, partition));
      const settle = SQL.settlePartition(this.db.s, partition);
      const [row] = await exec(settle.count);
      await exec(settle.attempts);
      await exec(settle.edges);
      await exec(SQL.dropPartition(this.db.s, partition));
      await counted(exec, num(row.removed));
      return num(row.removed);
    });
    if (removed === undefined) return 0;
    partitionEvents.changed(this.db.logger, this.where(table), table, [], [partition]);
    return removed;
  }

  /**
   * The tables row-by-row retention deletes from: the table itself when it is plain; else the
   * partitions that are not dropped whole (the rows a conversion kept, until the whole of them
   * expires, and the default partition), so no row of a period's partition is deleted singly.
   */
  rowWiseTables(
    layout: PartitionLayout,
    table: SQL.PartitionedTable,
    retentionMs: number,
  ): string[] {
    const { partitioned, partitions } = layout.tables[table];
    if (!partitioned) return [table];
    return partitions
      .filter(
        (p) =>
          p.kind === 'default' ||
          (p.kind === 'legacy' && !expired(p.range!, layout.now, retentionMs)),
      )
      .map((p) => p.name);
  }

  /**
   * Converts one plain table (in the caller's transaction, under the schema lock): its rows stay
   * in a partition of every time before the end of the current period; an empty table is replaced.
   * Returns whether rows were kept.
   */
  private async convert(
    exec: Exec,
    table: SQL.PartitionedTable,
    period: PartitionPeriod,
    now: Date,
  ): Promise<boolean> {
    const [{ empty }] = await exec(SQL.tableIsEmpty(this.db.s, table));
    const indexes = (
      await exec(SQL.SELECT_TABLE_INDEXES, SQL.selectTableIndexesParams(this.db.schemaName, table))
    ).map((row) => ({
      name: String(row.name),
      definition: String(row.definition),
      primary: row.primary === true,
    }));
    const bound = nextPeriod(periodStart(now, period), period);
    const statements = SQL.convertToPartitioned({
      s: this.db.s,
      table,
      legacy: `${table}_min_${dayStamp(bound)}`,
      bound,
      indexes,
      empty: empty === true,
    });
    for (const sql of statements) await exec(sql);
    return empty !== true;
  }

  /**
   * One partition's change in its own transaction: the lock timeout, the advisory lock of the
   * schema's partitions, then `work` if the partition is still as the layout read it (`expect`:
   * absent for one to make, present for one to drop). Undefined when it was not done: another
   * process did it first, or a lock was not granted in time (logged; the next pass tries again).
   */
  private async change<T>(
    table: SQL.PartitionedTable,
    partition: string,
    expect: 'absent' | 'present',
    work: (exec: Exec) => Promise<T>,
  ): Promise<T | undefined> {
    try {
      return await this.db.transaction('partitions.change', async (exec) => {
        await exec(SQL.partitionLockTimeout(this.lockTimeoutMs));
        await exec(SQL.LOCK_PARTITIONS, SQL.lockPartitionsParams(this.db.schemaName));
        const [row] = await exec(
          SQL.SELECT_TABLE_EXISTS,
          SQL.selectTableExistsParams(this.db.s, partition),
        );
        if ((row.exists === true) !== (expect === 'present')) return undefined;
        return work(exec);
      });
    } catch (error) {
      if (!isLockNotAvailableError(error)) throw error;
      partitionEvents.deferred(
        this.db.logger,
        this.where(table),
        table,
        partition,
        `a lock was not granted within ${this.lockTimeoutMs} ms (${toError(error).message})`,
      );
      return undefined;
    }
  }

  /** The table as the log events name it. */
  private where(table: SQL.PartitionedTable): string {
    return `"${this.db.schemaName}.${table}"`;
  }
}

/** {@link PartitionLayout} from the rows of {@link SQL.SELECT_PARTITION_LAYOUT}. */
function readLayout(rows: readonly Record<string, unknown>[]): PartitionLayout {
  const tables = {
    jobs_archive: { partitioned: false, partitions: [] },
    jobs_dlq: { partitioned: false, partitions: [] },
  } as Record<SQL.PartitionedTable, TableLayout>;
  let now = new Date();
  for (const row of rows) {
    now = toDate(row.now) ?? now;
    const table = row.table as SQL.PartitionedTable;
    tables[table].partitioned = row.kind === 'p';
    if (typeof row.partition === 'string') {
      tables[table].partitions.push(describePartition(table, row.partition));
    }
  }
  return { now, tables };
}

/** What a partition's name says of it (see `./sql/partitions.ts` for the names). */
export function describePartition(table: string, name: string): PartitionInfo {
  if (name === `${table}_default`) return { name, kind: 'default', range: null };
  const rest = name.startsWith(`${table}_`) ? name.slice(table.length + 1).split('_') : [];
  if (rest.length === 2) {
    const to = parseDayStamp(rest[1]);
    if (to !== null && rest[0] === 'min')
      return { name, kind: 'legacy', range: { from: null, to } };
    const from = parseDayStamp(rest[0]);
    if (to !== null && from !== null && from < to) {
      return { name, kind: 'period', range: { from, to } };
    }
  }
  return { name, kind: 'other', range: null };
}
