import { parseArgs } from '../../bench/lib/args';
import {
  type SoakMinute,
  type SoakRun,
  parseStorageParameters,
  pooledPercentile,
  measured,
  soakChecks,
  soakChecksTable,
  soakTable,
} from '../../bench/scenarios/soak.scenario';

/** Latency counts (tenths of a ms → jobs): 98 jobs at 2 ms and 2 at `p99` ms, so p99 = `p99`. */
const counts = (p99: number) =>
  new Map([
    [19, 98],
    [p99 * 10 - 1, 2],
  ]);

/** A steady minute; `over` changes what a test needs. */
const minute = (n: number, over: Partial<SoakMinute> = {}): SoakMinute => ({
  minute: n,
  enqueued: 600_000,
  jobsPerSecond: 10_000,
  latencyP50: 2,
  latencyP99: 10,
  latencyCounts: counts(10),
  backlog: 500,
  hotMb: 20,
  hotIndexesMb: 8,
  hotDeadTuples: 1_000,
  hotAutovacuums: 1,
  archiveRows: 3_000_000,
  workerRssMb: 130,
  workerHeapMb: 40,
  cpuPer1k: 60,
  ...over,
});

const run = (minutes: SoakMinute[]): SoakRun => ({
  plan: {
    minutes: minutes.length,
    share: 0.7,
    concurrency: 50,
    archiveMs: 300_000,
    retentionIntervalMs: 60_000,
  },
  drainRate: 14_286,
  rate: 10_000,
  minutes,
  schemaSettings: 'PostgreSQL defaults',
});

const steady = (n: number) => Array.from({ length: n }, (_, i) => minute(i + 1));

