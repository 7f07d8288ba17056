/**
 * `npm run bench -- [flags]` (see `--help`): ChokaQ on PostgreSQL and SQLite, optionally beside
 * graphile-worker and pg-boss on the same PostgreSQL, scenario by scenario. Results go to stdout
 * (a Markdown table, or JSON lines with `--json`) and, unless `--quick`, to bench/RESULTS.md.
 * The admin-reads, metrics-ab and deck scenarios run only when named and write their own sections
 * of that file.
 * Progress goes to stderr.
 */
import { Logger } from '@nestjs/common';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import {
  adminReadsJson,
  adminReadsSection,
  missPlans,
  partitionedReadsHeading,
  readsReport,
  readsTable,
  writeAdminReadsSection,
  type AdminReadsRun,
} from './lib/admin-reads-report';
import {
  defaultScaleArchived,
  defaultScalePending,
  parseArgs,
  HELP,
  SEPARATE_SCENARIOS,
  type BenchArgs,
  type BenchDialect,
  type ScenarioName,
} from './lib/args';
import { loadLine, machineLine, packageVersion, postgresVersion } from './lib/environment';
import {
  metricsAbJson,
  metricsAbSection,
  metricsAbTable,
  offSpread,
  writeMetricsAbSection,
} from './lib/metrics-ab-report';
import {
  deckJson,
  deckSection,
  deckTables,
  writeDeckSection,
  type DeckRun,
} from './lib/deck-report';
import { writeMarkdown } from './lib/markdown';
import { ensureBenchDatabase, sweepStaleSchemas } from './lib/pg-admin';
import { jsonLines, markdownTable, writeResults } from './lib/report';
import { ResultSet } from './lib/results';
import { sleep } from './lib/stats';
import { compileWorkers } from './lib/worker-process';
import { runProfile } from './profile';
import { runAdminReads } from './scenarios/admin-reads.scenario';
import { runDeck } from './scenarios/deck.scenario';
import { drain } from './scenarios/drain.scenario';
import { FLOW_JOBS, FlowsRun, flowsTable, runFlows } from './scenarios/flows.scenario';
import {
  GROUPS_CLAIM,
  GROUPS_COUNT,
  GroupsRun,
  groupsTable,
  runGroups,
} from './scenarios/groups.scenario';
import {
  PARTITIONS_HEADING,
  hotPathTable,
  partitionsSectionParts,
  retentionTable,
} from './lib/partitions-report';
import {
  PARTITIONS_PERIOD,
  PLAN_SAMPLES,
  PLAN_WARMUP,
  QUICK_ROWS_PER_DAY,
  RETENTION_POLICY,
  ROWS_PER_DAY,
  SEEDED_DAYS,
  runPartitionHotPath,
  runPartitionRetention,
} from './scenarios/partitions.scenario';
import { seedReadsData, seedSpansLayout } from './scenarios/reads-data';
import { runScenario } from './scenarios/run-scenario';
import { footprintTable, runFootprint } from './scenarios/footprint.scenario';
import {
  ARCHIVE_CURVE,
  ARCHIVE_QUEUE,
  type ArchivePoint,
  type ScalePoint,
  runScaleArchive,
  runScaleClaims,
  scaleArchiveTable,
  scaleClaimTable,
} from './scenarios/scale.scenario';
import { startOwnCluster } from './lib/pg-cluster';
import { lineChartSvg } from './lib/svg-chart';
import {
  type SoakMinute,
  runSoak,
  measured,
  soakChecks,
  soakChecksTable,
  soakTable,
} from './scenarios/soak.scenario';
import type { BenchSystem } from './systems/bench-system';
import { METRICS_VARIANTS, chokaqSystem } from './systems/chokaq.system';
import { graphileSystem } from './systems/graphile.system';
import { pgBossSystem } from './systems/pgboss.system';

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function systemsFor(dialect: BenchDialect, args: BenchArgs, benchUrl: string): BenchSystem[] {
  const systems = [chokaqSystem(dialect, benchUrl, undefined, args.startAhead, args.handler)];
  if (args.peers && dialect === 'postgres') {
    systems.push(
      graphileSystem('preset', benchUrl, packageVersion('graphile-worker')),
      graphileSystem('default', benchUrl, packageVersion('graphile-worker')),
      pgBossSystem(benchUrl, packageVersion('pg-boss')),
    );
  }
  return systems;
}

