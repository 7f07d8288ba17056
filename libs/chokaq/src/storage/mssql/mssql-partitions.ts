import { toError } from '../../common/error-text';
import {
  type PartitionPeriod,
  dayStamp,
  expired,
  partitionEvents,
  periodStart,
  periodToMake,
  rangesAhead,
} from '../shared/partitions';
import { toDate } from '../shared/row-mapper';
import { isPartitionLockBusy } from './mssql-errors';
import { MssqlStatement } from './mssql-params';
import { MssqlConnection, Row, bool, num } from './mssql.connection';
import { MSSQL_TABLES, type MssqlPartitionedTable } from './mssql.schema';
import * as SQL from './sql';

/** The Archive's or the DLQ's layout, as `SQL.partitionLayout` reads it. */
export interface MssqlTableLayout {
  /** On its scheme `PS_<schema>_<Table>` (RANGE RIGHT on the time column). */
  partitioned: boolean;
  /** Indexes not aligned with the table (a DBA's): no partition can be truncated while any is. */
  unaligned: number;
  /** A foreign key referencing the table, replication or change data capture: no TRUNCATE. */
  blocked: boolean;
  /** The function's boundaries, ascending (`boundary_id` 1…n). */
  boundaries: Date[];
}

/** Both tables' layouts, read with the database clock. */
export interface MssqlPartitionLayout {
  now: Date;
  tables: Record<MssqlPartitionedTable, MssqlTableLayout>;
}

/** The partitioned tables, in the order retention goes through them. */
const TABLES: readonly MssqlPartitionedTable[] = ['archive', 'dlq'];

/** {@link MssqlPartitionLayout} from the rows of `SQL.partitionLayout` (boundaries in order). */
export function readLayout(rows: readonly Row[]): MssqlPartitionLayout {
  const plain = (): MssqlTableLayout => ({
    partitioned: false,
    unaligned: 0,
    blocked: false,
    boundaries: [],
  });
  const tables: Record<MssqlPartitionedTable, MssqlTableLayout> = {
    archive: plain(),
    dlq: plain(),
  };
  let now: Date | null = null;
  for (const row of rows) {
    now = toDate(row.NowUtc) ?? now;
    const layout = tables[row.Pillar as MssqlPartitionedTable];
    if (layout === undefined) continue;
    layout.partitioned = num(row.Partitioned) === 1;
    layout.unaligned = num(row.Unaligned);
    layout.blocked = num(row.Blocked) === 1;
    const boundary = toDate(row.Boundary);
    if (layout.partitioned && boundary !== null) layout.boundaries.push(boundary);
  }
  for (const layout of Object.values(tables)) {
    layout.boundaries.sort((a, b) => a.getTime() - b.getTime());
  }
  return { now: now ?? new Date(), tables };
}

/**
 * The boundaries a partitioned table should have at `now`: the start of the current period and
 * the end of each range `rangesAhead` wants (the current period and `PERIODS_AHEAD` after it), so
 * every one of those ranges is a partition of its own and the rightmost, past the last, is empty.
 */
export function boundariesAhead(now: Date, period: PartitionPeriod): Date[] {
  return [periodStart(now, period), ...rangesAhead(now, period).map((range) => range.to)];
}

/**
 * The boundaries of `wanted` that a function with `boundaries` lacks and can take: those above
 * its last one (a boundary below it would split a bounded partition that holds rows).
 */
export function missingAhead(boundaries: readonly Date[], wanted: readonly Date[]): Date[] {
  const last = boundaries[boundaries.length - 1];
  if (last === undefined) return [];
  return wanted.filter((at) => at.getTime() > last.getTime());
}

/**
 * The bounded partitions of a RANGE RIGHT function with `boundaries` b1 < … < bn, numbered as SQL
 * Server numbers them: partition 1 is everything before b1 (unbounded below), partition k + 1 is
 * `[bk, bk+1)`, partition n + 1 everything from bn on (unbounded above). Only the n − 1 bounded
 * ones, oldest first.
 */
export function boundedPartitions(boundaries: readonly Date[]): SQL.MssqlPartitionSlot[] {
  return boundaries.slice(0, -1).map((from, i) => ({ number: i + 2, from, to: boundaries[i + 1] }));
}

