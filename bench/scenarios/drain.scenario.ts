import { randomBytes } from 'node:crypto';
import { backendPids } from '../lib/pg-admin';
import { cpuBetween, cpuSnapshot } from '../lib/proc-cpu';
import { pollUntil, sleep } from '../lib/stats';
import { WorkerProcess } from '../lib/worker-process';
import type { BenchSystem, SystemRun } from '../systems/bench-system';
import type { WorkerConfig, WorkerReport } from '../worker/protocol';
import { chunked } from './enqueue.scenario';

/** One drain: pre-fill `pending` jobs, start `processes` workers, time until `target` are finished. */
export interface DrainPlan {
  pending: number;
  target: number;
  processes: number;
  concurrency: number;
  timeoutMs: number;
  /** Extra node flags of the worker processes (profile mode). */
  execArgv?: string[];
  /** Time storage operations and SQL statements in the workers (profile mode). */
  timeStatements?: boolean;
  /** Sample the workers' allocations (profile mode). */
  sampleAllocations?: boolean;
  /** ChokaQ worker options other than the defaults (profile experiments). */
  chokaqWorker?: WorkerConfig['chokaqWorker'];
  /** Measure the drain's CPU, round trips and transactions per 1,000 jobs ({@link DrainCost}). */
  measureCost?: boolean;
  /**
   * Run retention passes (`SystemRun.retentionPass`) one after another in this process while the
   * workers drain, as a maintenance loop with work to do would: the drain is then over when the
   * rows archived plus the rows retention deleted reach the target.
   */
  retention?: boolean;
}

/** What retention did during a drain ({@link DrainPlan.retention}). */
export interface RetentionDuringDrain {
  /** Archive rows deleted while the drain ran, per second of the drain. */
  deletedPerSecond: number;
  /** Archive rows still there when the drain was over (what retention had not caught up with). */
  archiveLeft: number;
  passes: number;
}

/**
 * The cost of one drain per 1,000 jobs, between the start signal and the moment the database
 * shows the target finished. CPU from `/proc/<pid>/stat`: the worker processes, and the
 * PostgreSQL backends serving them (found by the application name the drain gives their
 * connections). Round trips and transactions as the workers' `pg` clients sent them.
 */
export interface DrainCost {
  workerCpuMsPer1k: number;
  /** PostgreSQL only. */
  dbCpuMsPer1k?: number;
  roundTripsPer1k?: number;
  transactionsPer1k?: number;
  /** Backends seen at the start that had gone by the end (their CPU after the start is lost). */
  backendsLost?: number;
}

/** What one drain measured. */
export interface DrainResult {
  jobsPerSecond: number;
  seconds: number;
  reports: WorkerReport[];
  cost?: DrainCost;
  retention?: RetentionDuringDrain;
}

const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 40_000;

/** Fills a run with `n` jobs through the system's own bulk API (not timed). */
export async function prefill(run: SystemRun, n: number): Promise<void> {
  for (const batch of chunked(n, run.prefillChunk)) await run.enqueueMany(batch);
}

/**
 * Scenarios (b), (d), (e), (f). The clock starts when the already-initialised workers are told to
 * start (so process boot and TypeScript compilation are not counted) and stops when the database
 * shows `target` jobs finished. The handlers' own count is only used to know when to start
 * asking the database, so counting queries do not load the server during the drain.
 */
