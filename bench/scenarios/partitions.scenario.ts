import { loadavg } from 'node:os';
import { Client } from 'pg';
import type { RetentionPolicy } from '../../libs/chokaq/src/interfaces/job.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { periodStart, type PartitionPeriod } from '../../libs/chokaq/src/storage/shared/partitions';
import { seedStatements } from '../lib/admin-reads-seed';
import type { ReadSizes } from '../lib/args';
import {
  partitionCount,
  tableBytes,
  tupleCounts,
  walBytesSince,
  walPosition,
} from '../lib/pg-partitions';
import type { EnqueuePlan, HotPathRound, Layout, RetentionRun } from '../lib/partitions-report';
import { captureStatements, type CapturedStatement } from '../lib/statement-capture';
import { percentile, sleep } from '../lib/stats';
import { ARCHIVE_QUEUE, checkFreeDisk, measureHotPath } from './scale.scenario';
import { createTarget, seedReadsData, type SeedLayout, type Target } from './reads-data';

/*
 * The `partitions` scenario (issue 31, part 3): a plain schema against one whose Archive and DLQ
 * are partitioned by day (`storage.partitioning`), side by side in one run, on PostgreSQL. What
 * retention costs either way, and what the hot path pays for the partitions a month of 'day'
 * leaves behind.
 */

type Log = (message: string) => void;

const DAY_MS = 86_400_000;

/** The period the partitioned schema is made with. */
export const PARTITIONS_PERIOD: PartitionPeriod = 'day';

/** The two layouts, measured side by side. */
const LAYOUTS: readonly Layout[] = ['plain', 'partitioned'];

/** The retention both layouts apply: the Archive 7 days, the DLQ 30, metric buckets a day. */
export const RETENTION_POLICY: RetentionPolicy = {
  archiveMs: 7 * DAY_MS,
  dlqMs: 30 * DAY_MS,
  metricsMs: DAY_MS,
};

/** Archived rows seeded per day of the retention measurement (`--quick`: {@link QUICK_ROWS_PER_DAY}). */
export const ROWS_PER_DAY = 500_000;
/** A smoke run's rows per day: seconds, not minutes. */
export const QUICK_ROWS_PER_DAY = 10_000;
/**
 * The UTC days the retention measurement fills, back from today: the day 8 days ago (wholly past
 * the Archive's 7 days, so retention removes it) and yesterday (which it keeps).
 */
export const SEEDED_DAYS = [8, 1] as const;
/** Rows per seeding statement. */
const SEED_CHUNK = 100_000;

/**
 * The retention measurement's partitioned layout: a partition for each of the last 8 days (the
 * oldest of them wholly past the retention), as the maintenance loop made them when they were
 * ahead; the DLQ's only those `ensureSchema` makes (it holds nothing here).
 */
const RETENTION_LAYOUT: SeedLayout = {
  period: PARTITIONS_PERIOD,
  archiveBackMs: SEEDED_DAYS[0] * DAY_MS,
  dlqBackMs: 0,
};

/**
 * The partitions a user of 'day' with the default retention has after a month: the Archive's
 * last 7 days, the DLQ's last 30, each with today, the 7 days ahead and the default partition.
 * The past ones are empty (what is measured is their number, not their rows).
 */
export const MONTH_LAYOUT: SeedLayout = {
  period: PARTITIONS_PERIOD,
  archiveBackMs: RETENTION_POLICY.archiveMs,
  dlqBackMs: RETENTION_POLICY.dlqMs,
};

/**
 * Part (a): per layout, a fresh schema with `rowsPerDay` archived rows on each of
 * {@link SEEDED_DAYS} (the admin-reads seed's archive rows, a day's span each), vacuumed, analysed
 * and checkpointed; then one `applyRetention(RETENTION_POLICY)` on a storage of that layout,
 * timed, with the WAL it wrote, and the Archive's size and dead tuples before and after. The
 * schema is dropped after each layout.
 */
export async function runPartitionRetention(
  benchUrl: string,
  rowsPerDay: number,
  log: Log,
  waitForQuiet: () => Promise<void>,
): Promise<RetentionRun[]> {
  const runs: RetentionRun[] = [];
  for (const layout of LAYOUTS) {
    checkFreeDisk('postgres', rowsPerDay * SEEDED_DAYS.length, log, 'partitions');
    const target = await createTarget(
      'postgres',
      benchUrl,
      layout === 'plain' ? undefined : RETENTION_LAYOUT,
    );
    try {
      const seedSeconds = await seedRetentionDays(target, layout, rowsPerDay, log);
      await waitForQuiet();
      runs.push(await timeRetention(target, layout, seedSeconds, log));
    } finally {
      await target.close();
    }
  }
  return runs;
}