/** What the load was while measuring: the `--max-load` gate's verdict, or a busy-machine warning. */
function loadWarning(results: ResultSet, args: BenchArgs): string[] {
  const lines: string[] = [];
  if (args.maxLoad !== undefined) {
    // The gate decides whether the machine was quiet before a scenario; the runs load it themselves.
    lines.push(
      gateMisses.length === 0
        ? `- Every scenario started with the 1-min load average below ${args.maxLoad} (the \`--max-load\` gate).`
        : `- **${gateMisses.length} scenario(s) started above the \`--max-load\` gate** of ${args.maxLoad} (load up to ${Math.max(...gateMisses).toFixed(2)}): their figures are noisier.`,
    );
  } else {
    const worst = Math.max(0, ...results.rows.flatMap((r) => r.loads));
    if (worst > QUIET_LOAD) {
      lines.push(
        `- **Measured on a busy machine** (1-min load average up to ${worst.toFixed(1)}, above ${QUIET_LOAD} on 2 cores): absolute figures are low and noisy; ratios are indicative. Re-run with \`--max-load=${QUIET_LOAD}\` on a quiet machine.`,
      );
    }
  }
  lines.push(
    '- The load column is read after each run, so it includes the run itself (worker processes and PostgreSQL on the same 2 cores).',
  );
  return lines;
}

/** Loads at which a scenario started anyway because `--max-load-wait-s` ran out. */
const gateMisses: number[] = [];

/** The load average below which this 2-core machine counts as quiet enough to measure. */
const QUIET_LOAD = 1.5;