/**
 * The bounded partitions whose whole range is older than `now − retentionMs` (`expired`), oldest
 * first, each numbered as it will be when its turn comes: removing a partition merges its lower
 * boundary away, so every partition after it moves down one number. Retention removes them in this
 * order and stops at the first it could not remove (the numbers after it would be one too low).
 */
export function expiredPartitions(
  boundaries: readonly Date[],
  now: Date,
  retentionMs: number,
): SQL.MssqlPartitionSlot[] {
  return boundedPartitions(boundaries)
    .filter((slot) => expired(slot, now, retentionMs))
    .map((slot, removedBefore) => ({ ...slot, number: slot.number - removedBefore }));
}

/** How a partition of `table` covering `[from, to)` is named in the logs (as PostgreSQL names one). */
export function partitionLabel(table: MssqlPartitionedTable, from: Date, to: Date): string {
  return `${MSSQL_TABLES[table]}_${dayStamp(from)}_${dayStamp(to)}`;
}

/**
 * The partitioned Archive and DLQ of the SQL Server dialect (`storage.partitioning`; the design:
 * `./sql/partitions.ts`, `mssqlPartitionScript`, and docs/storage.md, "A partitioned Archive"):
 * converting the plain tables at `ensureSchema`, making boundaries ahead and removing expired
 * partitions whole at each retention pass. Each change is its own transaction under the schema's
 * partitions applock and a short lock wait; one that cannot get its locks is logged
 * (`PartitionMaintenanceDeferred`) and left to the next pass.
 */
export class MssqlPartitions {
  constructor(private readonly db: MssqlConnection) {}

  /** Both tables' layouts, from the catalog (one read). */
  async layout(): Promise<MssqlPartitionLayout> {
    return readLayout(
      await this.db.query('partitions.layout', SQL.partitionLayout(this.db.target)),
    );
  }

  /**
   * `ensureSchema`'s step for `storage.partitioning`: converts whichever table is still plain (each
   * its own schema batch, under the schema's applock, which re-reads the table there), then makes
   * the boundaries ahead.
   */
  async ensure(period: PartitionPeriod): Promise<void> {
    let layout = await this.layout();
    let converted = false;
    for (const table of TABLES) {
      if (layout.tables[table].partitioned) continue;
      const statement = SQL.convertToPartitioned(
        this.db.target,
        table,
        boundariesAhead(layout.now, period),
      );
      const [row] = await this.db.schemaQuery('ensureSchema.partition', statement);
      if (!bool(row?.Converted)) continue;
      converted = true;
      partitionEvents.converted(this.db.logger, this.where(table), {
        dialect: 'mssql',
        schema: this.db.schema,
        table: MSSQL_TABLES[table],
        period,
        keptRows: bool(row?.KeptRows),
      });
    }
    if (converted) layout = await this.layout();
    await this.makeAhead(layout);
  }

  /**
   * Adds to each partitioned table the boundaries it lacks up to `PERIODS_AHEAD` periods ahead
   * (`SQL.makePartitionsAhead`; none when it has them all, the usual pass), by the period
   * `periodToMake` gives (the configured one, else that of the newest bounded partition).
   */
  async makeAhead(layout: MssqlPartitionLayout): Promise<void> {
    for (const table of TABLES) {
      const { partitioned, boundaries } = layout.tables[table];
      if (!partitioned) continue;
      const newest = boundedPartitions(boundaries).pop();
      const period = periodToMake(this.db.config.partitioning, newest);
      const missing = missingAhead(boundaries, boundariesAhead(layout.now, period));
      if (missing.length === 0) continue;
      const last = boundaries[boundaries.length - 1];
      const rows = await this.change(
        table,
        partitionLabel(table, last, missing[0]),
        SQL.makePartitionsAhead(this.db.target, table, missing),
        (statement) => this.db.query('partitions.makeAhead', statement),
      );
      const added = (rows ?? []).map((row) => toDate(row.Boundary)!);
      if (added.length === 0) continue;
      const created = [last, ...added].slice(0, -1).map((from, i) => {
        return partitionLabel(table, from, added[i]);
      });
      partitionEvents.changed(this.db.logger, this.where(table), MSSQL_TABLES[table], created, []);
    }
  }

