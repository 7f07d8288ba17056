import { summarize, type Summary } from './stats';

/*
 * The partitions scenario's figures (issue 31, part 3) and the Markdown of its section of
 * RESULTS.md: a plain schema against one whose Archive and DLQ are partitioned by day.
 */

/** The two layouts measured side by side: the plain tables, and the Archive and DLQ by day. */
export type Layout = 'plain' | 'partitioned';

/** The heading of the partitions scenario's section of RESULTS.md. */
export const PARTITIONS_HEADING =
  '## Partitions: retention and the hot path beside a partitioned Archive';

/** What one layout's retention pass did (one run). */
export interface RetentionRun {
  layout: Layout;
  /** Partitions of the Archive, the default one included (0: plain). */
  archivePartitions: number;
  rowsBefore: number;
  /** Archived rows the pass removed (`RetentionResult.archive`). */
  removed: number;
  rowsAfter: number;
  seconds: number;
  /** WAL the server wrote during the pass (the whole cluster's). */
  walBytes: number;
  /** The Archive's size with its indexes and TOAST, before and after the pass. */
  bytesBefore: number;
  bytesAfter: number;
  /** The Archive's dead tuples after the pass, once its writers had closed their connections. */
  deadTuples: number;
  seedSeconds: number;
  load: [number, number];
}

/** The single enqueue's insert on a session of its own (the partitions scenario's `enqueuePlan`). */
export interface EnqueuePlan {
  /** Median round trip of the prepared insert once PostgreSQL uses its generic plan (ms). */
  executionMs: number;
  /** How many of the timed and untimed executions ran a generic plan (the rest: custom plans). */
  genericPlans: number;
  /** Relation locks one execution takes (tables and indexes: every partition's, when partitioned). */
  relationLocks: number;
  /** Planning time of a fresh plan of it in a session whose caches are filled (ms). */
  planningMs: number;
  /** Archive and DLQ tables its plan scans (one per partition when partitioned). */
  scans: number;
}

/** One round of the hot path on one layout (the scale scenario's archive-curve figures). */
export interface HotPathRound {
  layout: Layout;
  /** Partitions of the Archive and of the DLQ, the default ones included (0: plain). */
  archivePartitions: number;
  dlqPartitions: number;
  /** Jobs per second: single enqueues, bulk enqueues, a c50 drain by one worker process. */
  enqueueSingle: number;
  enqueueBulk: number;
  drainJobsPerSecond: number;
  /** An `archiveSucceeded` of 100 started rows, timed alone (ms). */
  archiveP50: number;
  archiveP95: number;
  plan: EnqueuePlan;
  load: [number, number];
}

const mb = (bytes: number): string => (bytes / 2 ** 20).toFixed(0);
/** WAL with its unit: a dropped partition writes kilobytes, a deletion of its rows megabytes. */
const wal = (bytes: number): string =>
  bytes < 2 ** 20 ? `${(bytes / 2 ** 10).toFixed(0)} kB` : `${mb(bytes)} MB`;
const n = (value: number): string => value.toLocaleString('en-US');

