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
import type { Timing, WorkerConfig } from './worker/protocol';

function timingTable(title: string, timings: Record<string, Timing>, seconds: number): string {
  const rows = Object.entries(timings).sort((a, b) => b[1].totalMs - a[1].totalMs);
  const lines = [
    `#### ${title}`,
    '',
    '| what | calls | calls/s | mean ms | max ms | total ms | share of wall time |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const [key, t] of rows.slice(0, 20)) {
    lines.push(
      `| \`${key.replace(/\|/g, '\\|')}\` | ${t.count} | ${(t.count / seconds).toFixed(0)} | ${(t.totalMs / t.count).toFixed(2)} | ${t.maxMs.toFixed(1)} | ${t.totalMs.toFixed(0)} | ${((t.totalMs / (seconds * 1000)) * 100).toFixed(0)} % |`,
    );
  }
  return lines.join('\n');
}

/**
 * `--profile`: one ChokaQ drain on PostgreSQL at concurrency 50 with the worker process under
 * `--cpu-prof`, plus per-operation and per-statement timings. Prints a Markdown summary and
 * writes it to bench/profile-latest.md (the .cpuprofile stays in the temp dir for DevTools).
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