/** `--max-load`: waits (bounded) for other engineers' work on this machine to calm down. */
async function waitForLoad(args: BenchArgs, log: (m: string) => void): Promise<void> {
  if (args.maxLoad === undefined) return;
  const limit = args.maxLoad;
  const deadline = Date.now() + args.maxLoadWaitMs;
  let said = false;
  while (loadavg()[0] >= limit && Date.now() < deadline) {
    if (!said) log(`waiting for load average < ${limit} (now ${loadLine()})`);
    said = true;
    await sleep(5_000);
  }
  if (loadavg()[0] >= limit) {
    log(`load still ${loadLine()} after waiting; measuring anyway`);
    gateMisses.push(loadavg()[0]);
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args === 'help') {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  // The bench's own storages (producers, schema setup) log schema creation at info; keep it quiet.
  Logger.overrideLogger(['error', 'warn']);
  const benchUrl = await ensureBenchDatabase(args.pgUrl);
  const swept = await sweepStaleSchemas(benchUrl);
  if (swept > 0) log(`dropped ${swept} schema(s) left by earlier bench processes`);
  log(`load average ${loadLine()} (figures are only meaningful below ~1.5 on this 2-core machine)`);
  const suite = [...args.scenarios].filter((s) => !SEPARATE_SCENARIOS.includes(s));
  // Every scenario that forks a worker process runs the compiled worker of this checkout.
  const forking = ['metrics-ab', 'scale', 'soak', 'partitions'] as const;
  if (args.profile || suite.length > 0 || forking.some((s) => args.scenarios.has(s))) {
    log('compiling the worker processes (tsc -p bench/tsconfig.worker.json)');
    compileWorkers();
  }
  if (args.profile) return runProfile(args, benchUrl, log);

  if (suite.length > 0) await runSuite(args, suite, benchUrl);
  if (args.scenarios.has('metrics-ab')) await metricsAb(args, benchUrl);
  if (args.scenarios.has('admin-reads') || args.scenarios.has('deck')) {
    await readScenarios(args, benchUrl);
  }
  if (args.scenarios.has('groups')) await groups(args, benchUrl);
  if (args.scenarios.has('flows')) await flows(args, benchUrl);
  if (args.scenarios.has('footprint')) await footprint(args);
  if (args.scenarios.has('scale')) await scale(args, benchUrl);
  if (args.scenarios.has('soak')) await soak(args, benchUrl);
  if (args.scenarios.has('partitions')) await partitions(args, benchUrl);
}

/**
 * The partitions scenario (PostgreSQL): retention of a day's archived rows on a plain schema and
 * on one partitioned by day, then the hot path beside a month of partitions (`--runs` rounds);
 * its tables on stdout and its own section of RESULTS.md.
 */
async function partitions(args: BenchArgs, benchUrl: string): Promise<void> {
  if (!args.dialects.has('postgres')) {
    log('partitions: runs on PostgreSQL only (--dialects must include postgres)');
    return;
  }
  const started = new Date();
  const quiet = () => waitForLoad(args, log);
  const missesBefore = gateMisses.length;
  await quiet();
  const rowsPerDay = args.quick ? QUICK_ROWS_PER_DAY : ROWS_PER_DAY;
  const retention = await runPartitionRetention(benchUrl, rowsPerDay, log, quiet);
  const rounds = await runPartitionHotPath(benchUrl, args.runs, log, quiet);
  const plans = { planWarmup: PLAN_WARMUP, planSamples: PLAN_SAMPLES };
  const tables = `${retentionTable(retention)}\n\n${hotPathTable(rounds, plans)}`;
  process.stdout.write(`\n### partitions\n\n${tables}\n`);
  if (!args.write) return;
  const days = (ms: number) => ms / 86_400_000;
  const missed = gateMisses.slice(missesBefore);
  const gate =
    args.maxLoad === undefined
      ? ''
      : missed.length === 0
        ? `; every step started with the 1-min load average below ${args.maxLoad} (the \`--max-load\` gate)`
        : `. **Measured on a busy machine**: ${missed.length} step(s) started above the \`--max-load\` gate of ${args.maxLoad} (load up to ${Math.max(...missed).toFixed(2)})`;
  await writeScenarioSection(
    PARTITIONS_HEADING,
    `${started.toISOString()} – ${new Date().toISOString()}; ${machineLine()}; PostgreSQL ${await postgresVersion(benchUrl)}; partitioned by ${PARTITIONS_PERIOD}${gate}`,
    partitionsSectionParts(retention, rounds, {
      rowsPerDay,
      seededDays: SEEDED_DAYS,
      archiveDays: days(RETENTION_POLICY.archiveMs),
      dlqDays: days(RETENTION_POLICY.dlqMs),
      metricsDays: days(RETENTION_POLICY.metricsMs),
      single: ARCHIVE_CURVE.single,
      bulk: ARCHIVE_CURVE.bulk,
      bulkChunk: ARCHIVE_CURVE.bulkChunk,
      archives: ARCHIVE_CURVE.archives,
      drain: ARCHIVE_CURVE.drain,
      queue: ARCHIVE_QUEUE,
      ...plans,
    }),
    'partitions section of bench/RESULTS.md',
  );
}

/** The heading of the soak scenario's section of RESULTS.md. */
const SOAK_HEADING = '## Soak: sustained load';

/** The soak scenario (PostgreSQL): its per-minute table, its checks, its chart and its section. */
async function soak(args: BenchArgs, benchUrl: string): Promise<void> {
  if (!args.dialects.has('postgres')) {
    log('soak: runs on PostgreSQL only (--dialects must include postgres)');
    return;
  }
  const started = new Date();
  await waitForLoad(args, log);
  const own = args.soakOwnCluster ? await startOwnCluster() : undefined;
  if (own) log(`soak: on a cluster of its own, port ${own.port} (stock settings)`);
  const url = own?.url ?? benchUrl;
  const run = await runSoak(
    url,
    {
      minutes: args.soakMinutes,
      share: 0.7,
      rate: args.soakRate,
      concurrency: 50,
      warmupMinutes: args.soakWarmupMinutes,
      archiveMs: args.soakArchiveMinutes * 60_000,
      retentionIntervalMs: 60_000,
      ...(args.soakHotStorage === undefined ? {} : { hotStorage: args.soakHotStorage }),
    },
    log,
  ).finally(() => own?.stop());
  const table = soakTable(run);
  const checks = soakChecksTable(soakChecks(run));
  process.stdout.write(`\n### soak\n\n${table}\n\n${checks}\n`);
  if (!args.write) return;
  const minutes = measured(run.minutes);
  writeFileSync(
    join(__dirname, 'soak.svg'),
    lineChartSvg({
      title: `${run.plan.minutes} minutes at ${run.rate.toLocaleString('en-US')} jobs/s`,
      xLabel: 'minute',
      yLabel: '÷ its value at minute 10',
      logX: false,
      xTicks: minutes.filter((m) => m.minute === 1 || m.minute % 10 === 0).map((m) => m.minute),
      series: soakSeries(minutes),
    }),
  );
  await writeScenarioSection(
    SOAK_HEADING,
    `${started.toISOString()} – ${new Date().toISOString()}; ${machineLine()}; PostgreSQL ${await postgresVersion(benchUrl)}`,
    [
      `One ChokaQ worker process (the defaults, concurrency ${run.plan.concurrency}, a no-op handler; retention keeps archived rows ${run.plan.archiveMs / 60_000} minute${run.plan.archiveMs === 60_000 ? '' : 's'} and runs every ${run.plan.retentionIntervalMs / 1_000} s) on a fresh schema${own ? " of a PostgreSQL cluster the bench started for the run (`--soak-own-cluster`: initdb, the server's stock settings, autovacuum on)" : ''}; a producer in the bench process enqueues in bulk every 100 ms at ${run.rate.toLocaleString('en-US')} jobs/s${run.drainRate === undefined ? ' (`--soak-rate`)' : `, ${Math.round(run.plan.share * 100)} % of the ${run.drainRate.toFixed(0)} jobs/s the same worker drained ${(20_000).toLocaleString('en-US')} jobs at first`}. ${(run.plan.warmupMinutes ?? 0) > 0 ? `The hour is measured after ${run.plan.warmupMinutes} minutes at the same rate (rows w1–w${run.plan.warmupMinutes}, not compared and not charted), in which the tables reach the size and churn they keep: retention deleting from the second minute, autovacuum passing over the Archive as well as \`jobs_hot\`. ` : ''}At each minute's end: the jobs archived during it and their enqueue → start latency (from the Archive's own timestamps), the Pending backlog, \`jobs_hot\`'s size with its indexes, its dead tuples and autovacuum runs (PostgreSQL's statistics), the Archive's live rows, the worker's peak RSS during the minute (it samples its RSS every 250 ms) and its V8 heap at the minute's end, and the CPU of the worker and its backends per 1,000 archived jobs. The checks pool the latencies of five minutes' jobs for their p99 (counts per tenth of a millisecond), rather than averaging five per-minute p99s. \`jobs_hot\`'s storage settings: ${run.schemaSettings}. The chart: [soak.svg](soak.svg).`,
      '![Sustained load, minute by minute](soak.svg)',
      table,
      checks,
    ],
    'soak section of bench/RESULTS.md and bench/soak.svg',
  );
}

