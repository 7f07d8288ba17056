/**
 * The chaos suite's short soak (issue 31, part 2): producers enqueue at a steady rate while worker
 * processes drain and their retention runs on a short schedule, then it stops producing, waits
 * (bounded) for the hot table to empty, and checks that every job ran exactly once and was counted
 * once, while retention removed finished rows under the load. Per window (a sixth of the run, at
 * least 5 s) it records what the bench's hour-long `soak` scenario records per minute, so a run
 * can be read for drift: jobs archived per second, the backlog, the hot table's size (PostgreSQL),
 * the Archive's rows, the workers' RSS. Those figures are printed, never asserted: speed and memory
 * are the bench's to measure (`npm run bench -- --scenarios=soak`); this run is about what must
 * hold whatever the speed.
 *
 * Entry point: `npm run chaos -- --soak --seconds 60 [--dialect postgres|sqlite] [--workers K]
 * [--rate N]` (scripts/chaos/run.ts). Prints `SOAK SUMMARY {json}`; exits non-zero on a violation.
 */
import { readFileSync } from 'node:fs';
import { MAX_ENQUEUE_MANY } from '../../../libs/chokaq/src/validation/limits';
import type { ChokaQModuleOptions, StorageOptions } from '../../../libs/chokaq/src';
import { flagValue } from './chaos-runner';
import {
  FaultDatabase,
  FaultWorker,
  killAllFaultWorkers,
  openFaultDatabase,
  startFaultWorker,
} from '../support/fault-processes';
import { waitFor } from '../../support/wait-for';

/** What a soak runs. */
export interface SoakOptions {
  seconds: number;
  dialect: 'postgres' | 'sqlite';
  workers: number;
  /** Jobs per second the producer enqueues. */
  rate: number;
}

/** One window of the run, measured at its end. */
export interface SoakWindow {
  /** Seconds since production began. */
  at: number;
  produced: number;
  /** Jobs archived during the window, per second (`SucceededTotal`'s growth). */
  jobsPerSecond: number;
  /** Pending rows at the window's end. */
  backlog: number;
  /** Rows in the Archive: what retention keeps it at. */
  archiveRows: number;
  /** `jobs_hot` with its indexes, MB (PostgreSQL; null on SQLite). */
  hotMb: number | null;
  /** The workers' resident memory, summed, MB (null where /proc cannot tell). */
  workersRssMb: number | null;
}

export interface SoakSummary {
  dialect: string;
  seconds: number;
  workers: number;
  rate: number;
  jobs: number;
  /** Jobs archived (`SucceededTotal`). */
  succeeded: number;
  /** Archive rows retention deleted during the run (archived, no longer in the Archive). */
  retained: number;
  windows: SoakWindow[];
  drainMs: number;
  violations: string[];
}

/** What the soak's checks read: ChokaQ's tables and the handlers' runs table. */
export type SoakDb = Pick<FaultDatabase, 'table' | 'sql' | 'runs' | 'record'>;

const QUEUE = 'chaos.a';
/** The producer's step: each tick enqueues what the rate asks for since production began. */
const TICK_MS = 100;
/** Archived rows live this long; retention runs every {@link RETENTION_INTERVAL_MS}. */
const ARCHIVE_MS = 3_000;
const RETENTION_INTERVAL_MS = 1_000;

function say(line: string): void {
  process.stdout.write(`[soak] ${line}\n`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Options of `npm run chaos -- --soak …`. */
export function parseSoakArgs(argv: readonly string[]): SoakOptions {
  const get = (name: string) => flagValue(argv, name);
  const seconds = Number(get('seconds') ?? 60);
  const dialect = (get('dialect') ?? 'postgres') as SoakOptions['dialect'];
  const workers = Number(get('workers') ?? 2);
  const rate = Number(get('rate') ?? 300);
  if (
    !(seconds > 0) ||
    !['postgres', 'sqlite'].includes(dialect) ||
    !(workers >= 1) ||
    !(rate > 0)
  ) {
    throw new Error(
      'usage: npm run chaos -- --soak [--seconds N] [--dialect postgres|sqlite] [--workers K] [--rate N]',
    );
  }
  return { seconds, dialect, workers: Math.floor(workers), rate };
}

function workerOptions(storage: StorageOptions): ChokaQModuleOptions {
  return {
    storage,
    worker: { concurrency: 10, pollIntervalMs: 50 },
    retention: { archiveMs: ARCHIVE_MS, intervalMs: RETENTION_INTERVAL_MS },
  };
}

/** Resident memory of a process in MB, from /proc (Linux); null where that cannot be read. */
function rssMb(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+) kB/.exec(status);
    return kb ? Number(kb[1]) / 1024 : null;
  } catch {
    return null;
  }
}

