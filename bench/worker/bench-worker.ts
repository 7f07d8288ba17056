/**
 * A bench worker process (forked by the bench, never run by hand). Builds one system's worker,
 * reports `ready`, starts on `start`, reports progress, and on `stop` stops gracefully and reports
 * its handled count, peak RSS and latencies. Being a real OS process makes RSS and the
 * two-process drain real.
 */
import { openSync, writeSync } from 'node:fs';
import type {
  BenchPayload,
  FromWorker,
  RunnerFactory,
  SystemKind,
  ToWorker,
  WorkerConfig,
} from './protocol';
import {
  installStatementCounter,
  resetStatementCounts,
  statementCounts,
} from './statement-counter';
import { installStatementTimer, timings } from './statement-timer';
import type { AllocationSample } from './allocation-sampler';

const PROGRESS_EVERY_MS = 25;
/** How often the process samples its own RSS for the peak a `memory` message reports. */
const RSS_SAMPLE_MS = 250;
/** Bound of a graceful stop; past it the process exits anyway (the parent SIGKILLs later still). */
const STOP_TIMEOUT_MS = 30_000;

function send(message: FromWorker): void {
  process.send?.(message);
}

async function factoryOf(kind: SystemKind): Promise<RunnerFactory> {
  // Loaded lazily so a ChokaQ worker never pays for the peers' modules in its RSS, and vice versa.
  switch (kind) {
    case 'chokaq':
      return (await import('./chokaq-runner')).createChokaqRunner;
    case 'graphile':
      return (await import('./graphile-runner')).createGraphileRunner;
    case 'pgboss':
      return (await import('./pgboss-runner')).createPgBossRunner;
  }
}

async function main(): Promise<void> {
  const config = JSON.parse(process.env.BENCH_WORKER_CONFIG ?? '') as WorkerConfig;
  // Loaded only by a profile's sampling run: every other worker's footprint stays as it was.
  const sampler = config.sampleAllocations ? await import('./allocation-sampler') : undefined;
  if (config.timeStatements) installStatementTimer();
  if (config.countStatements) installStatementCounter();
  let handled = 0;
  const latencies: number[] = [];
  const runs = config.runsFile === undefined ? undefined : openSync(config.runsFile, 'a');
  const onJob = (payload: BenchPayload) => {
    if (runs !== undefined) writeSync(runs, `${payload?.i}\n`);
    handled++;
    if (payload && typeof payload.t === 'number') {
      latencies.push(performance.timeOrigin + performance.now() - payload.t);
    }
  };
  const runner = await (await factoryOf(config.kind))(config, onJob);

  let lastSent = -1;
  let progressTimer: NodeJS.Timeout | undefined;
  const progress = () => {
    if (handled !== lastSent) {
      lastSent = handled;
      send({ type: 'progress', handled });
    }
    progressTimer = setTimeout(progress, PROGRESS_EVERY_MS);
  };

  // The peak RSS since the last `memory` message: one reading at an arbitrary moment depends on
  // where V8's collection cycle stands, a peak over the interval does not.
  let peakRss = process.memoryUsage.rss();
  setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, RSS_SAMPLE_MS).unref();

  let stopping = false;
  let stopSampling: (() => Promise<AllocationSample>) | undefined;
  process.on('message', (message: ToWorker) => {
    if (message.type === 'start') {
      resetStatementCounts();
      stopSampling = sampler?.startAllocationSampling();
      runner.start().then(progress, fail);
    } else if (message.type === 'mark') {
      send({ type: 'counts', counts: statementCounts() });
    } else if (message.type === 'memory') {
      const { rss, heapUsed } = process.memoryUsage();
      const peak = Math.max(peakRss, rss);
      peakRss = rss;
      send({
        type: 'memory',
        memory: { rssMb: rss / 2 ** 20, peakRssMb: peak / 2 ** 20, heapUsedMb: heapUsed / 2 ** 20 },
      });
    } else if (message.type === 'stop' && !stopping) {
      stopping = true;
      clearTimeout(progressTimer);
      const bound = setTimeout(() => fail(new Error('graceful stop timed out')), STOP_TIMEOUT_MS);
      runner
        .stop()
        .then(() => stopSampling?.())
        .then((allocations) => {
          clearTimeout(bound);
          send({
            type: 'report',
            report: {
              handled,
              maxRssKb: process.resourceUsage().maxRSS,
              latenciesMs: latencies,
              timings: config.timeStatements ? timings() : undefined,
              allocations,
            },
          });
          // Let the IPC message flush, then leave (the cpu profile is written on exit).
          process.disconnect?.();
        })
        .catch(fail);
    }
  });
  send({ type: 'ready' });
}

function fail(error: unknown): void {
  send({
    type: 'error',
    message: error instanceof Error ? (error.stack ?? error.message) : String(error),
  });
  process.exitCode = 1;
  setTimeout(() => process.exit(1), 100).unref();
}

// The parent went away (crash, Ctrl-C): never outlive it.
process.on('disconnect', () => setTimeout(() => process.exit(process.exitCode ?? 0), 50));
main().catch(fail);