/**
 * The soak chart's series: throughput, p99, `jobs_hot`'s size and the worker's RSS, each divided by
 * its value at minute 10 (the issue's reference; the last minute of a shorter run), so one axis
 * shows whether anything drifts.
 */
function soakSeries(minutes: readonly SoakMinute[]) {
  const reference = minutes.find((m) => m.minute === 10) ?? minutes[minutes.length - 1];
  const series = (name: string, f: (m: SoakMinute) => number) => ({
    name,
    points: minutes.map((m) => [m.minute, f(m) / f(reference)] as const),
  });
  return [
    series(`archived jobs/s (1 = ${reference.jobsPerSecond.toFixed(0)})`, (m) => m.jobsPerSecond),
    series(`p99 (1 = ${reference.latencyP99.toFixed(1)} ms)`, (m) => m.latencyP99),
    series(`jobs_hot with indexes (1 = ${reference.hotMb.toFixed(1)} MB)`, (m) => m.hotMb),
    series(`worker RSS (1 = ${reference.workerRssMb.toFixed(0)} MB)`, (m) => m.workerRssMb),
  ];
}

/** The heading of the scale scenario's section of RESULTS.md. */
const SCALE_HEADING = '## Scale: the hot path as the tables grow';

/**
 * The scale scenario, dialect by dialect: the claim curve (claims and a drain per backlog size),
 * then the archive curve (enqueue, archive and a drain per archive size) with the admin reads at
 * its largest size; tables, charts and the section of RESULTS.md.
 */
async function scale(args: BenchArgs, benchUrl: string): Promise<void> {
  const started = new Date();
  const points: ScalePoint[] = [];
  const archivePoints: ArchivePoint[] = [];
  const reads: AdminReadsRun[] = [];
  for (const dialect of args.dialects) {
    const sizes = args.scalePending ?? defaultScalePending(dialect, args.quick);
    await waitForLoad(args, log);
    points.push(...(await runScaleClaims(dialect, benchUrl, sizes, log)));
    const archived = args.scaleArchived ?? defaultScaleArchived(dialect, args.quick);
    if (archived.length === 0) continue;
    const curve = await runScaleArchive(dialect, benchUrl, archived, args.reads, log, () =>
      waitForLoad(args, log),
    );
    archivePoints.push(...curve.points);
    if (curve.reads) reads.push(curve.reads);
  }
  const table = scaleClaimTable(points);
  const archiveTable = archivePoints.length > 0 ? scaleArchiveTable(archivePoints) : '';
  process.stdout.write(`\n### scale\n\n${table}\n\n${archiveTable}\n`);
  for (const run of reads) process.stdout.write(`\n${readsReport(run)}\n`);
  if (!args.write) return;
  const dialects = (of: ReadonlyArray<{ dialect: BenchDialect }>) => [
    ...new Set(of.map((p) => p.dialect)),
  ];
  writeFileSync(
    join(__dirname, 'scale-claim.svg'),
    lineChartSvg({
      title: 'A claim of 50 rows as the backlog grows',
      xLabel: 'Pending rows (log scale)',
      yLabel: 'claim (ms)',
      logX: true,
      series: dialects(points).flatMap((dialect) => {
        const mine = points.filter((p) => p.dialect === dialect);
        return [
          { name: `${dialect} p50`, points: mine.map((p) => [p.pending, p.p50] as const) },
          { name: `${dialect} p95`, points: mine.map((p) => [p.pending, p.p95] as const) },
        ];
      }),
    }),
  );
  const sections = [
    "Per size, a fresh schema (PostgreSQL) or file (SQLite) seeded with that many Pending rows by `INSERT … SELECT` (the admin-reads seed: 20 queues of skewed sizes, one row in ten scheduled up to an hour ahead, three in a hundred waiting for a retry) and analysed; then 200 claims of 50 rows over every queue (60 on 10,000 rows, so the backlog stays), each timed alone (after 6 untimed), their rows archived between claims. On PostgreSQL the hot table is vacuumed every 10 claims (untimed), as autovacuum does in a steady drain. Then one worker process (ChokaQ's defaults, concurrency 50, a no-op handler of every queue) drains 20,000 jobs of the backlog (a quarter of a smaller one), timed from its start signal until the database shows them archived; two of the seeded queues have a worker budget (and one is paused), so this worker claims as a worker with a budgeted queue does, without starting ahead. The data is dropped after each size. The chart: [scale-claim.svg](scale-claim.svg).",
    '![The claim as the backlog grows](scale-claim.svg)',
    table,
  ];
  if (archivePoints.length > 0) {
    writeFileSync(
      join(__dirname, 'scale-archive.svg'),
      lineChartSvg({
        title: 'The hot path as the Archive grows',
        xLabel: 'Archived rows (log scale)',
        yLabel: 'ms',
        logX: true,
        series: dialects(archivePoints).flatMap((dialect) => {
          const mine = archivePoints.filter((p) => p.dialect === dialect);
          return [
            {
              name: `${dialect} archive of 100, p50`,
              points: mine.map((p) => [p.archived, p.archiveP50] as const),
            },
            {
              name: `${dialect} enqueue, mean`,
              points: mine.map((p) => [p.archived, 1_000 / p.enqueueSingle] as const),
            },
            {
              name: `${dialect} 1,000 jobs drained at c50`,
              points: mine.map((p) => [p.archived, 1_000_000 / p.drainJobsPerSecond] as const),
            },
          ];
        }),
      }),
    );
    sections.push(
      '### As the Archive grows',
      "Per size, a fresh schema or file seeded by the admin-reads seed with that many archived rows (spread over three days), plus 100,000 DLQ and 100,000 Pending rows, and analysed; then, on one storage in this process, 2,000 single enqueues and 20,000 bulk enqueues in calls of 1,000 into `webhooks` (a queue with no budget), 30 claims of 100 of its rows each followed by its `archiveSucceeded` timed alone, and one worker process running `webhooks` alone (so it starts ahead, as on a plain queue) draining 15,000 jobs at concurrency 50. The chart: [scale-archive.svg](scale-archive.svg) (an enqueue's mean time, an archive of 100's p50, and the time 1,000 jobs take to drain).",
      '![The hot path as the Archive grows](scale-archive.svg)',
      archiveTable,
    );
    for (const run of reads) {
      sections.push(
        `#### The admin reads beside ${run.counts.jobs_archive.toLocaleString('en-US')} archived rows (${run.dialect})`,
        `The admin-reads set of the \`admin-reads\` scenario on the largest data set above (${run.counts.jobs_dlq.toLocaleString('en-US')} DLQ, ${run.counts.jobs_hot.toLocaleString('en-US')} hot rows, ${run.sizeMb.toFixed(0)} MB), ${args.reads.repetitions} timed calls of each after one unmeasured round.`,
        readsTable(run),
        ...(run.plans.length > 0 ? [missPlans(run).join('\n')] : []),
      );
    }
  }
  await writeScenarioSection(
    SCALE_HEADING,
    `${started.toISOString()} – ${new Date().toISOString()}; ${machineLine()}; PostgreSQL ${await postgresVersion(benchUrl)}`,
    sections,
    'scale section of bench/RESULTS.md and its charts',
  );
}