export async function drain(system: BenchSystem, plan: DrainPlan): Promise<DrainResult> {
  const run = await system.open();
  const workers: WorkerProcess[] = [];
  let retention: ReturnType<typeof startRetention> | undefined;
  try {
    await prefill(run, plan.pending);
    const base = run.workerConfig(plan.concurrency);
    // A name unique to this drain on the workers' connections, so their backends can be found.
    const appName = `bench_worker_${randomBytes(4).toString('hex')}`;
    const onPostgres = plan.measureCost === true && base.url !== undefined;
    const config: WorkerConfig = {
      ...base,
      url: onPostgres ? withApplicationName(base.url!, appName) : base.url,
      timeStatements: plan.timeStatements,
      sampleAllocations: plan.sampleAllocations,
      chokaqWorker: { ...base.chokaqWorker, ...plan.chokaqWorker },
      countStatements: onPostgres,
    };
    for (let p = 0; p < plan.processes; p++)
      workers.push(WorkerProcess.fork(config, plan.execArgv));
    await Promise.all(workers.map((w) => w.waitReady(READY_TIMEOUT_MS)));
    await sleep(200); // let the just-forked processes settle before the clock starts
    const workerPids = workers.map((w) => w.pid).filter((pid): pid is number => pid !== undefined);
    const backendsAtStart = onPostgres ? await backendPids(base.url!, appName) : [];
    const cpuAtStart = { workers: cpuSnapshot(workerPids), backends: cpuSnapshot(backendsAtStart) };
    const started = performance.now();
    for (const w of workers) w.start();
    if (plan.retention) retention = startRetention(run);
    const deadline = Date.now() + plan.timeoutMs;
    await awaitDrained(
      workers,
      plan.target,
      async () => {
        // Read what retention deleted before the archive's count: a row deleted in between is
        // then counted in neither (a later poll sees it), never in both.
        const deleted = retention ? retention.deleted() : 0;
        return (await run.finishedCount()) + deleted;
      },
      deadline,
      system.label,
    );
    const seconds = (performance.now() - started) / 1_000;
    const retentionResult = retention
      ? {
          deletedPerSecond: (await retention.stop()) / seconds,
          archiveLeft: await run.finishedCount(),
          passes: retention.passes(),
        }
      : undefined;
    const cost = plan.measureCost
      ? await measureCost(
          workers,
          workerPids,
          cpuAtStart,
          onPostgres,
          base.url,
          appName,
          plan.target,
        )
      : undefined;
    const reports = await Promise.all(workers.map((w) => w.stop(STOP_TIMEOUT_MS)));
    return {
      jobsPerSecond: plan.target / seconds,
      seconds,
      reports,
      cost,
      retention: retentionResult,
    };
  } finally {
    await retention?.stop().catch(() => undefined);
    for (const w of workers) w.kill();
    await run.close();
  }
}

/**
 * Waits (bounded by `deadline`, epoch ms) until the workers' handlers have run `target` jobs, then
 * until the database shows `target` finished (`finished()`): the database is asked only once the
 * handlers are done, so counting queries do not load the server during the drain.
 */
export async function awaitDrained(
  workers: readonly WorkerProcess[],
  target: number,
  finished: () => Promise<number>,
  deadline: number,
  label: string,
): Promise<void> {
  await pollUntil(
    () => {
      for (const w of workers) w.assertAlive();
      return workers.reduce((sum, w) => sum + w.handled, 0) >= target;
    },
    Math.max(1_000, deadline - Date.now()),
    `${label}: ${target} handler runs`,
    5,
  );
  await pollUntil(
    async () => (await finished()) >= target,
    Math.max(1_000, deadline - Date.now()),
    `${label}: ${target} jobs finished in the database`,
    5,
  );
}

/** `url` with `application_name` set (it travels in the connection string to every pool). */
export function withApplicationName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('application_name', name);
  return parsed.toString();
}

/** The drain's {@link DrainCost}, read right after the database showed the target finished. */
async function measureCost(
  workers: WorkerProcess[],
  workerPids: number[],
  cpuAtStart: { workers: Map<number, number>; backends: Map<number, number> },
  onPostgres: boolean,
  url: string | undefined,
  appName: string,
  jobs: number,
): Promise<DrainCost> {
  const workerCpu = cpuBetween(cpuAtStart.workers, cpuSnapshot(workerPids));
  const per1k = (n: number) => (n * 1_000) / jobs;
  const cost: DrainCost = { workerCpuMsPer1k: per1k(workerCpu.ms) };
  if (onPostgres) {
    const db = cpuBetween(cpuAtStart.backends, cpuSnapshot(await backendPids(url!, appName)));
    const counts = await Promise.all(workers.map((w) => w.statementCounts(10_000)));
    cost.dbCpuMsPer1k = per1k(db.ms);
    cost.backendsLost = db.missing;
    cost.roundTripsPer1k = per1k(counts.reduce((sum, c) => sum + c.roundTrips, 0));
    cost.transactionsPer1k = per1k(counts.reduce((sum, c) => sum + c.transactions, 0));
  }
  return cost;
}

/** Retention passes back to back until stopped; a pass that found nothing waits 10 ms. */
function startRetention(run: SystemRun): {
  deleted(): number;
  passes(): number;
  stop(): Promise<number>;
} {
  const pass = run.retentionPass;
  if (!pass) throw new Error('this system has no retention pass');
  let deleted = 0;
  let passes = 0;
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const n = await pass();
      deleted += n;
      passes++;
      if (n === 0) await sleep(10);
    }
  })();
  return {
    deleted: () => deleted,
    passes: () => passes,
    stop: async () => {
      stopping = true;
      await loop;
      return deleted;
    },
  };
}
