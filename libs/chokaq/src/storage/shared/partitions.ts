/**
 * The calendar of a partitioned Archive and DLQ (`storage.partitioning`), shared by the dialects
 * that partition: where a period starts and ends (UTC), which ranges the maintenance loop keeps
 * made ahead, and which ranges retention may remove whole, and the log events of maintenance. The
 * statements that make and remove partitions are each dialect's own.
 */
import { logEvent } from '../../common/log-events';
import type { ChokaQLogger } from '../../interfaces/chokaq-logger.interface';
import type { ArchivePartitioning } from '../../interfaces/storage-options.interface';

export type PartitionPeriod = ArchivePartitioning['period'];

/** A range of finish times `[from, to)`, as one partition covers it; `from` null is unbounded below. */
export interface PartitionRange {
  from: Date | null;
  to: Date;
}

/**
 * How many periods the maintenance loop keeps made ahead of the current one: a week of days, four
 * weeks, two months. Far more than a retention interval (an hour by default), so that rows land in
 * the default partition only when maintenance has not run for that long.
 */
export const PERIODS_AHEAD: Record<PartitionPeriod, number> = { day: 7, week: 4, month: 2 };

const DAY_MS = 86_400_000;

/** The start (UTC midnight; a Monday for a week, the 1st for a month) of the period holding `at`. */
export function periodStart(at: Date, period: PartitionPeriod): Date {
  const day = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  if (period === 'day') return new Date(day);
  if (period === 'week') return new Date(day - ((new Date(day).getUTCDay() + 6) % 7) * DAY_MS);
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

/** The start of the period after the one that starts at `start`. */
export function nextPeriod(start: Date, period: PartitionPeriod): Date {
  if (period === 'day') return new Date(start.getTime() + DAY_MS);
  if (period === 'week') return new Date(start.getTime() + 7 * DAY_MS);
  return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
}

/** The ranges to have at `now`: the current period and {@link PERIODS_AHEAD} after it. */
export function rangesAhead(now: Date, period: PartitionPeriod): PartitionRange[] {
  const ranges: PartitionRange[] = [];
  let start = periodStart(now, period);
  for (let i = 0; i <= PERIODS_AHEAD[period]; i += 1) {
    const end = nextPeriod(start, period);
    ranges.push({ from: start, to: end });
    start = end;
  }
  return ranges;
}

/**
 * The parts of `wanted` that no range of `existing` covers, in order: what maintenance makes. A
 * range a conversion kept (`from` null) covers all before it; a period whose making was deferred
 * leaves a gap that the next pass fills; after a change of period, the first new range starts
 * where the old ones end.
 */
export function uncovered(
  wanted: readonly PartitionRange[],
  existing: readonly PartitionRange[],
): PartitionRange[] {
  const taken = [...existing].sort(
    (a, b) => (a.from?.getTime() ?? -Infinity) - (b.from?.getTime() ?? -Infinity),
  );
  const out: PartitionRange[] = [];
  for (const range of wanted) {
    let from = range.from?.getTime() ?? -Infinity;
    const to = range.to.getTime();
    for (const t of taken) {
      const tFrom = t.from?.getTime() ?? -Infinity;
      const tTo = t.to.getTime();
      if (tTo <= from || tFrom >= to) continue;
      if (tFrom > from) out.push({ from: new Date(from), to: new Date(tFrom) });
      from = Math.max(from, tTo);
    }
    if (from < to) out.push({ from: Number.isFinite(from) ? new Date(from) : null, to: range.to });
  }
  return out;
}

/**
 * Whether retention may remove a partition whole: every instant it covers is older than `now −
 * retentionMs`, so each of its rows is past its retention.
 */
export function expired(range: PartitionRange, now: Date, retentionMs: number): boolean {
  return range.to.getTime() <= now.getTime() - retentionMs;
}

/**
 * The period a partition of `[from, to)` was made for, to keep making them alike when the tables
 * are partitioned but `storage.partitioning` is not set (now): a day, seven, or a month.
 */
export function periodOf(range: { from: Date; to: Date }): PartitionPeriod {
  const days = Math.round((range.to.getTime() - range.from.getTime()) / DAY_MS);
  return days <= 1 ? 'day' : days <= 7 ? 'week' : 'month';
}

/**
 * The period maintenance makes partitions by: the configured one (`storage.partitioning`), else
 * the one the newest bounded partition was made for ({@link periodOf}: the tables stay partitioned
 * when the option is removed), else a day.
 */
export function periodToMake(
  configured: ArchivePartitioning | null,
  newest: PartitionRange | undefined,
): PartitionPeriod {
  if (configured !== null) return configured.period;
  return newest?.from ? periodOf({ from: newest.from, to: newest.to }) : 'day';
}

/**
 * The log events of partition maintenance, written alike by every dialect that partitions;
 * `where` names the table as the dialect quotes it (`"chokaq.jobs_archive"`,
 * `[chokaq].[JobsArchive]`), `table` as the events' field carries it.
 */
export const partitionEvents = {
  /** `ArchivePartitioned`: `ensureSchema` converted a plain table. */
  converted(
    logger: ChokaQLogger,
    where: string,
    fields: { dialect: string; schema: string; table: string; period: string; keptRows: boolean },
  ): void {
    logEvent(
      logger,
      'ArchivePartitioned',
      `Table ${where} is now partitioned by ${fields.period}` +
        (fields.keptRows
          ? ' (the rows it had stay where they are until retention removes them)'
          : ''),
      fields,
    );
  },

  /** `PartitionsChanged`: partitions made ahead or dropped whole, by name. */
  changed(
    logger: ChokaQLogger,
    where: string,
    table: string,
    created: readonly string[],
    dropped: readonly string[],
  ): void {
    logEvent(
      logger,
      'PartitionsChanged',
      `Partitions of ${where}: made ${created.length}, dropped ${dropped.length}`,
      { table, created: [...created], dropped: [...dropped] },
    );
  },

  /** `PartitionMaintenanceDeferred`: a change left to the next pass, and why. */
  deferred(
    logger: ChokaQLogger,
    where: string,
    table: string,
    partition: string,
    reason: string,
  ): void {
    logEvent(
      logger,
      'PartitionMaintenanceDeferred',
      `Partition ${partition} of ${where} waits for the next maintenance pass: ${reason}`,
      { table, partition, error: reason },
    );
  },
};

/** `YYYYMMDD` of a UTC instant, as partition names carry their bounds. */
export function dayStamp(at: Date): string {
  return at.toISOString().slice(0, 10).replace(/-/g, '');
}

/** The instant of a `YYYYMMDD` stamp (UTC midnight), or null when it is not one. */
export function parseDayStamp(stamp: string): Date | null {
  const match = /^(\d{4})(\d{2})(\d{2})$/.exec(stamp);
  if (match === null) return null;
  const at = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
  return dayStamp(at) === stamp ? at : null;
}
