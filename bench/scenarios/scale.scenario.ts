import { statfsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import type { BenchDialect } from '../lib/args';
import { SEED_QUEUES } from '../lib/admin-reads-seed';
import { percentile } from '../lib/stats';
import { timedClaim } from '../lib/timed-claim';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { seedReadsData } from './reads-data';

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
/** Disk a Pending row takes with its indexes, generously (PostgreSQL about 0.6 KB here). */
const BYTES_PER_PENDING_ROW = 1_500;

/** One point of the claim curve. */
export interface ScalePoint {
  dialect: BenchDialect;
  pending: number;
  p50: number;
  p95: number;
  /** Rows each claim started (the mean). */
  rows: number;
  /** The seeded database's size, MB. */
  sizeMb: number;
  seedSeconds: number;
  load: [number, number];
}

/** Refuses to seed what the disk cannot hold twice over (the WAL and the indexes' builds). */
export function checkFreeDisk(dialect: BenchDialect, pending: number, log: Log): void {
  // PostgreSQL's data directory is on the same file system as the temp dir on this machine's
  // layout; the bound is generous enough to cover either.
  const stats = statfsSync(tmpdir());
  const free = stats.bavail * stats.bsize;
  const needed = 2 * pending * BYTES_PER_PENDING_ROW;
  if (free < needed) {
    throw new Error(
      `scale [${dialect}]: ${pending.toLocaleString('en-US')} pending rows need about ` +
        `${(needed / 1e9).toFixed(1)} GB free, and ${(free / 1e9).toFixed(1)} GB are`,
    );
  }
  log(
    `scale [${dialect}]: ${(free / 1e9).toFixed(0)} GB free, about ${(needed / 2e9).toFixed(1)} GB needed`,
  );
}

/**
 * The `scale` scenario, its claim curve (issue 31, part 1): what a claim costs as the backlog
 * grows. For each size, a fresh schema (PostgreSQL) or file (SQLite) is seeded with that many
 * Pending rows by `INSERT … SELECT` (the admin-reads seed: 20 queues of skewed sizes, one row in
 * ten scheduled up to an hour ahead, three in a hundred waiting for a retry), analysed, and then
 * claimed from: up to 200 claims of {@link CLAIM} rows ({@link claimsFor}) over every queue, each
 * timed alone, its rows archived between claims (not timed). On PostgreSQL the hot table is vacuumed every 10
 * claims (untimed), as autovacuum keeps up in a steady drain. The data is dropped after each size.
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
      const sorted = samples.sort((a, b) => a - b);
      const point: ScalePoint = {
        dialect,
        pending,
        p50: percentile(sorted, 50),
        p95: percentile(sorted, 95),
        rows: rows / claims,
        sizeMb: data.sizeMb,
        seedSeconds: data.seedSeconds,
        load: [load0, loadavg()[0]],
      };
      log(
        `scale [${dialect}] ${pending.toLocaleString('en-US')} pending: claim p50 ` +
          `${point.p50.toFixed(2)} ms, p95 ${point.p95.toFixed(2)} ms (${point.rows} rows)`,
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
    '| dialect | pending rows | database (MB) | seeded in (s) | rows per claim | claim p50 (ms) | claim p95 (ms) | p50 ÷ smallest | load 1m |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const p of points) {
    const first = points.find((q) => q.dialect === p.dialect)!;
    lines.push(
      `| ${p.dialect} | ${p.pending.toLocaleString('en-US')} | ${p.sizeMb.toFixed(0)} | ${p.seedSeconds.toFixed(0)} | ${p.rows.toFixed(0)} | ` +
        `${p.p50.toFixed(2)} | ${p.p95.toFixed(2)} | ${(p.p50 / first.p50).toFixed(2)}× | ${p.load[0].toFixed(1)}–${p.load[1].toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}