/** Seeds {@link SEEDED_DAYS}, oldest first (as a live Archive is appended); seconds it took. */
async function seedRetentionDays(
  target: Target,
  layout: Layout,
  rowsPerDay: number,
  log: Log,
): Promise<number> {
  const started = performance.now();
  const today = periodStart(new Date(), 'day').getTime();
  for (const daysBack of SEEDED_DAYS) {
    const dayEnd = today - (daysBack - 1) * DAY_MS;
    // Finish times from a second or two after the day's start to a second before its end.
    const statements = seedStatements(
      'postgres',
      target.qualifier,
      {
        archived: rowsPerDay,
        dead: 0,
        pending: 0,
        chunk: SEED_CHUNK,
        archiveSpanMs: DAY_MS - 3_000,
      },
      dayEnd,
    ).filter((statement) => statement.label === 'archive');
    for (const statement of statements) await target.exec(statement.sql);
    log(
      `  partitions [${layout}]: seeded ${rowsPerDay.toLocaleString('en-US')} archived rows ` +
        `of ${new Date(dayEnd - DAY_MS).toISOString().slice(0, 10)}`,
    );
  }
  if (layout === 'partitioned') {
    // Every row in the partition of its day: none left for row-by-row retention.
    const [row] = await target.rows<{ n: string }>(
      `SELECT count(*) AS n FROM ${target.table('jobs_archive_default')}`,
    );
    if (Number(row.n) !== 0) {
      throw new Error(`partitions: ${row.n} seeded rows landed in the default partition`);
    }
  }
  const seedSeconds = (performance.now() - started) / 1_000;
  await target.analyze();
  return seedSeconds;
}

/** One timed retention pass on a seeded schema, with what it wrote and left. */
async function timeRetention(
  target: Target,
  layout: Layout,
  seedSeconds: number,
  log: Log,
): Promise<RetentionRun> {
  const archive = target.table('jobs_archive');
  const count = async () =>
    Number((await target.rows<{ n: string }>(`SELECT count(*) AS n FROM ${archive}`))[0].n);
  // The storage is opened (its schema checked, the partitions ahead made) before the clock starts.
  const storage = await createJobStorage(target.options);
  let removed: number;
  let seconds: number;
  let walBytes: number;
  const rowsBefore = await count();
  const bytesBefore = await tableBytes(target, archive);
  const archivePartitions = await partitionCount(target, archive);
  const load0 = loadavg()[0];
  try {
    const lsn = await walPosition(target);
    const started = performance.now();
    removed = (await storage.applyRetention(RETENTION_POLICY)).archive;
    seconds = (performance.now() - started) / 1_000;
    walBytes = await walBytesSince(target, lsn);
  } finally {
    await storage.close();
  }
  const load1 = loadavg()[0];
  // The pool's backends report their tuple counts as they exit; give the statistics a moment.
  await sleep(2_000);
  const run: RetentionRun = {
    layout,
    archivePartitions,
    rowsBefore,
    removed,
    rowsAfter: await count(),
    seconds,
    walBytes,
    bytesBefore,
    bytesAfter: await tableBytes(target, archive),
    deadTuples: (await tupleCounts(target, archive)).dead,
    seedSeconds,
    load: [load0, load1],
  };
  log(
    `partitions [${layout}] retention: ${removed.toLocaleString('en-US')} rows removed in ` +
      `${seconds.toFixed(2)} s, WAL ${(walBytes / 2 ** 20).toFixed(0)} MB, Archive ` +
      `${(bytesBefore / 2 ** 20).toFixed(0)} → ${(run.bytesAfter / 2 ** 20).toFixed(0)} MB, ` +
      `${run.deadTuples.toLocaleString('en-US')} dead tuples`,
  );
  return run;
}

/** No seeded jobs: the hot path runs beside empty tables (and the seed's buckets and queues). */
const EMPTY: ReadSizes = {
  archived: 0,
  dead: 0,
  pending: 0,
  deepRow: 0,
  repetitions: 0,
  chunk: SEED_CHUNK,
};

/**
 * Part (b): `rounds` rounds, each measuring both layouts on fresh schemas (the order alternating
 * from round to round, so a change of load hits both alike): the plain schema, and the one
 * partitioned as {@link MONTH_LAYOUT}; on each, the scale scenario's archive-curve hot path
 * ({@link measureHotPath}) and the plan of one single enqueue.
 */
