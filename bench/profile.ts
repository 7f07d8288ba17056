import { mkdirSync, readdirSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHOKAQ_DEFAULTS } from '../libs/chokaq/src/config/resolve-options';
import type { BenchArgs } from './lib/args';
import { summarizeCpuProfile } from './lib/cpu-profile';
import { loadLine } from './lib/environment';
import { writeMarkdown } from './lib/markdown';
import { drain } from './scenarios/drain.scenario';
import { chokaqSystem } from './systems/chokaq.system';
import type { AllocationSample } from './worker/allocation-sampler';
import type { Timing, WorkerConfig } from './worker/protocol';

function timingTable(title: string, timings: Record<string, Timing>, seconds: number): string {
  const rows = Object.entries(timings).sort((a, b) => b[1].totalMs - a[1].totalMs);
  const server = rows.some(([, t]) => t.serverMs !== undefined);
  const lines = [
    `#### ${title}`,
    '',
    `| what | calls | calls/s | mean ms | max ms | total ms | share of wall time |${server ? ' server CPU ms per call | server CPU ms total |' : ''}`,
    `|---|---:|---:|---:|---:|---:|---:|${server ? '---:|---:|' : ''}`,
  ];
  for (const [key, t] of rows.slice(0, 20)) {
    const cpu = !server
      ? ''
      : t.serverMs === undefined
        ? ' — | — |'
        : ` ${(t.serverMs / t.count).toFixed(2)} | ${t.serverMs.toFixed(0)} |`;
    lines.push(
      `| \`${key.replace(/\|/g, '\\|')}\` | ${t.count} | ${(t.count / seconds).toFixed(0)} | ${(t.totalMs / t.count).toFixed(2)} | ${t.maxMs.toFixed(1)} | ${t.totalMs.toFixed(0)} | ${((t.totalMs / (seconds * 1000)) * 100).toFixed(0)} % |${cpu}`,
    );
  }
  return lines.join('\n');
}

/** The sampled allocations of a drain of `jobs` jobs, per job: the total, then the largest places. */
function allocationTable(sample: AllocationSample, jobs: number): string {
  return [
    `## Allocations: ${(sample.totalBytes / jobs).toFixed(0)} bytes per job (sampled, one run, start to stop)`,
    '',
    '| where (function file:line ← callers) | bytes per job | share |',
    '|---|---:|---:|',
    ...sample.sites.map(
      (s) =>
        `| \`${s.site.replace(/\|/g, '\\|')}\` | ${(s.bytes / jobs).toFixed(0)} | ${((s.bytes / sample.totalBytes) * 100).toFixed(1)} % |`,
    ),
  ].join('\n');
}

/**
 * `--profile`: one ChokaQ drain on PostgreSQL at concurrency 50 with the worker process under
 * `--cpu-prof`, plus per-operation and per-statement timings (with the server CPU each statement
 * cost) and the worker's allocations per job. Prints a Markdown summary and writes it to
 * bench/profile-latest.md (the .cpuprofile stays in the temp dir for DevTools).
 */
export async function runProfile(
  args: BenchArgs,
  benchUrl: string,
  log: (m: string) => void,
): Promise<void> {
  const dir = join(tmpdir(), `chokaq-bench-profile-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  const concurrency = Math.max(...args.sizes.concurrency);
  // PostgreSQL unless only SQLite was asked for (`--dialects=sqlite`).
  const dialect = args.dialects.has('postgres') ? 'postgres' : 'sqlite';
  const system = chokaqSystem(dialect, benchUrl);
  const out: string[] = [
    `# ChokaQ profile: ${dialect === 'postgres' ? 'PostgreSQL' : 'SQLite'} drain, concurrency ${concurrency}`,
    '',
    `Load average at start: ${loadLine()}`,
    '',
  ];
  for (const timed of [false, true]) {
    log(`profiling drain of ${args.sizes.drain} jobs (statement timing ${timed ? 'on' : 'off'})`);
    const result = await drain(system, {
      pending: args.sizes.drain,
      target: args.sizes.drain,
      processes: 1,
      concurrency,
      timeoutMs: args.runTimeoutMs,
      execArgv: timed ? [] : ['--cpu-prof', `--cpu-prof-dir=${dir}`],
      timeStatements: timed,
    });
    out.push(
      `## Run with ${timed ? 'statement timing (no CPU profile)' : 'CPU profile (no statement timing)'}: ${result.jobsPerSecond.toFixed(0)} jobs/s, ${result.seconds.toFixed(2)} s, load ${loadLine()}`,
      '',
    );
    if (timed) {
      const t = result.reports[0].timings;
      if (t) {
        out.push(
          timingTable(
            'Storage operations (wall time seen by the worker)',
            t.operations,
            result.seconds,
          ),
          '',
        );
        out.push(timingTable('SQL statements (pg round trip)', t.statements, result.seconds), '');
      }
    } else {
      const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
      if (!file) throw new Error(`no .cpuprofile written in ${dir}`);
      out.push(`CPU profile: \`${join(dir, file)}\``, '', summarizeCpuProfile(join(dir, file)), '');
    }
  }
  // What the worker allocates per job, by place (V8's sampling heap profiler, collected objects
  // included): garbage the collector must reclaim, the share of its CPU the CPU profile shows.
  log(`sampling the allocations of a drain of ${args.sizes.drain} jobs`);
  const sampled = await drain(system, {
    pending: args.sizes.drain,
    target: args.sizes.drain,
    processes: 1,
    concurrency,
    timeoutMs: args.runTimeoutMs,
    sampleAllocations: true,
  });
  const allocations = sampled.reports[0].allocations;
  if (allocations) out.push(allocationTable(allocations, args.sizes.drain), '');
  // Configuration-only experiments: what today's code does with a larger claim per round trip.
  out.push(
    '## Configuration experiments (no instrumentation)',
    '',
    '| worker options | jobs/s | s | load 1m |',
    '|---|---:|---:|---:|',
  );
  const experiments: Array<WorkerConfig['chokaqWorker']> = [
    {},
    { batchSize: 100, prefetch: 200 },
    { batchSize: 250, prefetch: 500 },
  ];
  for (const chokaqWorker of experiments) {
    const result = await drain(system, {
      pending: args.sizes.drain,
      target: args.sizes.drain,
      processes: 1,
      concurrency,
      timeoutMs: args.runTimeoutMs,
      chokaqWorker,
    });
    const label = Object.keys(chokaqWorker ?? {}).length
      ? JSON.stringify(chokaqWorker)
      : `defaults (batch ${CHOKAQ_DEFAULTS.worker.batchSize}, prefetch ${CHOKAQ_DEFAULTS.worker.prefetch})`;
    log(`  ${label}: ${result.jobsPerSecond.toFixed(0)} jobs/s`);
    out.push(
      `| ${label} | ${result.jobsPerSecond.toFixed(0)} | ${result.seconds.toFixed(2)} | ${loadavg()[0].toFixed(2)} |`,
    );
  }
  out.push('');
  const text = out.join('\n');
  await writeMarkdown(join(__dirname, 'profile-latest.md'), `${text}\n`);
  process.stdout.write(`${text}\n`);
  log('wrote bench/profile-latest.md');
}
