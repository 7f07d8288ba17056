import { percentile, pollUntil, preciseNow, sleep } from '../lib/stats';
import { WorkerProcess } from '../lib/worker-process';
import type { BenchSystem } from '../systems/bench-system';

/** Percentiles of one latency run, in ms. */
export interface LatencyResult {
  p50: number;
  p95: number;
  p99: number;
}

const READY_TIMEOUT_MS = 120_000;
/** Time for an idle worker to subscribe and reach its idle poll before the first job. */
const IDLE_SETTLE_MS = 1_500;

/**
 * Scenario (c): one idle worker process; the bench enqueues `jobs` jobs `spacingMs` apart, each
 * carrying the instant its enqueue call began; the handler records start − that instant.
 * Calls are fired on schedule, not awaited one by one, so a slow call does not stretch the gaps.
 */
export async function latency(
  system: BenchSystem,
  jobs: number,
  spacingMs: number,
  timeoutMs: number,
): Promise<LatencyResult> {
  const run = await system.open();
  const worker = WorkerProcess.fork(run.workerConfig(10));
  try {
    await worker.waitReady(READY_TIMEOUT_MS);
    worker.start();
    await sleep(IDLE_SETTLE_MS);
    const calls: Promise<void>[] = [];
    const origin = performance.now();
    for (let i = 0; i < jobs; i++) {
      const wait = origin + i * spacingMs - performance.now();
      if (wait > 0) await sleep(wait);
      calls.push(run.enqueueOne({ i, t: preciseNow() }));
    }
    await Promise.all(calls);
    await pollUntil(
      () => (worker.assertAlive(), worker.handled >= jobs),
      timeoutMs,
      `${system.label}: ${jobs} latency jobs handled`,
    );
    const report = await worker.stop(40_000);
    const sorted = [...report.latenciesMs].sort((a, b) => a - b);
    return {
      p50: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      p99: percentile(sorted, 99),
    };
  } finally {
    worker.kill();
    await run.close();
  }
}