export async function runPartitionHotPath(
  benchUrl: string,
  rounds: number,
  log: Log,
  waitForQuiet: () => Promise<void>,
): Promise<HotPathRound[]> {
  const out: HotPathRound[] = [];
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? LAYOUTS : [...LAYOUTS].reverse();
    for (const layout of order) {
      const data = await seedReadsData(
        'postgres',
        benchUrl,
        EMPTY,
        log,
        layout === 'plain' ? undefined : MONTH_LAYOUT,
      );
      try {
        await waitForQuiet();
        const load0 = loadavg()[0];
        // First, while the tables are as the timed enqueues find them (the plan cache's choice
        // between a generic and a custom plan depends on what the statistics say).
        const plan = await enqueuePlan(data.target, benchUrl);
        const hot = await measureHotPath(data, benchUrl);
        const result: HotPathRound = {
          layout,
          archivePartitions: data.partitions?.archive ?? 0,
          dlqPartitions: data.partitions?.dlq ?? 0,
          ...hot,
          plan,
          load: [load0, loadavg()[0]],
        };
        log(
          `partitions [${layout}] round ${round}/${rounds}: enqueue ${hot.enqueueSingle.toFixed(0)} / ` +
            `bulk ${hot.enqueueBulk.toFixed(0)} jobs/s, archive of 100 p50 ${hot.archiveP50.toFixed(2)} ms, ` +
            `drain c50 ${hot.drainJobsPerSecond.toFixed(0)} jobs/s; the enqueue's insert prepared ` +
            `${result.plan.executionMs.toFixed(2)} ms (${result.plan.genericPlans} of ` +
            `${PLAN_WARMUP + PLAN_SAMPLES} executions on a generic plan), ${result.plan.relationLocks} relation locks, ` +
            `planned afresh ${result.plan.planningMs.toFixed(2)} ms, ${result.plan.scans} Archive/DLQ tables scanned`,
        );
        out.push(result);
      } finally {
        await data.close();
      }
    }
  }
  return out;
}

/** Untimed executions of the prepared insert before the timed ones: the session's catalog caches
 * filled, and past the five custom plans after which PostgreSQL settles on a generic one. */
export const PLAN_WARMUP = 10;
/** Timed executions of the prepared insert. */
export const PLAN_SAMPLES = 20;

/**
 * The single enqueue's insert on its own: one `enqueue` captured on a storage of the data set, then,
 * on a session of its own, that insert run as a prepared statement as the storage runs it
 * ({@link PLAN_WARMUP} untimed executions, {@link PLAN_SAMPLES} timed: the median), the relation
 * locks one execution takes, and `EXPLAIN (ANALYZE, BUFFERS)` of it twice (the second plan's
 * planning time: a fresh plan in a session whose caches are filled). The id is in the hot table by
 * then, so every execution finds the conflict and writes nothing, after the same probes.
 */
async function enqueuePlan(target: Target, benchUrl: string): Promise<EnqueuePlan> {
  const storage = await createJobStorage(target.options);
  let insert: CapturedStatement;
  try {
    const captured = await captureStatements('postgres', () =>
      storage.enqueue({ queue: ARCHIVE_QUEUE, payload: { i: -1 } }),
    );
    const inserts = captured.filter((c) => /INSERT INTO\s+\S+\.jobs_hot/.test(c.sql));
    if (inserts.length !== 1) throw new Error(`partitions: ${inserts.length} enqueue inserts seen`);
    insert = inserts[0];
  } finally {
    await storage.close();
  }
  const client = new Client({ connectionString: benchUrl });
  await client.connect();
  try {
    const prepared = {
      name: 'bench_enqueue',
      text: insert.sql,
      values: insert.params as unknown[],
    };
    const samples: number[] = [];
    for (let i = 0; i < PLAN_WARMUP + PLAN_SAMPLES; i++) {
      const started = performance.now();
      await client.query(prepared);
      if (i >= PLAN_WARMUP) samples.push(performance.now() - started);
    }
    // How many of those executions ran a generic plan (the plan cache's choice after five).
    const [cached] = (
      await client.query<{ n: string }>(
        'SELECT generic_plans AS n FROM pg_prepared_statements WHERE name = $1',
        [prepared.name],
      )
    ).rows;
    const genericPlans = Number(cached.n);
    await client.query('BEGIN');
    await client.query(prepared);
    const { rows } = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'relation'`,
    );
    await client.query('ROLLBACK');
    const explain = async () =>
      (
        await client.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN (ANALYZE, BUFFERS) ${insert.sql}`,
          insert.params as unknown[],
        )
      ).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
    await explain();
    const plan = await explain();
    // A scan of a table names it and its alias; a bitmap's index scan names only the index. A
    // partition pruned at execution stays in the plan, as a node that never ran.
    const ran = plan
      .split('\n')
      .filter((line) => !line.includes('(never executed)'))
      .join('\n');
    const scanned = new Set(
      [...ran.matchAll(/Scan (?:using \S+ )?on (jobs_(?:archive|dlq)\w*) \w+/g)].map((m) => m[1]),
    );
    return {
      planningMs: Number(/Planning Time: ([\d.]+) ms/.exec(plan)?.[1] ?? Number.NaN),
      executionMs: percentile(
        samples.sort((x, y) => x - y),
        50,
      ),
      relationLocks: Number(rows[0].n),
      genericPlans,
      scans: scanned.size,
    };
  } finally {
    await client.end();
  }
}