describe('the soak scenario: its checks and table', () => {
  it('compares nothing under 15 minutes', () => {
    expect(soakChecks(run(steady(14)))).toEqual([]);
    expect(soakChecksTable([])).toMatch(/Under 15 minutes/);
  });

  it('a steady hour meets every check', () => {
    const checks = soakChecks(run(steady(60)));
    expect(checks).toHaveLength(5);
    expect(checks.every((c) => c.holds)).toBe(true);
  });

  it.each<[string, (m: SoakMinute) => Partial<SoakMinute>, RegExp]>([
    ['a growing backlog', (m) => ({ backlog: m.minute * 1_000 }), /backlog/],
    [
      'p99 up by a fifth at the end',
      (m) => ({ latencyCounts: counts(m.minute > 55 ? 12 : 10) }),
      /p99/,
    ],
    ['CPU per job up at the end', (m) => ({ cpuPer1k: m.minute > 55 ? 70 : 60 }), /CPU/],
    ['a hot table that bloats', (m) => ({ hotMb: m.minute >= 40 ? 25 : 20 }), /jobs_hot/],
    ['a worker that grows', (m) => ({ workerRssMb: m.minute >= 50 ? 150 : 130 }), /RSS/],
  ])('misses with %s', (_what, change, check) => {
    const minutes = steady(60).map((m) => ({ ...m, ...change(m) }));
    const missed = soakChecks(run(minutes)).filter((c) => !c.holds);
    expect(missed.map((c) => c.what)).toEqual([expect.stringMatching(check)]);
  });

  it("pools five minutes' jobs for their p99: one minute's tail is a fifth of the window's", () => {
    // One minute of five with a 60 ms tail on 2 % of its jobs: 0.4 % of the window, under its p99.
    const minutes = steady(60).map((m) => ({
      ...m,
      latencyCounts: counts(m.minute === 57 ? 60 : 10),
    }));
    expect(pooledPercentile(minutes.slice(55), 0.99)).toBe(10);
    expect(soakChecks(run(minutes)).every((c) => c.holds)).toBe(true);
    // … and a tail on every minute of the window is the window's p99.
    const worse = steady(60).map((m) => ({ ...m, latencyCounts: counts(m.minute > 55 ? 60 : 10) }));
    expect(pooledPercentile(worse.slice(55), 0.99)).toBe(60);
    expect(pooledPercentile([], 0.99)).toBeNaN();
  });

  it('leaves the warm-up out of the checks and tables it as w1…', () => {
    // A cold start: ten minutes of lower p99 and a smaller hot table before the measured hour.
    const warmup = Array.from({ length: 10 }, (_, i) =>
      minute(i + 1, { warmup: true, latencyCounts: counts(5), hotMb: 10, workerRssMb: 100 }),
    );
    const minutes = [...warmup, ...steady(60)];
    expect(measured(minutes)).toHaveLength(60);
    expect(soakChecks(run(minutes)).every((c) => c.holds)).toBe(true);
    // … which the same minutes, measured, would fail.
    const cold = minutes.map((m, i) => ({ ...m, minute: i + 1, warmup: undefined }));
    expect(
      soakChecks(run(cold))
        .filter((c) => !c.holds)
        .map((c) => c.what),
    ).toEqual([
      expect.stringMatching(/p99/),
      expect.stringMatching(/jobs_hot/),
      expect.stringMatching(/RSS/),
    ]);
    const table = soakTable(run(minutes)).split('\n');
    expect(table[2]).toMatch(/^\| w1 \|/);
    expect(table[12]).toMatch(/^\| 1 \|/);
  });

  it('a backlog of up to one second of production is no backlog', () => {
    const minutes = steady(20).map((m) => ({ ...m, backlog: m.minute === 20 ? 9_999 : 100 }));
    const backlog = soakChecks(run(minutes)).find((c) => /backlog/.test(c.what))!;
    expect(backlog.holds).toBe(true);
  });

  it('tables every minute', () => {
    const table = soakTable(run(steady(3)));
    expect(table.split('\n')).toHaveLength(5);
    expect(table).toContain(
      '| 2 | 600000 | 10000 | 2.0 | 10.0 | 500 | 20.0 | 8.0 | 1000 | 1 | 3000000 | 130 | 40 | 60.0 |',
    );
  });

  it('takes storage parameters as name=number only', () => {
    expect(parseStorageParameters('autovacuum_vacuum_cost_delay=0, fillfactor=90')).toBe(
      'autovacuum_vacuum_cost_delay=0, fillfactor=90',
    );
    expect(() => parseStorageParameters('fillfactor=90); DROP TABLE x; --')).toThrow(
      /not name=number/,
    );
    expect(() => parseStorageParameters('fillfactor')).toThrow(/not name=number/);
    const parsed = parseArgs(['--soak-hot-storage=fillfactor=90,autovacuum_vacuum_threshold=1000']);
    if (parsed === 'help') throw new Error('help');
    expect(parsed.soakHotStorage).toBe('fillfactor=90,autovacuum_vacuum_threshold=1000');
  });

  it('reads --soak-minutes, --soak-rate and --soak-archive-minutes', () => {
    const parsed = parseArgs(['--scenarios=soak', '--soak-minutes=15', '--soak-rate=9000']);
    if (parsed === 'help') throw new Error('help');
    expect(parsed.scenarios.has('soak')).toBe(true);
    expect([parsed.soakMinutes, parsed.soakRate]).toEqual([15, 9_000]);
    const defaults = parseArgs(['--scenarios=soak']);
    if (defaults === 'help') throw new Error('help');
    expect([defaults.soakMinutes, defaults.soakRate]).toEqual([60, undefined]);
    expect(defaults.soakArchiveMinutes).toBe(1);
    expect(defaults.soakWarmupMinutes).toBe(10);
    const kept = parseArgs(['--soak-archive-minutes=5']);
    if (kept === 'help') throw new Error('help');
    expect(kept.soakArchiveMinutes).toBe(5);
    const cold = parseArgs(['--soak-warmup-minutes=0']);
    if (cold === 'help') throw new Error('help');
    expect(cold.soakWarmupMinutes).toBe(0);
    expect(() => parseArgs(['--soak-warmup-minutes=-1'])).toThrow(/--soak-warmup-minutes/);
    expect(() => parseArgs(['--soak-archive-minutes=0'])).toThrow(/--soak-archive-minutes/);
    expect(() => parseArgs(['--soak-minutes=0'])).toThrow(/--soak-minutes/);
  });
});
