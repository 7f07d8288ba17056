import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pollUntil, sleep } from '../lib/stats';
import { WorkerProcess } from '../lib/worker-process';
import type { BenchSystem } from '../systems/bench-system';
import { prefill } from './drain.scenario';

/** One crash drain: SIGKILL the only worker once `killAt` jobs ran, rescue, finish with another. */
export interface CrashPlan {
  pending: number;
  killAt: number;
  concurrency: number;
  timeoutMs: number;
}

/** What a crash drain found (see {@link crashDrain}). */
export interface CrashResult {
  /** Processing rows of the killed worker: what the rescue turns into zombies. */
  zombies: number;
  /** Of those, the jobs whose handler never ran (started ahead, or started and not yet entered). */
  neverRan: number;
  /** Fetched rows of the killed worker (returned to Pending by `recoverAbandoned`). */
  fetched: number;
  /** Every accepted job ended exactly once in Archive or DLQ, none still hot, none twice. */
  accountedOnce: boolean;
}

const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 40_000;

/**
 * The guarantee that starting ahead widens, measured: a worker with ChokaQ's defaults drains at
 * `concurrency` and is SIGKILLed once `killAt` of its handlers ran. Its handler records every job
 * it enters (a synchronous write to a file, so a recorded job really ran) and the database shows
 * its Processing rows: those are the zombies, and the ones never recorded never ran (the bound is
 * `concurrency + worker.startAhead`). The bench then rescues them (`archiveZombies`,
 * `recoverAbandoned`), a second worker finishes the rest, and every job must be in exactly one of
 * Archive and DLQ.
 */
export async function crashDrain(system: BenchSystem, plan: CrashPlan): Promise<CrashResult> {
  const run = await system.open();
  const probe = run.crashProbe;
  if (!probe) throw new Error(`${system.label} has no crash probe`);
  const dir = mkdtempSync(join(tmpdir(), 'chokaq-bench-crash-'));
  const runsFile = join(dir, 'entered.txt');
  closeSync(openSync(runsFile, 'w'));
  const workers: WorkerProcess[] = [];
  try {
    await prefill(run, plan.pending);
    const victim = WorkerProcess.fork({ ...run.workerConfig(plan.concurrency), runsFile });
    workers.push(victim);
    await victim.waitReady(READY_TIMEOUT_MS);
    await sleep(200);
    victim.start();
    await pollUntil(
      () => (victim.assertAlive(), victim.handled >= plan.killAt),
      plan.timeoutMs,
      `${system.label}: ${plan.killAt} handler runs before the kill`,
      1,
    );
    await victim.killAndWait(10_000);
    const started = await probe.startedPayloads();
    const entered = new Set(
      readFileSync(runsFile, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map(Number),
    );
    const fetched = await probe.fetchedCount();
    await probe.rescueAll();
    const finisher = WorkerProcess.fork(run.workerConfig(plan.concurrency));
    workers.push(finisher);
    await finisher.waitReady(READY_TIMEOUT_MS);
    finisher.start();
    await pollUntil(
      async () => {
        const p = await probe.pillars();
        return p.archive + p.dlq >= plan.pending;
      },
      plan.timeoutMs,
      `${system.label}: every job finished after the crash`,
      20,
    );
    await finisher.stop(STOP_TIMEOUT_MS);
    const p = await probe.pillars();
    return {
      zombies: started.length,
      neverRan: started.filter((i) => !entered.has(i)).length,
      fetched,
      accountedOnce:
        p.hot === 0 && p.archive + p.dlq === plan.pending && p.distinct === plan.pending,
    };
  } finally {
    for (const w of workers) w.kill();
    await run.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