async function count(db: SoakDb, sql: string): Promise<number> {
  const [row] = await db.sql<{ n: number | string | null }>(sql);
  return Number(row?.n ?? 0);
}

async function succeededTotal(db: SoakDb): Promise<number> {
  return count(db, `SELECT SUM(succeeded_total) AS n FROM ${db.table('stats')}`);
}

async function measure(
  db: FaultDatabase,
  workers: readonly FaultWorker[],
  at: number,
  produced: number,
  archivedBefore: number,
  windowSeconds: number,
): Promise<{ window: SoakWindow; archived: number }> {
  const archived = await succeededTotal(db);
  const hotMb =
    db.dialect === 'postgres'
      ? (await count(db, `SELECT pg_total_relation_size('${db.table('hot')}') AS n`)) / 2 ** 20
      : null;
  const rss = workers.map((w) => rssMb(w.child.pid));
  return {
    archived,
    window: {
      at,
      produced,
      jobsPerSecond: (archived - archivedBefore) / windowSeconds,
      backlog: await count(db, `SELECT COUNT(*) AS n FROM ${db.table('hot')} WHERE status = 0`),
      archiveRows: await count(db, `SELECT COUNT(*) AS n FROM ${db.table('archive')}`),
      hotMb,
      workersRssMb: rss.some((r) => r === null) ? null : rss.reduce<number>((a, r) => a + r!, 0),
    },
  };
}

export async function runSoak(o: SoakOptions): Promise<SoakSummary> {
  const db = await openFaultDatabase(o.dialect);
  const workers: FaultWorker[] = [];
  const summary: SoakSummary = {
    dialect: o.dialect,
    seconds: o.seconds,
    workers: o.workers,
    rate: o.rate,
    jobs: 0,
    succeeded: 0,
    retained: 0,
    windows: [],
    drainMs: 0,
    violations: [],
  };
  try {
    workers.push(
      ...(await Promise.all(
        Array.from({ length: o.workers }, (_, slot) =>
          startFaultWorker(
            {
              ...db.record,
              workerId: `soak-${slot}`,
              options: workerOptions(db.options),
              logLevels: ['error'],
            },
            { timeoutMs: 60_000 },
          ),
        ),
      )),
    );
    say(`${o.workers} workers up on ${o.dialect}; producing ${o.rate} jobs/s for ${o.seconds} s`);

    const accepted: string[] = [];
    const windowMs = Math.max(5_000, (o.seconds * 1_000) / 6);
    const started = Date.now();
    const deadline = started + o.seconds * 1_000;
    let nextWindow = started + windowMs;
    let archivedBefore = 0;
    while (Date.now() < deadline) {
      const due = Math.min(
        Math.floor((o.rate * (Date.now() - started)) / 1_000) - accepted.length,
        MAX_ENQUEUE_MANY,
      );
      if (due > 0) {
        const results = await db.storageHere.enqueueMany(
          Array.from({ length: due }, () => ({ queue: QUEUE, payload: {} })),
        );
        accepted.push(...results.map((r) => r.id));
      }
      if (Date.now() >= nextWindow) {
        const at = Math.round((Date.now() - started) / 1_000);
        const seconds = windowMs / 1_000;
        const m = await measure(db, workers, at, accepted.length, archivedBefore, seconds);
        archivedBefore = m.archived;
        summary.windows.push(m.window);
        say(describe(m.window));
        nextWindow += windowMs;
      }
      await sleep(TICK_MS);
    }
    say(`producing stopped: ${accepted.length} jobs; draining`);

    const drainStart = Date.now();
    const drainBound = Number(process.env.CHOKAQ_CHAOS_DRAIN_MS ?? 90_000);
    await waitFor(
      'the hot table to drain',
      async () => (await count(db, `SELECT COUNT(*) AS n FROM ${db.table('hot')}`)) === 0,
      { timeoutMs: drainBound, intervalMs: 200 },
    ).catch(() => summary.violations.push(`hot table not drained after ${drainBound} ms`));
    summary.drainMs = Date.now() - drainStart;
    await Promise.all(workers.map((w) => w.stop(10_000)));
    summary.jobs = accepted.length;
    await checkSoak(db, summary, accepted);
  } catch (error) {
    summary.violations.push(`soak run aborted: ${(error as Error)?.stack ?? String(error)}`);
  } finally {
    await killAllFaultWorkers();
    await db.close().catch(() => undefined);
  }
  return summary;
}

