import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pgAvailable, TS_LOADER } from '../support/env';
import type { ChaosSummary } from './chaos/chaos-runner';
import type { SoakSummary } from './chaos/soak-runner';

/**
 * The CI chaos run (issue 6, part 3): spawns `scripts/chaos/run.ts` — the same entry as
 * `npm run chaos` — for 30 s on PostgreSQL and 15 s on SQLite, and requires exit code 0 (no
 * invariant violation) and a summary showing real activity; and its short soak (steady production
 * with retention running) for 15 s on PostgreSQL. Longer runs: see the README.
 */
jest.setTimeout(240_000);

const RUNNER = join(__dirname, '..', '..', 'scripts', 'chaos', 'run.ts');

async function runChaos(args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ['-r', TS_LOADER, RUNNER, ...args], {
    cwd: join(__dirname, '..', '..'),
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  // Bounded: the runner stops producing after --seconds and bounds its own drain; this is the
  // backstop, and SIGTERM makes the runner kill its workers before it exits.
  const killer = setTimeout(() => child.kill('SIGTERM'), 220_000);
  try {
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code, out };
  } finally {
    clearTimeout(killer);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

function summaryOf<T = ChaosSummary>(out: string, prefix = 'CHAOS SUMMARY '): T {
  const line = out.split('\n').find((l) => l.startsWith(prefix));
  if (!line) throw new Error(`no summary line in the chaos output:\n${out.slice(-5_000)}`);
  return JSON.parse(line.slice(prefix.length)) as T;
}

function expectActivity(summary: ChaosSummary, minJobs: number): void {
  expect(summary.violations).toEqual([]);
  expect(summary.jobs).toBeGreaterThan(minJobs);
  expect(summary.kills).toBeGreaterThan(0);
  expect(summary.resurrects).toBeGreaterThan(0);
  expect(summary.pauses + summary.cancels).toBeGreaterThan(0);
  // Flows ran: parents released by their children's moves, checked against their edges.
  expect(summary.flows).toBeGreaterThan(0);
  expect(summary.flowParentsRan).toBeGreaterThan(0);
  expect(summary.hot).toBe(0);
  expect(summary.archive + summary.dlq).toBe(summary.jobs);
  // Each failure path was taken: timeouts (7), exhausted retries (0), fatal errors (6).
  for (const reason of ['0', '6', '7']) expect(summary.dlqByReason[reason]).toBeGreaterThan(0);
}

describe('chaos run', () => {
  it('SQLite, 15 s: every invariant holds', async () => {
    const { code, out } = await runChaos(['--seconds', '15', '--dialect', 'sqlite']);
    const summary = summaryOf(out);
    expect({ code, violations: summary.violations }).toEqual({ code: 0, violations: [] });
    expectActivity(summary, 500);
  });

  (pgAvailable() ? it : it.skip)(
    'PostgreSQL soak, 15 s: every job runs once and is counted once while retention runs',
    async () => {
      const { code, out } = await runChaos(['--soak', '--seconds', '15', '--dialect', 'postgres']);
      const summary = summaryOf<SoakSummary>(out, 'SOAK SUMMARY ');
      expect({ code, violations: summary.violations }).toEqual({ code: 0, violations: [] });
      // The run did what a soak is: steady production, measured in windows, retention removing
      // finished rows (the checks above then held over all of it).
      expect(summary.jobs).toBeGreaterThan(1_000);
      expect(summary.windows.length).toBeGreaterThanOrEqual(2);
      expect(summary.retained).toBeGreaterThan(0);
    },
  );

  (pgAvailable() ? it : it.skip)('PostgreSQL, 30 s: every invariant holds', async () => {
    const { code, out } = await runChaos(['--seconds', '30', '--dialect', 'postgres']);
    const summary = summaryOf(out);
    expect({ code, violations: summary.violations }).toEqual({ code: 0, violations: [] });
    expectActivity(summary, 1_000);
  });
});
