import { statfsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import type { BenchDialect, ReadSizes } from '../lib/args';
import type { AdminReadsRun } from '../lib/admin-reads-report';
import { SEED_QUEUES } from '../lib/admin-reads-seed';
import { percentile, sleep } from '../lib/stats';
import { timedClaim } from '../lib/timed-claim';
import { WorkerProcess } from '../lib/worker-process';
import type { WorkerConfig } from '../worker/protocol';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { runAdminReads } from './admin-reads.scenario';
import { awaitDrained } from './drain.scenario';
import { callRate, chunked } from './enqueue.scenario';
import { seedReadsData, type ReadsData } from './reads-data';

type Log = (message: string) => void;

/** Rows each claim starts: a worker with 50 free slots. */
const CLAIM = 50;
/** Unmeasured claims before the timed ones. */
const WARMUP = 6;
/**
 * Timed claims per size (after {@link WARMUP} unmeasured ones): 200, or fewer on a backlog so
 * small that 220 claims of 50 would drain more than a third of it (10,000 rows: 60 claims).
 */
const claimsFor = (pending: number): number =>
  Math.min(200, Math.floor(pending / 3 / CLAIM) - WARMUP);
/** Disk a seeded row takes with its indexes, generously (PostgreSQL about 0.6 KB a Pending row, 1 KB an archived one). */
const BYTES_PER_ROW = 1_500;
/** The concurrency of the curves' drains (the drain scenario's larger one). */
const DRAIN_CONCURRENCY = 50;
/** Jobs a drain of the claim curve runs: 20,000, or a quarter of a smaller backlog. */
const drainJobsFor = (pending: number): number => Math.min(20_000, Math.floor(pending / 4));
/** The archive curve, per size: single enqueues, bulk enqueues (in calls of 1,000), archives of 100 timed, drained jobs. */
export const ARCHIVE_CURVE = {
  single: 2_000,
  bulk: 20_000,
  bulkChunk: 1_000,
  archives: 30,
  batch: 100,
  drain: 15_000,
};
/**
 * The archive curve's queue: a seeded queue with no budget, rate limit or pause, so its drain
 * starts ahead as a plain queue does and measures what the Archive's size costs.
 */
export const ARCHIVE_QUEUE = 'webhooks';
/** Bound of one drain of a curve. */
const DRAIN_TIMEOUT_MS = 300_000;

/** One point of the claim curve. */
export interface ScalePoint {
  dialect: BenchDialect;
  pending: number;
  p50: number;
  p95: number;
  /** Rows each claim started (the mean). */
  rows: number;
  /** A c50 drain of {@link drainJobsFor} jobs of the backlog, by one worker process. */
  drainJobs: number;
  drainJobsPerSecond: number;
  /** The seeded database's size, MB. */
  sizeMb: number;
  seedSeconds: number;
  load: [number, number];
}

/** Refuses to seed what the disk cannot hold twice over (the WAL and the indexes' builds). */
export function checkFreeDisk(
  dialect: BenchDialect,
  rows: number,
  log: Log,
  scenario = 'scale',
): void {
  // PostgreSQL's data directory is on the same file system as the temp dir on this machine's
  // layout; the bound is generous enough to cover either.
  const stats = statfsSync(tmpdir());
  const free = stats.bavail * stats.bsize;
  const needed = 2 * rows * BYTES_PER_ROW;
  if (free < needed) {
    throw new Error(
      `${scenario} [${dialect}]: ${rows.toLocaleString('en-US')} rows need about ` +
        `${(needed / 1e9).toFixed(1)} GB free, and ${(free / 1e9).toFixed(1)} GB are`,
    );
  }
  log(
    `${scenario} [${dialect}]: ${(free / 1e9).toFixed(0)} GB free, about ${(needed / 2e9).toFixed(1)} GB needed`,
  );
}

/**
 * The `scale` scenario, its claim curve (issue 31, part 1): what a claim costs as the backlog
 * grows. For each size, a fresh schema (PostgreSQL) or file (SQLite) is seeded with that many
 * Pending rows by `INSERT … SELECT` (the admin-reads seed: 20 queues of skewed sizes, one row in
 * ten scheduled up to an hour ahead, three in a hundred waiting for a retry), analysed, and then
 * claimed from: up to 200 claims of {@link CLAIM} rows ({@link claimsFor}) over every queue, each
 * timed alone, its rows archived between claims (not timed). On PostgreSQL the hot table is vacuumed every 10
 * claims (untimed), as autovacuum keeps up in a steady drain. Then one worker process drains
 * {@link drainJobsFor} jobs of the backlog at concurrency 50 ({@link drainSeeded}). The data is
 * dropped after each size.
 */
export async function runScaleClaims(
  dialect: BenchDialect,
  benchUrl: string,
  sizes: readonly number[],
  log: Log,
): Promise<ScalePoint[]> {
  const points: ScalePoint[] = [];
  for (const pending of sizes) {
    checkFreeDisk(dialect, pending, log);
    log(`scale [${dialect}]: seeding ${pending.toLocaleString('en-US')} pending rows`);
    const data = await seedReadsData(
      dialect,
      benchUrl,
      { archived: 0, dead: 0, pending, deepRow: 0, repetitions: 0, chunk: 250_000 },
      log,
    );
    try {
      const storage = await createJobStorage(data.target.options);
      const samples: number[] = [];
      const claims = claimsFor(pending);
      let rows = 0;
      const workerId = `bench-scale:${process.pid}`;
      const handled = { queues: [...SEED_QUEUES], types: [] };
      const load0 = loadavg()[0];
      try {
        for (let i = 0; i < WARMUP + claims; i++) {
          if (dialect === 'postgres' && i % 10 === 0) {
            await data.target.exec(`VACUUM ${data.target.table('jobs_hot')}`);
          }
          const claim = await timedClaim(storage, workerId, CLAIM, handled, []);
          if (i >= WARMUP) {
            samples.push(claim.ms);
            rows += claim.rows;
          }
        }
      } finally {
        await storage.close();
      }
      const drainJobs = drainJobsFor(pending);
      const drainJobsPerSecond = await drainSeeded(data, benchUrl, drainJobs);
      const sorted = samples.sort((a, b) => a - b);
      const point: ScalePoint = {
        dialect,
        pending,
        p50: percentile(sorted, 50),
        p95: percentile(sorted, 95),
        rows: rows / claims,
        drainJobs,
        drainJobsPerSecond,
        sizeMb: data.sizeMb,
        seedSeconds: data.seedSeconds,
        load: [load0, loadavg()[0]],
      };
      log(
        `scale [${dialect}] ${pending.toLocaleString('en-US')} pending: claim p50 ` +
          `${point.p50.toFixed(2)} ms, p95 ${point.p95.toFixed(2)} ms (${point.rows} rows); ` +
          `drain c${DRAIN_CONCURRENCY} ${drainJobsPerSecond.toFixed(0)} jobs/s`,
      );
      points.push(point);
    } finally {
      await data.close();
    }
  }
  return points;
}

/** The claim curve as a table: per dialect and size, p50/p95 and p50 against the smallest size. */
export function scaleClaimTable(points: readonly ScalePoint[]): string {
  const lines = [
    '| dialect | pending rows | database (MB) | seeded in (s) | rows per claim | claim p50 (ms) | claim p95 (ms) | p50 ÷ smallest | drain c50 (jobs/s) | drain ÷ smallest | load 1m |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const p of points) {
    const first = points.find((q) => q.dialect === p.dialect)!;
    lines.push(
      `| ${p.dialect} | ${p.pending.toLocaleString('en-US')} | ${p.sizeMb.toFixed(0)} | ${p.seedSeconds.toFixed(0)} | ${p.rows.toFixed(0)} | ` +
        `${p.p50.toFixed(2)} | ${p.p95.toFixed(2)} | ${(p.p50 / first.p50).toFixed(2)}× | ` +
        `${p.drainJobsPerSecond.toFixed(0)} (${p.drainJobs.toLocaleString('en-US')} jobs) | ${(p.drainJobsPerSecond / first.drainJobsPerSecond).toFixed(2)}× | ` +
        `${p.load[0].toFixed(1)}–${p.load[1].toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}

/**
 * One worker process (ChokaQ's defaults, concurrency {@link DRAIN_CONCURRENCY}, a no-op handler of
 * every seeded queue) drains `jobs` jobs of a seeded data set; jobs per second, timed as the drain
 * scenario times a drain: from the start signal to the already-initialised worker until the
 * database shows that many more rows archived. The database is asked only once the handler has
 * run them all, and it counts the rows archived after the newest archived row of before the drain
 * (a range of the archive's finish-time index, whatever the archive's size).
 */
export async function drainSeeded(
  data: ReadsData,
  benchUrl: string,
  jobs: number,
  queues: readonly string[] = SEED_QUEUES,
): Promise<number> {
  const { target } = data;
  // The seeded target's own options: a schema on PostgreSQL, a file and a table prefix on SQLite.
  const options = target.options as {
    schema: string;
    database?: string;
    partitioning?: WorkerConfig['partitioning'];
  };
  const config: WorkerConfig = {
    kind: 'chokaq',
    variant: 'default',
    dialect: data.dialect,
    schema: options.schema,
    ...(options.partitioning === undefined ? {} : { partitioning: options.partitioning }),
    ...(data.dialect === 'postgres' ? { url: benchUrl } : { file: options.database }),
    queue: queues[0],
    queues: [...queues],
    concurrency: DRAIN_CONCURRENCY,
  };
  const archive = target.table('jobs_archive');
  const [{ newest }] = await target.rows<{ newest: unknown }>(
    `SELECT max(finished_at_utc) AS newest FROM ${archive}`,
  );
  const archivedSince = async (): Promise<number> => {
    const [row] =
      newest === null
        ? await target.rows<{ n: number | string }>(`SELECT count(*) AS n FROM ${archive}`)
        : await target.rows<{ n: number | string }>(
            `SELECT count(*) AS n FROM ${archive} WHERE finished_at_utc > ${data.dialect === 'postgres' ? '$1' : '?'}`,
            [newest],
          );
    return Number(row.n);
  };
  const worker = WorkerProcess.fork(config);
  try {
    await worker.waitReady(120_000);
    await sleep(200); // let the just-forked process settle before the clock starts
    const started = performance.now();
    worker.start();
    await awaitDrained([worker], jobs, archivedSince, Date.now() + DRAIN_TIMEOUT_MS, 'scale');
    const seconds = (performance.now() - started) / 1_000;
    await worker.stop(40_000);
    return jobs / seconds;
  } finally {
    worker.kill();
  }
}

/** What the hot path did on one seeded data set ({@link measureHotPath}). */
export interface HotPath {
  /** Single enqueues, one call after another. */
  enqueueSingle: number;
  /** Bulk enqueues in calls of {@link ARCHIVE_CURVE}.bulkChunk. */
  enqueueBulk: number;
  /** An `archiveSucceeded` of {@link ARCHIVE_CURVE}.batch started rows, timed alone (ms). */
  archiveP50: number;
  archiveP95: number;
  drainJobsPerSecond: number;
}

/** One point of the archive curve: what the hot path costs beside an Archive of `archived` rows. */
export interface ArchivePoint extends HotPath {
  dialect: BenchDialect;
  archived: number;
  sizeMb: number;
  seedSeconds: number;
  load: [number, number];
}

/**
 * The hot path on a seeded data set, as the archive curve measures it ({@link ARCHIVE_CURVE}, in
 * {@link ARCHIVE_QUEUE}): on one storage in this process, single enqueues, bulk enqueues, and claims
 * of 100 each followed by a timed `archiveSucceeded`; then a c50 drain by one worker process
 * ({@link drainSeeded}) of jobs those enqueues left. The partitions scenario measures the same
 * beside a partitioned Archive.
 */
export async function measureHotPath(data: ReadsData, benchUrl: string): Promise<HotPath> {
  const storage = await createJobStorage(data.target.options);
  let hot: HotPath;
  try {
    const queue = ARCHIVE_QUEUE;
    const enqueueSingle = await callRate(ARCHIVE_CURVE.single, ARCHIVE_CURVE.single, (i) =>
      storage.enqueue({ queue, payload: { i } }),
    );
    const batches = chunked(ARCHIVE_CURVE.bulk, ARCHIVE_CURVE.bulkChunk).map((batch) =>
      batch.map((payload) => ({ queue, payload })),
    );
    const enqueueBulk = await callRate(ARCHIVE_CURVE.bulk, batches.length, (k) =>
      storage.enqueueMany(batches[k]),
    );
    const handled = { queues: [queue], types: [] };
    const workerId = `bench-scale:${process.pid}`;
    const archives: number[] = [];
    for (let i = 0; i < ARCHIVE_CURVE.archives; i++) {
      const claim = await timedClaim(storage, workerId, ARCHIVE_CURVE.batch, handled, []);
      archives.push(claim.archiveMs);
    }
    archives.sort((a, b) => a - b);
    hot = {
      enqueueSingle,
      enqueueBulk,
      archiveP50: percentile(archives, 50),
      archiveP95: percentile(archives, 95),
      drainJobsPerSecond: 0,
    };
  } finally {
    await storage.close();
  }
  hot.drainJobsPerSecond = await drainSeeded(data, benchUrl, ARCHIVE_CURVE.drain, [ARCHIVE_QUEUE]);
  return hot;
}

/**
 * The `scale` scenario's archive curve (issue 31, part 1): what the hot path costs as the Archive
 * grows. For each size, a fresh schema or file seeded by the admin-reads seed with that many
 * archived rows (and `reads`' DLQ and Pending rows), analysed; then {@link measureHotPath}. At the
 * largest size the admin-reads set runs on the same data (`runAdminReads`). The data is dropped
 * after each size.
 */
export async function runScaleArchive(
  dialect: BenchDialect,
  benchUrl: string,
  sizes: readonly number[],
  reads: ReadSizes,
  log: Log,
  waitForQuiet: () => Promise<void>,
): Promise<{ points: ArchivePoint[]; reads?: AdminReadsRun }> {
  const points: ArchivePoint[] = [];
  let readsRun: AdminReadsRun | undefined;
  const largest = Math.max(...sizes);
  for (const archived of sizes) {
    checkFreeDisk(dialect, archived + reads.dead + reads.pending, log);
    log(`scale [${dialect}]: seeding ${archived.toLocaleString('en-US')} archived rows`);
    const data = await seedReadsData(dialect, benchUrl, { ...reads, archived }, log);
    try {
      await waitForQuiet();
      const load0 = loadavg()[0];
      const point: ArchivePoint = {
        dialect,
        archived,
        sizeMb: data.sizeMb,
        seedSeconds: data.seedSeconds,
        ...(await measureHotPath(data, benchUrl)),
        load: [load0, 0],
      };
      point.load[1] = loadavg()[0];
      log(
        `scale [${dialect}] ${archived.toLocaleString('en-US')} archived: enqueue ` +
          `${point.enqueueSingle.toFixed(0)} / bulk ${point.enqueueBulk.toFixed(0)} jobs/s, archive of ` +
          `${ARCHIVE_CURVE.batch} p50 ${point.archiveP50.toFixed(2)} ms, drain c${DRAIN_CONCURRENCY} ` +
          `${point.drainJobsPerSecond.toFixed(0)} jobs/s`,
      );
      points.push(point);
      if (archived === largest)
        readsRun = await runAdminReads(data, { ...reads, archived }, log, waitForQuiet);
    } finally {
      await data.close();
    }
  }
  return { points, reads: readsRun };
}

/** The archive curve as a table, per dialect and size, each figure also against the smallest size. */
export function scaleArchiveTable(points: readonly ArchivePoint[]): string {
  const lines = [
    `| dialect | archived rows | database (MB) | seeded in (s) | enqueue (jobs/s) | bulk enqueue (jobs/s) | archive of ${ARCHIVE_CURVE.batch} p50 (ms) | p95 (ms) | drain c50 (jobs/s) | ÷ smallest (enqueue / bulk / archive p50 / drain) | load 1m |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|',
  ];
  for (const p of points) {
    const f = points.find((q) => q.dialect === p.dialect)!;
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
    lines.push(
      `| ${p.dialect} | ${p.archived.toLocaleString('en-US')} | ${p.sizeMb.toFixed(0)} | ${p.seedSeconds.toFixed(0)} | ` +
        `${p.enqueueSingle.toFixed(0)} | ${p.enqueueBulk.toFixed(0)} | ${p.archiveP50.toFixed(2)} | ${p.archiveP95.toFixed(2)} | ` +
        `${p.drainJobsPerSecond.toFixed(0)} | ${ratio(p.enqueueSingle, f.enqueueSingle)} / ${ratio(p.enqueueBulk, f.enqueueBulk)} / ` +
        `${ratio(p.archiveP50, f.archiveP50)} / ${ratio(p.drainJobsPerSecond, f.drainJobsPerSecond)} | ` +
        `${p.load[0].toFixed(1)}–${p.load[1].toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}
