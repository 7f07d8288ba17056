import type { BenchArgs, ScenarioName } from '../lib/args';
import type { ResultSet } from '../lib/results';
import type { BenchSystem } from '../systems/bench-system';
import { crashDrain } from './crash.scenario';
import { drain, type DrainCost } from './drain.scenario';
import { enqueueBulk, enqueueSingle } from './enqueue.scenario';
import { latency } from './latency.scenario';

type Log = (message: string) => void;

/**
 * Runs one run of `scenario` for `system` and records its figures. A failure (timeout, crash) is
 * recorded and logged, and the suite goes on: one broken system must not hide the others' figures.
 */
export async function runScenario(
  scenario: ScenarioName,
  system: BenchSystem,
  args: BenchArgs,
  results: ResultSet,
  log: Log,
): Promise<void> {
  const z = args.sizes;
  const maxC = Math.max(...z.concurrency);
  const d = system.dialect;
  const attempt = async (
    name: string,
    unit: string,
    higher: boolean,
    measure: () => Promise<void>,
  ) => {
    try {
      await measure();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      log(`  ${name} FAILED for ${system.label}: ${message}`);
      results.fail(d, name, unit, higher, system.id, message);
    }
  };
  const jobsPerSec = (name: string, value: number) => {
    results.add(d, name, 'jobs/s', true, system.id, value);
    log(`  ${name}: ${value.toFixed(0)} jobs/s`);
  };
  // What a drain cost per 1,000 jobs, as rows of their own beside its throughput.
  const costOf = (name: string, cost: DrainCost | undefined) => {
    if (!cost) return;
    const unit = 'ms/1k jobs';
    results.add(d, `${name} · worker CPU`, unit, false, system.id, cost.workerCpuMsPer1k);
    const parts = [`worker CPU ${cost.workerCpuMsPer1k.toFixed(0)} ms`];
    if (cost.dbCpuMsPer1k !== undefined) {
      results.add(d, `${name} · PostgreSQL CPU`, unit, false, system.id, cost.dbCpuMsPer1k);
      parts.push(`PostgreSQL CPU ${cost.dbCpuMsPer1k.toFixed(0)} ms`);
    }
    if (cost.roundTripsPer1k !== undefined) {
      results.add(
        d,
        `${name} · round trips`,
        'per 1k jobs',
        false,
        system.id,
        cost.roundTripsPer1k,
      );
      parts.push(`${cost.roundTripsPer1k.toFixed(0)} round trips`);
    }
    if (cost.transactionsPer1k !== undefined) {
      const label = `${name} · transactions`;
      results.add(d, label, 'per 1k jobs', false, system.id, cost.transactionsPer1k);
      parts.push(`${cost.transactionsPer1k.toFixed(0)} transactions`);
    }
    if (cost.backendsLost) parts.push(`(${cost.backendsLost} backend(s) ended meanwhile)`);
    log(`  ${name} per 1,000 jobs: ${parts.join(', ')}`);
  };

  switch (scenario) {
    case 'enqueue':
      await attempt('enqueue-single', 'jobs/s', true, async () =>
        jobsPerSec('enqueue-single', await enqueueSingle(system, z.single, args.runTimeoutMs)),
      );
      await attempt('enqueue-bulk', 'jobs/s', true, async () =>
        jobsPerSec(
          'enqueue-bulk',
          await enqueueBulk(system, z.bulk, z.bulkChunk, args.runTimeoutMs),
        ),
      );
      return;
    case 'drain':
      for (const c of z.concurrency) {
        await attempt(`drain-c${c}`, 'jobs/s', true, async () => {
          const result = await drain(system, {
            pending: z.drain,
            target: z.drain,
            processes: 1,
            concurrency: c,
            timeoutMs: args.runTimeoutMs,
            measureCost: true,
          });
          jobsPerSec(`drain-c${c}`, result.jobsPerSecond);
          costOf(`drain-c${c}`, result.cost);
          // Scenario (f): peak RSS of the one worker process at the highest concurrency.
          if (c === maxC) {
            const mb = result.reports[0].maxRssKb / 1024;
            results.add(d, 'worker-peak-rss', 'MB', false, system.id, mb);
            log(`  worker-peak-rss: ${mb.toFixed(0)} MB`);
          }
        });
      }
      return;
    case 'latency':
      await attempt('latency-p50', 'ms', false, async () => {
        const r = await latency(system, z.latencyJobs, z.latencySpacingMs, args.runTimeoutMs);
        results.add(d, 'latency-p50', 'ms', false, system.id, r.p50);
        results.add(d, 'latency-p95', 'ms', false, system.id, r.p95);
        results.add(d, 'latency-p99', 'ms', false, system.id, r.p99);
        log(
          `  latency p50/p95/p99: ${r.p50.toFixed(1)} / ${r.p95.toFixed(1)} / ${r.p99.toFixed(1)} ms`,
        );
      });
      return;
    case 'backlog':
      await attempt(`backlog-drain-c${maxC}`, 'jobs/s', true, async () => {
        const result = await drain(system, {
          pending: z.backlog,
          target: z.backlogDrain,
          processes: 1,
          concurrency: maxC,
          timeoutMs: args.runTimeoutMs,
          measureCost: true,
        });
        jobsPerSec(`backlog-drain-c${maxC}`, result.jobsPerSecond);
        costOf(`backlog-drain-c${maxC}`, result.cost);
      });
      return;
    case 'crash': {
      // ChokaQ on PostgreSQL only: the crash bound of starting ahead (worker.startAhead).
      if (!system.retention || d !== 'postgres') return;
      const name = `crash-c${maxC}`;
      await attempt(`${name}: zombies that never ran`, 'jobs', false, async () => {
        const r = await crashDrain(system, {
          pending: z.drain,
          killAt: Math.floor(z.drain / 2),
          concurrency: maxC,
          timeoutMs: args.runTimeoutMs,
        });
        if (!r.accountedOnce) throw new Error('a job was lost, left hot or finished twice');
        results.add(d, `${name}: zombies that never ran`, 'jobs', false, system.id, r.neverRan);
        results.add(d, `${name}: zombies`, 'jobs', false, system.id, r.zombies);
        log(
          `  ${name}: ${r.zombies} zombie(s), ${r.neverRan} never ran (bound ${maxC} + startAhead), ` +
            `${r.fetched} Fetched; every job accounted for once`,
        );
      });
      return;
    }
    case 'retention': {
      // ChokaQ only: the c50 drain without and then with retention deleting every archived row
      // as fast as it can, in the same run, so the two throughputs share the machine's state.
      if (!system.retention) return;
      const plan = {
        pending: z.drain,
        target: z.drain,
        processes: 1,
        concurrency: maxC,
        timeoutMs: args.runTimeoutMs,
      };
      await attempt(`retention: drain-c${maxC} without`, 'jobs/s', true, async () => {
        jobsPerSec(`retention: drain-c${maxC} without`, (await drain(system, plan)).jobsPerSecond);
      });
      await attempt(`retention: drain-c${maxC} with`, 'jobs/s', true, async () => {
        const result = await drain(system, { ...plan, retention: true });
        jobsPerSec(`retention: drain-c${maxC} with`, result.jobsPerSecond);
        const r = result.retention!;
        results.add(d, 'retention: deleted', 'rows/s', true, system.id, r.deletedPerSecond);
        results.add(
          d,
          'retention: archive left at the end',
          'rows',
          false,
          system.id,
          r.archiveLeft,
        );
        log(
          `  retention deleted ${r.deletedPerSecond.toFixed(0)} rows/s in ${r.passes} passes; ` +
            `${r.archiveLeft} archived rows left at the end`,
        );
      });
      return;
    }
    case 'two-proc':
      await attempt(`two-proc-drain-c${maxC}`, 'jobs/s', true, async () => {
        const result = await drain(system, {
          pending: z.drain,
          target: z.drain,
          processes: 2,
          concurrency: maxC,
          timeoutMs: args.runTimeoutMs,
          measureCost: true,
        });
        jobsPerSec(`two-proc-drain-c${maxC}`, result.jobsPerSecond);
        costOf(`two-proc-drain-c${maxC}`, result.cost);
      });
      return;
  }
}