/** The retention measurement, one row per layout. */
export function retentionTable(runs: readonly RetentionRun[]): string {
  const lines = [
    '| schema | Archive partitions | archived rows before | removed | left | retention pass (s) | WAL written | Archive before (MB) | Archive after (MB) | dead tuples after | load 1m |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of runs) {
    lines.push(
      `| ${r.layout} | ${r.archivePartitions || '—'} | ${n(r.rowsBefore)} | ${n(r.removed)} | ${n(r.rowsAfter)} | ` +
        `**${r.seconds.toFixed(2)}** | ${wal(r.walBytes)} | ${mb(r.bytesBefore)} | **${mb(r.bytesAfter)}** | ` +
        `${n(r.deadTuples)} | ${r.load[0].toFixed(1)}–${r.load[1].toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}

function cell(s: Summary, digits: number): string {
  const f = (x: number) => x.toFixed(digits);
  return s.min === s.max ? `**${f(s.median)}**` : `**${f(s.median)}** (${f(s.min)}–${f(s.max)})`;
}

/**
 * The hot path, one row per layout: the median of the rounds (min–max), each median against the
 * plain schema's, and one enqueue's plan (the medians of its planning and execution times).
 */
export function hotPathTable(
  rounds: readonly HotPathRound[],
  meta: Pick<PartitionsMeta, 'planWarmup' | 'planSamples'>,
): string {
  const lines = [
    '| schema | partitions (Archive / DLQ) | enqueue (jobs/s) | bulk enqueue (jobs/s) | archive of 100 p50 (ms) | drain c50 (jobs/s) | ÷ plain (enqueue / bulk / archive p50 / drain; the archive is a time) | enqueue insert, prepared (ms) | generic plans | relation locks | planned afresh (ms) | Archive and DLQ tables scanned | rounds | load 1m |',
    '|---|---|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---|',
  ];
  const of = (layout: Layout) => rounds.filter((r) => r.layout === layout);
  const medians = (mine: readonly HotPathRound[]) => ({
    single: summarize(mine.map((r) => r.enqueueSingle)),
    bulk: summarize(mine.map((r) => r.enqueueBulk)),
    archive: summarize(mine.map((r) => r.archiveP50)),
    drain: summarize(mine.map((r) => r.drainJobsPerSecond)),
    planning: summarize(mine.map((r) => r.plan.planningMs)),
    execution: summarize(mine.map((r) => r.plan.executionMs)),
  });
  const plain = of('plain').length > 0 ? medians(of('plain')) : undefined;
  for (const layout of ['plain', 'partitioned'] as const) {
    const mine = of(layout);
    if (mine.length === 0) continue;
    const m = medians(mine);
    const ratio = (a: Summary, b: Summary | undefined) =>
      b === undefined ? '—' : `${(a.median / b.median).toFixed(2)}×`;
    const loads = mine.flatMap((r) => r.load);
    lines.push(
      `| ${layout} | ${layout === 'plain' ? '—' : `${mine[0].archivePartitions} / ${mine[0].dlqPartitions}`} | ` +
        `${cell(m.single, 0)} | ${cell(m.bulk, 0)} | ${cell(m.archive, 2)} | ${cell(m.drain, 0)} | ` +
        `${ratio(m.single, plain?.single)} / ${ratio(m.bulk, plain?.bulk)} / ${ratio(m.archive, plain?.archive)} / ${ratio(m.drain, plain?.drain)} | ` +
        `${cell(m.execution, 2)} | ${mine.map((r) => r.plan.genericPlans).join(', ')} of ${meta.planWarmup + meta.planSamples} | ${mine[0].plan.relationLocks} | ${cell(m.planning, 2)} | ${mine[0].plan.scans} | ${mine.length} | ` +
        `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}

/** What the section says about the run besides the tables. */
export interface PartitionsMeta {
  rowsPerDay: number;
  /** The UTC days seeded for the retention pass, back from today. */
  seededDays: readonly number[];
  /** The retention policy, in days. */
  archiveDays: number;
  dlqDays: number;
  metricsDays: number;
  /** The hot path's sizes (the scale scenario's archive curve). */
  single: number;
  bulk: number;
  bulkChunk: number;
  archives: number;
  drain: number;
  queue: string;
  /** Untimed and timed executions of the prepared insert. */
  planWarmup: number;
  planSamples: number;
}

/** The section's paragraphs and tables, after its heading and command line. */
export function partitionsSectionParts(
  retention: readonly RetentionRun[],
  rounds: readonly HotPathRound[],
  meta: PartitionsMeta,
): string[] {
  const partitioned = rounds.find((r) => r.layout === 'partitioned');
  const [oldest, newest] = meta.seededDays;
  return [
    "What `storage.partitioning: { period: 'day' }` changes on PostgreSQL, measured beside a plain schema in the same run. Every schema is fresh and dropped after its measurement.",
    '### Retention',
    `Per schema, ${n(2 * meta.rowsPerDay)} archived rows seeded by the admin-reads seed (\`INSERT … SELECT\`): ${n(meta.rowsPerDay)} finished during the UTC day ${oldest} days ago (wholly past the Archive's retention) and ${n(meta.rowsPerDay)} during ${newest === 1 ? 'yesterday' : `the day ${newest} days ago`}; the partitioned schema has a partition for each of the last ${oldest} days, made before the seed (\`makePartition\`, as the maintenance loop would have made them ahead of time), so no row is in the default partition. Then \`VACUUM (ANALYZE)\` and a \`CHECKPOINT\`, and one \`applyRetention({ archiveMs: ${meta.archiveDays} days, dlqMs: ${meta.dlqDays} days, metricsMs: ${meta.metricsDays} day })\` timed, on a storage of the schema's layout (row-by-row retention in batches of 1,000 on the plain table; on the partitioned one the expired partition is dropped whole, after its rows' attempt history and dependency edges are settled). WAL: the difference of \`pg_current_wal_lsn()\` around the pass, the whole server's (this machine's PostgreSQL is shared, so it counts whatever else wrote meanwhile). The Archive's size: \`pg_total_relation_size\` of the table, or the sum over its partitions. Dead tuples: \`n_dead_tup\` of the table or its partitions, read 2 s after the storage closed its connections. Autovacuum is off on this server, so the dead tuples stay until a \`VACUUM\`, which would make their space reusable but not give it back.`,
    retentionTable(retention),
    '### The hot path beside a month of partitions',
    `What a user of 'day' with the default retention has after a month: the Archive's partitions of the last ${meta.archiveDays} days, the DLQ's of the last ${meta.dlqDays}, each with today's, the 7 days ahead and the default partition${partitioned ? ` (${partitioned.archivePartitions} and ${partitioned.dlqPartitions})` : ''}, all empty, against the plain schema. Per schema (fresh, with the admin-reads seed's queues, counters and metric buckets but no jobs), the scale scenario's archive curve: on one storage in this process, ${n(meta.single)} single enqueues and ${n(meta.bulk)} bulk enqueues in calls of ${n(meta.bulkChunk)} into \`${meta.queue}\`, ${meta.archives} claims of 100 each followed by its \`archiveSucceeded\` timed alone, then one worker process (concurrency 50, \`${meta.queue}\` alone) draining ${n(meta.drain)} of those jobs. Each round measures both schemas, the order alternating. An enqueue checks that its id is in neither the Archive nor the DLQ (\`NOT EXISTS\` on each): on a partitioned table that is one index probe per partition the check cannot prune, and for an id the library made it prunes, at execution, every partition of rows finished before the enqueue's first attempt (less an hour); the last five columns come from one single enqueue's insert (captured from \`enqueue\`), taken to a session of its own before the timed enqueues, on the same fresh tables (the plan cache's choice between a generic and a custom plan depends on what the statistics say, which the drain changes): run as a prepared statement, as the storage runs it, ${meta.planWarmup} times untimed and ${meta.planSamples} times timed (the median round trip; the id is in the hot table by then, so each execution finds the conflict and writes nothing, after the same probes); how many of the ${meta.planWarmup + meta.planSamples} ran a generic plan (PostgreSQL plans the first five afresh, then may keep a generic one); the relation locks one execution holds (a generic plan locks every partition it may read, including those its execution prunes); the planning time of a fresh plan in that warmed session (what each of the first five executions on every new connection pays); and the Archive and DLQ tables its execution scans (a partition pruned at execution is left out).`,
    hotPathTable(rounds, meta),
  ];
}
