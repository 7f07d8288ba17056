import { existsSync, readFileSync } from 'node:fs';
import {
  ARCHIVE_SPAN_MS,
  DLQ_SPAN_MS,
  PENDING_SPAN_MS,
  SEAL_AGE_MS,
  SEARCH_TERM,
  SEED_ERROR_FAMILIES,
  SEED_QUEUES,
  SEED_VERBS,
} from './admin-reads-seed';
import type { PartitionPeriod } from '../../libs/chokaq/src/storage/shared/partitions';
import type { BenchDialect, ReadSizes } from './args';
import { writeMarkdown } from './markdown';
import { ADMIN_READS_HEADING, DECK_HEADING, PROFILE_HEADING } from './report';

/** What a read is held to: a dashboard read, or a text search (reported separately). */
export type ReadKind = 'read' | 'search';

/** The p95 target of a read on a dialect, in ms (issue 13). */
export function targetMs(dialect: BenchDialect, kind: ReadKind): number {
  if (kind === 'search') return 500;
  return dialect === 'postgres' ? 50 : 100;
}

/** The timings of one read. */
export interface ReadTiming {
  name: string;
  kind: ReadKind;
  /** Timed calls, in ms, in call order. */
  samplesMs: number[];
  p50: number;
  p95: number;
  max: number;
  /** What the call returned, when it matters (a deep page's rows, a search's bound). */
  note?: string;
  /** Set when the read could not be timed (a filter with fewer rows than the deep page needs). */
  skipped?: string;
}

/** One dialect's run of the scenario. */
export interface AdminReadsRun {
  dialect: BenchDialect;
  seedSeconds: number;
  analyzeSeconds: number;
  /** Rows per table after seeding (counted once, untimed). */
  counts: Record<string, number>;
  /** Each queue's share of the archive, in queue order (the first is the largest). */
  queueShares: number[];
  /** Database size after seeding (PostgreSQL: the schema's relations; SQLite: the file and its WAL). */
  sizeMb: number;
  /** 1-minute load average before and after the timed rounds. */
  loadBefore: number;
  loadAfter: number;
  timings: ReadTiming[];
  /** Each statement of each read that missed its target, with its EXPLAIN output. */
  plans: Array<{ read: string; p95: number; statements: Array<{ sql: string; plan: string }> }>;
  /** The Archive and DLQ partitioned (`--partitioning`), with their partitions; absent: plain. */
  partitions?: { period: PartitionPeriod; archive: number; dlq: number } | null;
}

/**
 * The heading of the section a run on a partitioned data set writes (`--partitioning`), after the
 * other sections; the plain one ({@link ADMIN_READS_HEADING}) stays as it was.
 */
export function partitionedReadsHeading(period: PartitionPeriod): string {
  return `${ADMIN_READS_HEADING}, partitioned Archive (${period})`;
}