/**
 * What must hold after a soak, whatever its speed: every accepted job started exactly once (the
 * handlers' runs table) and was counted archived exactly once, nothing failed, and retention
 * removed archived rows while the load ran (the Archive holds fewer rows than were archived) without
 * removing a job that had not finished (every job that is gone from the Archive had a successful
 * run).
 */
export async function checkSoak(
  db: SoakDb,
  summary: SoakSummary,
  accepted: readonly string[],
): Promise<void> {
  const v = summary.violations;
  summary.succeeded = await succeededTotal(db);
  const dlq = await count(db, `SELECT COUNT(*) AS n FROM ${db.table('dlq')}`);
  const hot = await count(db, `SELECT COUNT(*) AS n FROM ${db.table('hot')}`);
  const archive = await count(db, `SELECT COUNT(*) AS n FROM ${db.table('archive')}`);
  summary.retained = summary.succeeded - archive;
  if (hot > 0) v.push(`${hot} job(s) left in the hot table`);
  if (dlq > 0) v.push(`${dlq} job(s) in the DLQ: nothing in a soak fails`);
  if (summary.succeeded !== accepted.length) {
    v.push(`SucceededTotal ${summary.succeeded} ≠ ${accepted.length} jobs enqueued`);
  }
  if (summary.retained <= 0) v.push('retention removed no archived row during the run');
  const runs = await db.runs<{ job_id: string; phase: string; n: number | string }>(
    `SELECT job_id, phase, COUNT(*) AS n FROM ${db.record.runsTable} GROUP BY job_id, phase`,
  );
  const starts = new Map<string, number>();
  const oks = new Set<string>();
  for (const r of runs) {
    if (r.phase === 'start') starts.set(r.job_id, Number(r.n));
    if (r.phase === 'ok') oks.add(r.job_id);
  }
  const twice = accepted.filter((id) => (starts.get(id) ?? 0) > 1);
  if (twice.length) v.push(`${twice.length} job(s) started more than once: ${twice.slice(0, 5)}`);
  const never = accepted.filter((id) => !oks.has(id));
  if (never.length) v.push(`${never.length} job(s) never ran to success: ${never.slice(0, 5)}`);
}

function describe(w: SoakWindow): string {
  const mb = (x: number | null) => (x === null ? '—' : `${x.toFixed(1)} MB`);
  return (
    `${w.at} s: ${w.produced} produced, ${w.jobsPerSecond.toFixed(0)} jobs/s archived, ` +
    `backlog ${w.backlog}, archive ${w.archiveRows} rows, hot ${mb(w.hotMb)}, ` +
    `workers ${mb(w.workersRssMb)}`
  );
}

/** CLI: runs, prints the summary, exits 1 on any violation. */
export async function soakMain(argv: readonly string[]): Promise<void> {
  const summary = await runSoak(parseSoakArgs(argv));
  say(
    `${summary.jobs} jobs, ${summary.succeeded} archived, ${summary.retained} removed by ` +
      `retention, violations ${summary.violations.length}`,
  );
  for (const violation of summary.violations.slice(0, 50)) say(`VIOLATION ${violation}`);
  process.stdout.write(`SOAK SUMMARY ${JSON.stringify(summary)}\n`);
  process.exitCode = summary.violations.length > 0 ? 1 : 0;
}
