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
  /** ChokaQ worker options other than the defaults (profile experiments). */
  chokaqWorker?: WorkerConfig['chokaqWorker'];
}

/** What one drain measured. */
export interface DrainResult {
  jobsPerSecond: number;
  seconds: number;
  reports: WorkerReport[];
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
  try {
    await prefill(run, plan.pending);
    const config: WorkerConfig = {
      ...run.workerConfig(plan.concurrency),
      timeStatements: plan.timeStatements,
      chokaqWorker: plan.chokaqWorker,
    };
    for (let p = 0; p < plan.processes; p++)
      workers.push(WorkerProcess.fork(config, plan.execArgv));
    await Promise.all(workers.map((w) => w.waitReady(READY_TIMEOUT_MS)));
    await sleep(200); // let the just-forked processes settle before the clock starts
    const started = performance.now();
    for (const w of workers) w.start();
    const deadline = Date.now() + plan.timeoutMs;
    await pollUntil(
      () => {
        for (const w of workers) w.assertAlive();
        return workers.reduce((sum, w) => sum + w.handled, 0) >= plan.target;
      },
      plan.timeoutMs,
      `${system.label}: ${plan.target} handler runs`,
      5,
    );
    await pollUntil(
      async () => (await run.finishedCount()) >= plan.target,
      Math.max(1_000, deadline - Date.now()),
      `${system.label}: ${plan.target} jobs finished in the database`,
      5,
    );
    const seconds = (performance.now() - started) / 1_000;
    const reports = await Promise.all(workers.map((w) => w.stop(STOP_TIMEOUT_MS)));
    return { jobsPerSecond: plan.target / seconds, seconds, reports };
  } finally {
    for (const w of workers) w.kill();
    await run.close();
  }
}