function ms(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

/** The Markdown table of one dialect: each read's p50, p95, max, target and verdict. */
export function readsTable(run: AdminReadsRun): string {
  const header = ['Read', 'p50 ms', 'p95 ms', 'max ms', 'target (p95)', 'verdict', 'note'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  const ordered = [
    ...run.timings.filter((t) => t.kind === 'read'),
    ...run.timings.filter((t) => t.kind === 'search'),
  ];
  for (const t of ordered) {
    const target = targetMs(run.dialect, t.kind);
    const cells = t.skipped
      ? [t.name, '—', '—', '—', `< ${target} ms`, 'not run', t.skipped]
      : [
          t.name,
          ms(t.p50),
          `**${ms(t.p95)}**`,
          ms(t.max),
          `< ${target} ms${t.kind === 'search' ? ' (search)' : ''}`,
          t.p95 < target ? 'met' : '**missed**',
          t.note ?? '',
        ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** Reads that missed their target, as `name (p95 ms)`. */
export function misses(run: AdminReadsRun): ReadTiming[] {
  return run.timings.filter((t) => !t.skipped && t.p95 >= targetMs(run.dialect, t.kind));
}

/**
 * Puts `section` (starting with {@link ADMIN_READS_HEADING}) into RESULTS.md in place of the
 * previous one, or before the deck section or the hand-written profile section when there was
 * none, and leaves every other part of the file as it was.
 */
export function spliceSection(previous: string, section: string): string {
  const body = `${section.trimEnd()}\n\n`;
  // The whole heading line: the partitioned data set's section starts with the same words.
  const line = previous.indexOf(`\n${ADMIN_READS_HEADING}\n`);
  const at = previous.startsWith(`${ADMIN_READS_HEADING}\n`) ? 0 : line < 0 ? -1 : line + 1;
  const next = (from: number) =>
    Math.min(
      ...[DECK_HEADING, PROFILE_HEADING]
        .map((h) => previous.indexOf(h, from))
        .filter((i) => i >= 0),
      previous.length,
    );
  if (at >= 0) return `${previous.slice(0, at)}${body}${previous.slice(next(at + 1))}`;
  const before = next(0);
  if (before < previous.length)
    return `${previous.slice(0, before)}${body}${previous.slice(before)}`;
  return `${previous.trimEnd()}\n\n${body}`;
}

/** Writes `section` into the RESULTS.md at `path` (see {@link spliceSection}). */
export async function writeAdminReadsSection(path: string, section: string): Promise<void> {
  const previous = existsSync(path) ? readFileSync(path, 'utf8') : '# ChokaQ benchmark results\n';
  await writeMarkdown(path, spliceSection(previous, section));
}

/** What the section says about the run besides the tables. */
export interface AdminReadsMeta {
  command: string;
  started: Date;
  ended: Date;
  machine: string;
  postgres: string;
  sqlite: string;
  sizes: ReadSizes;
  /** The data set's Archive and DLQ partitioned by this period (`--partitioning`); absent: plain. */
  partitioning?: PartitionPeriod;
}

/** Rows per page of the timed list reads. */
export const PAGE_ROWS = 50;

const DIALECT_TITLE: Record<BenchDialect, string> = {
  postgres: 'PostgreSQL',
  sqlite: 'SQLite (file, WAL)',
};

const n = (value: number): string => value.toLocaleString('en-US');

/** The admin-reads section of RESULTS.md: how the data was made and measured, one table per dialect. */
export function adminReadsSection(runs: readonly AdminReadsRun[], meta: AdminReadsMeta): string {
  const z = meta.sizes;
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const first = runs[0]?.queueShares ?? [];
  const shares = first.length
    ? `from ${pct(Math.max(...first))} of the archive in \`${SEED_QUEUES[0]}\` to ${pct(Math.min(...first))}`
    : 'none';
  const seeding = runs.map(
    (r) =>
      `${DIALECT_TITLE[r.dialect]} ${r.seedSeconds.toFixed(0)} s, then ` +
      `${r.dialect === 'postgres' ? '`VACUUM (ANALYZE)`' : '`ANALYZE`'} ${r.analyzeSeconds.toFixed(0)} s ` +
      `(${n(Math.round(r.sizeMb))} MB)`,
  );
  const period = meta.partitioning;
  const layouts = runs
    .filter((r) => r.partitions)
    .map(
      (r) =>
        `${DIALECT_TITLE[r.dialect]} ${r.partitions!.archive} partitions of the Archive and ${r.partitions!.dlq} of the DLQ`,
    );
  const lines = [
    period === undefined ? ADMIN_READS_HEADING : partitionedReadsHeading(period),
    '',
    `_Generated by \`${meta.command}\`; each run of the scenario${period === undefined ? '' : ` with \`--partitioning=${period}\``} rewrites this section, and the other scenarios keep it._`,
    '',
    `- Run: ${meta.started.toISOString()} → ${meta.ended.toISOString()}`,
    `- Machine: ${meta.machine}; PostgreSQL ${meta.postgres} on the same host, SQLite via better-sqlite3 ${meta.sqlite}`,
    `- Data (issue 13): ${n(z.archived)} archived jobs (finished over the last ${ARCHIVE_SPAN_MS / 86_400_000} days), ` +
      `${n(z.dead)} in the DLQ (failed over the last ${DLQ_SPAN_MS / 86_400_000} days), ${n(z.pending)} pending ` +
      `(enqueued over the last ${PENDING_SPAN_MS / 3_600_000} hours; one in ten scheduled up to an hour ahead), over ` +
      `${SEED_QUEUES.length} queues of falling shares (${shares}), ${SEED_VERBS.length} ` +
      `types per queue, ${SEED_ERROR_FAMILIES} error families with ids and numbers in their messages, tags on 3 rows in 10, ` +
      'one payload in 100 of about 8 KB; one-minute metric buckets of every queue over the last 24 hours ' +
      '(succeeded, failed, retried, started, some cancelled); 6 Workers rows; lifetime counters and controls of every queue. ' +
      'Then one retention pass that removes nothing (it seals the totals of every queue per minute on PostgreSQL, ' +
      `which a series of all queues reads), its seal set back ${SEAL_AGE_MS / 60_000} minutes: where it stands just before ` +
      'the next hourly pass, the most buckets such a series reads.',
    ...(period === undefined
      ? []
      : [
          `- Layout (issue 31, part 3): the Archive and the DLQ partitioned by ${period} (\`storage.partitioning: { period: '${period}' }\`): ` +
            `the storage converted them when it created the schema and made the current ${period}'s partition and those ahead; ` +
            `the bench then made the partitions of the past ${period}s the seed's spans reach (the library's \`makePartition\` statements, ` +
            `as maintenance would have made them ahead of time), so every row is in the partition of its ${period}: ${layouts.join('; ')} ` +
            '(the default partitions included). The plain data set\'s figures are in the section "Admin reads" above.',
        ]),
    `- Seeded with \`INSERT … SELECT\` over a generated series, in statements of ${n(z.chunk)} rows, into the tables the ` +
      `storage created (indexes and, on SQLite, the row-count triggers in place): ${seeding.join('; ')}. ` +
      'PostgreSQL is vacuumed as well as analysed so that autovacuum, which a million fresh rows would start, ' +
      'does not run during the timing.',
    `- Each read is one \`ChokaQAdmin\` call, end to end (validation, SQL, row mapping), built without Nest over ` +
      '`createJobStorage` in the bench process; no worker runs. One unmeasured round of every read, then ' +
      `${z.repetitions} rounds of every read in turn (a dashboard refresh asks them all); p50 and p95 of the ` +
      `${z.repetitions} calls (linear interpolation).`,
    `- Pages of ${PAGE_ROWS} rows. A deep page is the page that ends at row ${n(z.deepRow)}; its cursor is reached by walking ` +
      'the list (not timed). Filters: queue `emails` (the largest), type `emails.send` (its most frequent), ' +
      'reason `MaxRetriesExceeded`, time range from 36 to 12 hours ago. The search reads at most ' +
      `the newest 10,000 rows (\`MAX_LIST_SCAN\`) for \`${SEARCH_TERM}\`.`,
    '- Targets (issue 13): p95 under 50 ms on PostgreSQL and under 100 ms on SQLite; text search under 500 ms.',
    ...runs.map(
      (r) =>
        `- 1-min load average on ${DIALECT_TITLE[r.dialect]}: ${r.loadBefore.toFixed(2)} before the timed rounds, ` +
        `${r.loadAfter.toFixed(2)} after (2 cores, shared).`,
    ),
    '',
  ];
  for (const run of runs) {
    lines.push(`### ${DIALECT_TITLE[run.dialect]}`, '', readsTable(run), '');
    const missed = misses(run);
    lines.push(
      missed.length === 0
        ? `Every read met its target on ${DIALECT_TITLE[run.dialect]}.`
        : `Missed on ${DIALECT_TITLE[run.dialect]}: ${missed.map((t) => `${t.name} (p95 ${ms(t.p95)} ms)`).join('; ')}.`,
      '',
    );
    lines.push(...missPlans(run));
  }
  return lines.join('\n');
}

/** The plans of the reads that missed their target, each in a collapsed block (Markdown lines). */
export function missPlans(run: AdminReadsRun): string[] {
  const lines: string[] = [];
  for (const miss of run.plans) {
    lines.push(
      `<details><summary>Plans of ${miss.read} (${DIALECT_TITLE[run.dialect]}, p95 ${ms(miss.p95)} ms)</summary>`,
      '',
    );
    for (const s of miss.statements) {
      lines.push('```sql', s.sql.trim(), '```', '', '```text', s.plan, '```', '');
    }
    lines.push('</details>', '');
  }
  return lines;
}

/**
 * A run's table and, below it, the plans of the reads that missed their target: what a run prints,
 * so one that does not write RESULTS.md (`--no-write`) still says why they missed.
 */
export function readsReport(run: AdminReadsRun): string {
  return [readsTable(run), '', ...missPlans(run)].join('\n');
}

/** One JSON object per read and dialect (the `--json` contract of this scenario). */
export function adminReadsJson(runs: readonly AdminReadsRun[]): string[] {
  const round = (x: number) => Math.round(x * 100) / 100;
  return runs.flatMap((run) =>
    run.timings.map((t) =>
      JSON.stringify({
        dialect: run.dialect,
        scenario: 'admin-reads',
        read: t.name,
        kind: t.kind,
        p50: t.skipped ? null : round(t.p50),
        p95: t.skipped ? null : round(t.p95),
        max: t.skipped ? null : round(t.max),
        targetMs: targetMs(run.dialect, t.kind),
        met: t.skipped ? null : t.p95 < targetMs(run.dialect, t.kind),
        samplesMs: t.samplesMs.map(round),
        note: t.note ?? t.skipped ?? null,
      }),
    ),
  );
}