/** The heading of the footprint scenario's section of RESULTS.md. */
const FOOTPRINT_HEADING = '## Footprint: what a worker holds once its modules are loaded';

/** The footprint scenario: its table on stdout and its own section of RESULTS.md. */
async function footprint(args: BenchArgs): Promise<void> {
  const started = new Date();
  const rows = runFootprint(log);
  const table = footprintTable(rows);
  process.stdout.write(`\n### footprint\n\n${table}\n`);
  if (!args.write) return;
  await writeScenarioSection(
    FOOTPRINT_HEADING,
    `${started.toISOString()}; ${machineLine()}`,
    [
      'Each row is a fresh `node` process that requires the modules named, collects garbage twice and reports its RSS (median of 5 processes). The ChokaQ rows require what the bench\'s compiled ChokaQ worker requires before it connects: its runner (the worker, the options, the storage factory) and the PostgreSQL dialect the factory loads. The rows "as on Node ≥ 21" define `navigator` first, as Node 21 and later do: on Node 20, requiring `pg` runs its Cloudflare check (`pg/lib/stream.js`), which reads the global `Response` and so loads Node\'s fetch implementation.',
      table,
    ],
    'footprint section of bench/RESULTS.md',
  );
}

/** The heading of the flows scenario's section of RESULTS.md. */
const FLOWS_HEADING = '## Flows: a fan-in of 10,000 and a 3-level flow';

/** The flows scenario, dialect by dialect; its own tables on stdout and section of RESULTS.md. */
async function flows(args: BenchArgs, benchUrl: string): Promise<void> {
  const started = new Date();
  const runs: FlowsRun[] = [];
  for (const dialect of args.dialects) {
    await waitForLoad(args, log);
    runs.push(await runFlows(dialect, benchUrl, log));
  }
  const table = flowsTable(runs);
  process.stdout.write(`\n### flows\n\n${table}\n`);
  if (args.write) {
    const loads = runs
      .map((r) => `${r.dialect} ${r.load[0].toFixed(2)} → ${r.load[1].toFixed(2)}`)
      .join(', ');
    await writeScenarioSection(
      FLOWS_HEADING,
      `${started.toISOString()} – ${new Date().toISOString()}; ${machineLine()}; PostgreSQL ${await postgresVersion(benchUrl)}; load average (1 min) ${loads}`,
      [
        `What a child's move costs when a parent waits on it, at the storage's edge in one process: three queues of ${FLOW_JOBS.toLocaleString('en-US')} children, none waited on (\`plain\`), 1,000 parents waiting on 10 each, and one parent waiting on all ${FLOW_JOBS.toLocaleString('en-US')}; claims of 50 take turns across the queues and each archive of 50 is timed. The issue's bound: a fan-in of 10,000 within 10 % of a fan-in of 10. Then a 3-level flow of ${FLOW_JOBS.toLocaleString('en-US')} jobs (9,900 leaves, 99 joins of 100, one root over the joins) enqueued in one call and drained by claims of 50, against as many plain jobs.`,
        table,
      ],
      'flows section of bench/RESULTS.md',
    );
  }
}