  /**
   * The partitions of `table` retention removes whole now (`expiredPartitions`): none when the
   * table is plain, or when a partition cannot be truncated (an unaligned index, a foreign key
   * referencing it, replication, change data capture; logged, and the whole table is then retained
   * row by row, {@link rowWise}).
   */
  expired(
    layout: MssqlPartitionLayout,
    table: MssqlPartitionedTable,
    retentionMs: number,
  ): SQL.MssqlPartitionSlot[] {
    const { partitioned, boundaries, unaligned, blocked } = layout.tables[table];
    if (!partitioned) return [];
    const slots = expiredPartitions(boundaries, layout.now, retentionMs);
    if (slots.length > 0 && !this.truncatable(layout, table)) {
      const why = blocked
        ? 'a foreign key references the table, or it is replicated or tracked by change data capture'
        : `${unaligned} index(es) of the table are not aligned with its partition scheme`;
      this.logDeferred(
        table,
        partitionLabel(table, slots[0].from, slots[0].to),
        new Error(`it cannot be truncated: ${why}; its rows are deleted one by one instead`),
      );
      return [];
    }
    return slots;
  }

  /**
   * Removes one expired partition whole (`SQL.dropPartition`), run by `run` (the retention's
   * batch, with its audit row when it has one). Returns the rows removed, or undefined when it was
   * not removed: the partitions changed since the layout was read, or a lock was not granted in
   * time (logged); retention then stops removing this table's partitions until the next pass.
   */
  async drop(
    table: MssqlPartitionedTable,
    slot: SQL.MssqlPartitionSlot,
    ageMs: number,
    run: (statement: MssqlStatement) => Promise<Row[]>,
  ): Promise<number | undefined> {
    const label = partitionLabel(table, slot.from, slot.to);
    const statement = SQL.dropPartition(this.db.target, table, slot, ageMs);
    const rows = await this.change(table, label, statement, run);
    if (rows === undefined || num(rows[0]?.Removed) !== 1) return undefined;
    partitionEvents.changed(this.db.logger, this.where(table), MSSQL_TABLES[table], [], [label]);
    return num(rows[0]?.Affected);
  }

  /**
   * The rows of `table` row-by-row retention deletes: all of them (null) when it is plain or no
   * partition of it can be truncated; else those before its first boundary and from its last on
   * (the leftmost and rightmost partitions), never a row of a period's partition.
   */
  rowWise(
    layout: MssqlPartitionLayout,
    table: MssqlPartitionedTable,
  ): SQL.MssqlRowWiseRange | null {
    const { boundaries } = layout.tables[table];
    if (!this.truncatable(layout, table) || boundaries.length === 0) return null;
    return { below: boundaries[0], from: boundaries[boundaries.length - 1] };
  }

  private truncatable(layout: MssqlPartitionLayout, table: MssqlPartitionedTable): boolean {
    const { partitioned, unaligned, blocked } = layout.tables[table];
    return partitioned && unaligned === 0 && !blocked;
  }

  /**
   * Runs one partition change; undefined when it gave up on a lock (the batch raised
   * `PARTITION_LOCK_BUSY_ERROR`), which is logged and left to the next pass.
   */
  private async change(
    table: MssqlPartitionedTable,
    partition: string,
    statement: MssqlStatement,
    run: (statement: MssqlStatement) => Promise<Row[]>,
  ): Promise<Row[] | undefined> {
    try {
      return await run(statement);
    } catch (error) {
      if (!isPartitionLockBusy(error)) throw error;
      this.logDeferred(table, partition, error);
      return undefined;
    }
  }

  private logDeferred(table: MssqlPartitionedTable, partition: string, error: unknown): void {
    const name = MSSQL_TABLES[table];
    partitionEvents.deferred(
      this.db.logger,
      this.where(table),
      name,
      partition,
      toError(error).message,
    );
  }

  /** The table as the log events name it. */
  private where(table: MssqlPartitionedTable): string {
    return `[${this.db.schema}].[${MSSQL_TABLES[table]}]`;
  }
}