/** The heading of the groups scenario's section of RESULTS.md. */
const GROUPS_HEADING = '## Groups: the claim with 10,000 groups';

/** The groups scenario, dialect by dialect; its own table on stdout and section of RESULTS.md. */
async function groups(args: BenchArgs, benchUrl: string): Promise<void> {
  const started = new Date();
  const runs: GroupsRun[] = [];
  for (const dialect of args.dialects) {
    await waitForLoad(args, log);
    runs.push(await runGroups(dialect, benchUrl, log));
  }
  const table = groupsTable(runs);
  process.stdout.write(`\n### groups\n\n${table}\n`);
  if (args.write) {
    const loads = runs
      .map((r) => `${r.dialect} ${r.load[0].toFixed(2)} → ${r.load[1].toFixed(2)}`)
      .join(', ');
    await writeScenarioSection(
      GROUPS_HEADING,
      `${started.toISOString()} – ${new Date().toISOString()}; ${machineLine()}; PostgreSQL ${await postgresVersion(benchUrl)}; load average (1 min) ${loads}`,
      [
        `What a claim costs in a queue with ${GROUPS_COUNT.toLocaleString('en-US')} groups (3 Pending jobs each, a group concurrency no group reaches, so each claim visits ${GROUPS_CLAIM} groups) against a queue without groups (\`plain\`: the one-statement claim) and a queue with a \`maxWorkers\` budget (\`budgeted\`: the claim's transaction with the queue's row lock: on PostgreSQL four round trips). One claimer claims each queue, as a worker that runs only that queue does: on PostgreSQL its grouped claims after the first are one statement that takes the queue's row lock itself (docs/storage.md, "Groups in the claim"); on SQLite every claim is one \`BEGIN IMMEDIATE\`. Each claim starts ${GROUPS_CLAIM} rows and is timed alone; the queues take turns claim by claim. The issue's bound is 1.5× a queue without groups.`,
        table,
      ],
      'groups section of bench/RESULTS.md',
    );
  }
}

/**
 * Writes a scenario's own section of RESULTS.md: its heading, the command and `run` (when, where),
 * then `parts` (description, chart, table), paragraphs apart; logs `wrote the <what>`.
 */
async function writeScenarioSection(
  heading: string,
  run: string,
  parts: readonly string[],
  what: string,
): Promise<void> {
  const command = `\`npm run bench -- ${process.argv.slice(2).join(' ')}\`, ${run}.`;
  const section = [heading, command, ...parts].join('\n\n');
  await writeSection(join(__dirname, 'RESULTS.md'), heading, section);
  log(`wrote the ${what}`);
}

/** Replaces the section under `heading` (to the next `## ` heading) in RESULTS.md, or appends it. */
async function writeSection(path: string, heading: string, section: string): Promise<void> {
  const previous = existsSync(path) ? readFileSync(path, 'utf8') : '# ChokaQ benchmark results\n';
  const body = `${section.trimEnd()}\n\n`;
  const at = previous.indexOf(heading);
  if (at < 0) return writeMarkdown(path, `${previous.trimEnd()}\n\n${body}`);
  const next = previous.indexOf('\n## ', at + heading.length);
  await writeMarkdown(
    path,
    `${previous.slice(0, at)}${body}${next < 0 ? '' : previous.slice(next + 1)}`,
  );
}

/**
 * The metrics A/B: the PostgreSQL drain with metrics off, with `@opentelemetry/api` and no SDK,
 * and with an SDK registered, interleaved in one invocation (the start order rotates per run);
 * its own table on stdout and section of RESULTS.md.
 */
async function metricsAb(args: BenchArgs, benchUrl: string): Promise<void> {
  if (!args.dialects.has('postgres')) {
    log('metrics-ab runs on PostgreSQL only: skipped (--dialects has no postgres)');
    return;
  }
  const started = new Date();
  const results = new ResultSet();
  const systems = METRICS_VARIANTS.map(({ variant }) =>
    chokaqSystem('postgres', benchUrl, variant),
  );
  const z = args.sizes;
  await waitForLoad(args, log);
  for (let r = 1; r <= args.runs; r++) {
    for (const c of z.concurrency) {
      const order = systems.map((_, i) => systems[(i + r - 1) % systems.length]);
      for (const system of order) {
        const name = `drain-c${c}`;
        log(`metrics-ab ${name} run ${r}/${args.runs}: ${system.label} (load ${loadLine()})`);
        try {
          const result = await drain(system, {
            pending: z.drain,
            target: z.drain,
            processes: 1,
            concurrency: c,
            timeoutMs: args.runTimeoutMs,
          });
          results.add('postgres', name, 'jobs/s', true, system.id, result.jobsPerSecond);
          log(`  ${name}: ${result.jobsPerSecond.toFixed(0)} jobs/s`);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          log(`  ${name} FAILED for ${system.label}: ${message}`);
          results.fail('postgres', name, 'jobs/s', true, system.id, message);
        }
      }
    }
  }
  const table = metricsAbTable(results, systems);
  if (args.json) {
    for (const line of metricsAbJson(results, systems)) process.stdout.write(`${line}\n`);
  } else {
    process.stdout.write(`\n### metrics-ab, PostgreSQL\n\n${table}\n`);
  }
  if (args.write) {
    const section = metricsAbSection(table, offSpread(results, systems[0]), {
      command: `npm run bench -- ${process.argv.slice(2).join(' ')}`,
      started,
      ended: new Date(),
      machine: machineLine(),
      postgres: await postgresVersion(benchUrl),
      versions:
        `@opentelemetry/api ${packageVersion('@opentelemetry/api')}, ` +
        `@opentelemetry/sdk-metrics ${packageVersion('@opentelemetry/sdk-metrics')}, ` +
        `@opentelemetry/exporter-prometheus ${packageVersion('@opentelemetry/exporter-prometheus')}, ` +
        `pg ${packageVersion('pg')}`,
      drain: z.drain,
      runs: args.runs,
    });
    await writeMetricsAbSection(join(__dirname, 'RESULTS.md'), section);
    log('wrote the metrics A/B section of bench/RESULTS.md');
  }
}

/**
 * The scenarios over the admin-reads data set: per dialect it is seeded once, admin-reads times
 * the `ChokaQAdmin` reads on it, then (PostgreSQL only) the deck scenario loads The Deck over the
 * same rows. Each writes its own table on stdout and section of RESULTS.md.
 */
async function readScenarios(args: BenchArgs, benchUrl: string): Promise<void> {
  const started = new Date();
  const wantReads = args.scenarios.has('admin-reads');
  const wantDeck = args.scenarios.has('deck');
  const runs: AdminReadsRun[] = [];
  let deck: DeckRun | undefined;
  const period = args.partitioning;
  for (const dialect of args.dialects) {
    const deckHere = wantDeck && dialect === 'postgres';
    if (!wantReads && !deckHere) continue;
    if (period !== undefined && dialect !== 'postgres') {
      log(`${dialect} admin-reads: skipped (--partitioning is PostgreSQL's only)`);
      continue;
    }
    log(
      `${dialect} admin-reads data set${period === undefined ? '' : `, partitioned by ${period}`}: seeding (load ${loadLine()})`,
    );
    const layout = period === undefined ? undefined : seedSpansLayout(period);
    const data = await seedReadsData(dialect, benchUrl, args.reads, log, layout);
    try {
      if (wantReads) {
        log(`${dialect} admin-reads: timing (load ${loadLine()})`);
        runs.push(await runAdminReads(data, args.reads, log, () => waitForLoad(args, log)));
      }
      if (deckHere) {
        log(`${dialect} deck: the app, the live tick, Chromium (load ${loadLine()})`);
        deck = await runDeck(data, args.deck, log, () => waitForLoad(args, log));
      }
    } finally {
      await data.close();
    }
  }
  if (wantDeck && !deck) log('deck runs on PostgreSQL only: skipped (--dialects has no postgres)');
  if (args.json) {
    for (const line of adminReadsJson(runs)) process.stdout.write(`${line}\n`);
    if (deck) process.stdout.write(`${deckJson(deck)}\n`);
  } else {
    for (const run of runs)
      process.stdout.write(`\n### admin-reads, ${run.dialect}\n\n${readsReport(run)}\n`);
    if (deck) process.stdout.write(`\n### deck, postgres\n\n${deckTables(deck)}\n`);
  }
  if (!args.write) return;
  const meta = {
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`,
    started,
    ended: new Date(),
    machine: machineLine(),
    postgres: await postgresVersion(benchUrl),
  };
  if (wantReads) {
    const section = adminReadsSection(runs, {
      ...meta,
      sqlite: packageVersion('better-sqlite3'),
      sizes: args.reads,
      ...(period === undefined ? {} : { partitioning: period }),
    });
    if (period === undefined) {
      await writeAdminReadsSection(join(__dirname, 'RESULTS.md'), section);
      log('wrote the admin-reads section of bench/RESULTS.md');
    } else {
      // A section of its own, after the others: the plain data set's figures stay.
      const heading = partitionedReadsHeading(period);
      await writeSection(join(__dirname, 'RESULTS.md'), heading, section);
      log(`wrote the section "${heading.slice(3)}" of bench/RESULTS.md`);
    }
  }
  if (deck) {
    const section = deckSection(deck, {
      ...meta,
      reads: args.reads,
      deck: args.deck,
      sharedWithAdminReads: wantReads,
    });
    await writeDeckSection(join(__dirname, 'RESULTS.md'), section);
    log('wrote the deck section of bench/RESULTS.md');
  }
}

/** The throughput and latency scenarios, system by system; rewrites the suite's part of RESULTS.md. */
async function runSuite(
  args: BenchArgs,
  scenarios: readonly ScenarioName[],
  benchUrl: string,
): Promise<void> {
  const results = new ResultSet();
  const allSystems: BenchSystem[] = [];
  const startLoad = loadLine();
  const started = new Date();
  for (const dialect of [...args.dialects]) {
    const systems = systemsFor(dialect, args, benchUrl);
    allSystems.push(...systems);
    for (const scenario of scenarios) {
      await waitForLoad(args, log);
      for (let r = 1; r <= args.runs; r++) {
        // Runs interleave systems, so a load change hits every system alike.
        for (const system of systems) {
          log(`${dialect} ${scenario} run ${r}/${args.runs}: ${system.label} (load ${loadLine()})`);
          await runScenario(scenario, system, args, results, log);
        }
      }
    }
  }

  const sections: string[] = [];
  for (const dialect of args.dialects) {
    sections.push(
      `### ${dialect === 'postgres' ? 'PostgreSQL' : 'SQLite (file, WAL)'}\n\n${markdownTable(
        results,
        dialect,
        allSystems.filter((s) => s.dialect === dialect),
      )}`,
    );
  }
  if (args.json)
    for (const line of jsonLines(results, allSystems)) process.stdout.write(`${line}\n`);
  else process.stdout.write(`\n${sections.join('\n\n')}\n`);

  if (args.write) {
    const pgVersion = await postgresVersion(benchUrl);
    const settings = allSystems
      .filter((s, i, all) => all.findIndex((o) => o.id === s.id && o.dialect === s.dialect) === i)
      .map((s) => `- **${s.label}** (${s.dialect}): ${s.settings}`);
    const z = args.sizes;
    await writeResults(
      join(__dirname, 'RESULTS.md'),
      [
        '# ChokaQ benchmark results',
        '',
        '_Generated by `npm run bench' +
          (process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : '') +
          '`; do not edit above the profile section._',
        '',
        `- Run: ${started.toISOString()} → ${new Date().toISOString()}`,
        `- Machine: ${machineLine()}`,
        `- Load average (1/5/15 min): ${startLoad} at start, ${loadLine()} at end; per-row 1-min range in the last column`,
        ...loadWarning(results, args),
        `- PostgreSQL ${pgVersion} on the same host (database \`chokaq_bench\`, a fresh schema per run); SQLite via better-sqlite3 ${packageVersion('better-sqlite3')} (a fresh file per run)`,
        `- Versions: graphile-worker ${packageVersion('graphile-worker')}, pg-boss ${packageVersion('pg-boss')} (its engines field asks for Node ≥ 22.12; it ran correctly on ${process.version}), pg ${packageVersion('pg')}, typeorm ${packageVersion('typeorm')}`,
        `- ChokaQ is driven without Nest (createJobStorage + ChokaQWorker in a forked worker process), so the figures measure the engine, not the framework.`,
        `- Runs per scenario: ${args.runs}; cells are **median** (min–max). × = ChokaQ's advantage (ChokaQ ÷ peer for ↑ rows, peer ÷ ChokaQ for ↓ rows): above 1 ChokaQ is better.`,
        `- Sizes: single enqueue ${z.single} calls; bulk ${z.bulk} jobs in calls of ${z.bulkChunk}; drain ${z.drain} no-op jobs at concurrency ${z.concurrency.join(' and ')}; latency ${z.latencyJobs} jobs ${z.latencySpacingMs} ms apart to an idle worker (concurrency 10); backlog: ${z.backlogDrain} of ${z.backlog} pending drained at concurrency ${Math.max(...z.concurrency)}; two-proc: ${z.drain} jobs, two worker processes at concurrency ${Math.max(...z.concurrency)} each; worker RSS = peak RSS (maxRSS) of the worker process in the one-process drain at concurrency ${Math.max(...z.concurrency)}.`,
        '- Drain time runs from the moment the already-initialised worker processes are told to start until the database shows the last job finished (ChokaQ: archived; graphile-worker: deleted; pg-boss: state completed). Worker processes run JavaScript compiled by `tsc` before the runs (all systems alike; no TypeScript loader in the workers).',
        '',
        '## Settings',
        '',
        ...settings,
        '',
        '## Results',
        '',
        ...sections.flatMap((s) => [s, '']),
      ].join('\n'),
    );
    log('wrote bench/RESULTS.md');
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
