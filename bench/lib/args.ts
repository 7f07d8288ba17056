import { PARTITION_PERIODS } from '../../libs/chokaq/src/config/storage-defaults';
import type { PartitionPeriod } from '../../libs/chokaq/src/storage/shared/partitions';

/** Scenario names accepted by `--scenarios`. */
export const SCENARIOS = [
  'enqueue',
  'drain',
  'latency',
  'backlog',
  'two-proc',
  'retention',
  'crash',
  'admin-reads',
  'metrics-ab',
  'deck',
  'groups',
  'flows',
  'footprint',
  'scale',
  'soak',
  'partitions',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/**
 * Scenarios that run only when named, each writing its own section of RESULTS.md: `admin-reads`
 * seeds more than a million rows per dialect (minutes); `metrics-ab` repeats the PostgreSQL drain
 * for each way metrics can be set up; `deck` loads The Deck in Chromium over the admin-reads data
 * set (seeded once when both run).
 */
export const SEPARATE_SCENARIOS: readonly ScenarioName[] = [
  'admin-reads',
  'metrics-ab',
  'deck',
  'groups',
  'flows',
  'footprint',
  'scale',
  'soak',
  'partitions',
];

/** What runs without `--scenarios`: every throughput and latency scenario. */
export const DEFAULT_SCENARIOS: readonly ScenarioName[] = SCENARIOS.filter(
  (s) => !SEPARATE_SCENARIOS.includes(s),
);

/** Dialects ChokaQ is benchmarked on (peers run on PostgreSQL only). */
export const BENCH_DIALECTS = ['postgres', 'sqlite'] as const;
export type BenchDialect = (typeof BENCH_DIALECTS)[number];

/** Job counts of each scenario. */
export interface BenchSizes {
  /** Jobs enqueued one call at a time. */
  single: number;
  /** Jobs enqueued in bulk (in calls of `bulkChunk`). */
  bulk: number;
  bulkChunk: number;
  /** Jobs drained by scenarios b and e. */
  drain: number;
  /** Concurrency levels of scenario b. */
  concurrency: number[];
  /** Jobs and spacing of the latency scenario. */
  latencyJobs: number;
  latencySpacingMs: number;
  /** Pending rows before the backlog drain, and how many of them it drains. */
  backlog: number;
  backlogDrain: number;
}

/** Rows seeded and repetitions of the admin-reads scenario. */
export interface ReadSizes {
  archived: number;
  dead: number;
  pending: number;
  /** The deep page is the page of 50 that ends at this row. */
  deepRow: number;
  /** Timed calls of each read (after one unmeasured call). */
  repetitions: number;
  /** Rows per seeding statement. */
  chunk: number;
}

/** Repetitions of the deck scenario. */
export interface DeckSizes {
  /** Timed rounds over every panel (after one unmeasured round). */
  panelRounds: number;
  /** Timed snapshot reads (after one unmeasured read). */
  ticks: number;
}

/** The parsed command line. */
export interface BenchArgs {
  quick: boolean;
  peers: boolean;
  json: boolean;
  profile: boolean;
  write: boolean;
  runs: number;
  scenarios: Set<ScenarioName>;
  dialects: Set<BenchDialect>;
  sizes: BenchSizes;
  reads: ReadSizes;
  deck: DeckSizes;
  /** Hard bound of one run (fork to last report); a run past it is killed and reported as failed. */
  runTimeoutMs: number;
  pgUrl: string;
  /** Before each scenario, wait (at most `maxLoadWaitMs`) until the 1-minute load average is below this. */
  maxLoad: number | undefined;
  maxLoadWaitMs: number;
  /** ChokaQ's `worker.startAhead` in the suite's drains (A/B runs); undefined: its default. */
  startAhead: number | undefined;
  /**
   * The ChokaQ handler's shape (batch-handler rows): undefined is the queue-wide per-job handler;
   * `batch` 0 a per-job handler of the job type, N a batch handler of N; `callMs` a wait per call.
   */
  handler: BenchHandlerShape | undefined;
  /** The scale scenario's backlog sizes (`--scale-pending`); undefined: per dialect's default. */
  scalePending: number[] | undefined;
  /** The scale scenario's archive sizes (`--scale-archived`); undefined: per dialect's default; [] skips the archive curve. */
  scaleArchived: number[] | undefined;
  /** The soak's length in minutes (`--soak-minutes`; default 60, --quick 2). */
  soakMinutes: number;
  /** The soak's production rate, jobs per second (`--soak-rate`); undefined: 70 % of a measured drain. */
  soakRate: number | undefined;
  /**
   * How long the soak's retention keeps archived rows, minutes (`--soak-archive-minutes`; default
   * 1): retention deletes from the second minute on, so the first five minutes the checks compare
   * with include its passes.
   */
  soakArchiveMinutes: number;
  /**
   * Minutes produced before the measured hour, tabled but not compared (`--soak-warmup-minutes`;
   * default 10, --quick 0): the first five measured minutes are then of warmed tables.
   */
  soakWarmupMinutes: number;
  /** Storage parameters the soak sets on `jobs_hot` first (`--soak-hot-storage=name=value,…`). */
  soakHotStorage: string | undefined;
  /**
   * The soak runs on a PostgreSQL cluster of its own (`--soak-own-cluster`): started under a
   * temporary directory with the server's stock settings (autovacuum on), stopped after.
   */
  soakOwnCluster: boolean;
  /**
   * The admin-reads data set with its Archive and DLQ partitioned by this period
   * (`--partitioning`; PostgreSQL only), written to a section of its own; undefined: plain tables.
   */
  partitioning: PartitionPeriod | undefined;
}

/** The scale scenario's backlog sizes when `--scale-pending` is not given. */
export function defaultScalePending(dialect: BenchDialect, quick: boolean): number[] {
  if (quick) return [10_000, 100_000];
  return dialect === 'postgres'
    ? [10_000, 100_000, 1_000_000, 5_000_000]
    : [10_000, 100_000, 1_000_000];
}

/** The scale scenario's archive sizes when `--scale-archived` is not given (issue 31: 10,000,000 on PostgreSQL, 5,000,000 on SQLite). */
export function defaultScaleArchived(dialect: BenchDialect, quick: boolean): number[] {
  if (quick) return [10_000, 100_000];
  return dialect === 'postgres' ? [10_000, 1_000_000, 10_000_000] : [10_000, 1_000_000, 5_000_000];
}

/** How the ChokaQ bench worker's handler is declared (see {@link BenchArgs.handler}). */
export interface BenchHandlerShape {
  /** 0: one job per call (a typed handler); N ≥ 1: a batch handler of N. */
  batch: number;
  /** Milliseconds each call waits (a stand-in for one round trip to another system). */
  callMs: number;
  /** Each call writes its jobs' numbers into a table, one INSERT per call (PostgreSQL). */
  sink: boolean;
}

const FULL: BenchSizes = {
  single: 2_000,
  bulk: 20_000,
  bulkChunk: 1_000,
  drain: 20_000,
  concurrency: [10, 50],
  latencyJobs: 500,
  latencySpacingMs: 10,
  backlog: 200_000,
  backlogDrain: 20_000,
};

/** Issue 13's figures: 1,000,000 archived, 100,000 dead and 100,000 pending jobs. */
const FULL_READS: ReadSizes = {
  archived: 1_000_000,
  dead: 100_000,
  pending: 100_000,
  deepRow: 5_000,
  repetitions: 20,
  chunk: 100_000,
};

/** A smoke run of the admin-reads scenario: seconds, not minutes; the deep page ends at row 500. */
const QUICK_READS: ReadSizes = {
  archived: 20_000,
  dead: 5_000,
  pending: 2_000,
  deepRow: 500,
  repetitions: 5,
  chunk: 10_000,
};

const FULL_DECK: DeckSizes = { panelRounds: 5, ticks: 20 };
const QUICK_DECK: DeckSizes = { panelRounds: 2, ticks: 5 };

/** Small enough for a smoke run on a loaded machine (well under a minute per system). */
const QUICK: BenchSizes = {
  single: 100,
  bulk: 2_000,
  bulkChunk: 1_000,
  drain: 1_000,
  concurrency: [10, 50],
  latencyJobs: 30,
  latencySpacingMs: 10,
  backlog: 5_000,
  backlogDrain: 1_000,
};

/** The bench's PostgreSQL server when `--pg-url` is not given (`$BENCH_PG_URL`, else the local one). */
const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** The server `--pg-url=flag` names, else `$BENCH_PG_URL`, else {@link DEFAULT_PG_URL}. */
export function pgUrlOf(flag: string | undefined): string {
  return flag ?? process.env.BENCH_PG_URL ?? DEFAULT_PG_URL;
}

const HELP = `npm run bench -- [flags]
  --quick                 small sizes, 1 run (smoke test); RESULTS.md is not rewritten
  --peers                 also run graphile-worker (preset + defaults) and pg-boss on PostgreSQL
  --json                  print one JSON object per scenario on its own line
  --profile               CPU-profile a ChokaQ drain at the highest --concurrency (PostgreSQL; SQLite with --dialects=sqlite)
  --scenarios=a,b         ${SCENARIOS.join(',')} (default all but admin-reads, metrics-ab, deck, groups, flows, footprint, scale, soak and partitions)
                          admin-reads: seeds 1,000,000 archived, 100,000 DLQ and 100,000 pending jobs
                          per dialect and times the dashboard reads (p50/p95); writes its own section
                          of RESULTS.md (--runs does not apply: one seeding per dialect)
                          metrics-ab: the PostgreSQL drain (--drain, --concurrency, --runs) with metrics
                          off, with @opentelemetry/api and no SDK, and with an SDK registered, in the
                          same run; writes its own section of RESULTS.md
                          deck: on the admin-reads data set (PostgreSQL; seeded once when both are
                          named), boots a Nest app with the Deck and loads it in Chromium
                          ($CHOKAQ_CHROMIUM or /usr/bin/chromium): first-load bytes, each panel's time
                          to its data, the live tick's reads; writes its own section of RESULTS.md
                          groups: a claim of 50 in a queue with 10,000 groups against a queue without
                          groups and one with a budget (p50/p95 per claim); its own section of RESULTS.md
                          flows: a child's archive under a fan-in of 10 and of 10,000 against no fan-in,
                          and a 3-level flow of 10,000 jobs drained against 10,000 plain ones (storage
                          level, one process); its own section of RESULTS.md
                          footprint: the RSS of a fresh process that requires a ChokaQ worker's modules,
                          against bare Node and pg alone; its own section of RESULTS.md
                          scale: the claim's p50/p95 and a c50 drain as the backlog grows
                          (--scale-pending); enqueue, archive and a c50 drain as the Archive grows
                          (--scale-archived), the admin reads at its largest size; each size seeded
                          by INSERT … SELECT and dropped after; its own section of RESULTS.md and
                          bench/scale-claim.svg, bench/scale-archive.svg
                          soak: an hour at 70 % of the drain rate (--soak-minutes, --soak-rate), PostgreSQL,
                          per-minute throughput, latency, hot-table size, dead tuples, autovacuums,
                          worker memory and CPU; its own section of RESULTS.md and bench/soak.svg
                          partitions: PostgreSQL, a plain schema against one partitioned by day: retention
                          of 500,000 of 1,000,000 archived rows (time, WAL, the Archive's size before and
                          after), then enqueue, bulk enqueue, archive and a c50 drain beside the partitions
                          a month of 'day' leaves (--runs rounds); its own section of RESULTS.md
  --dialects=a,b          ${BENCH_DIALECTS.join(',')} (default both)
  --runs=N                runs per scenario (default 3; --quick 1)
  --drain=N --backlog=N --backlog-drain=N --single=N --bulk=N --latency-jobs=N --concurrency=10,50
  --reads-archived=N --reads-dead=N --reads-pending=N --reads-reps=N   admin-reads sizes and repetitions
  --scale-pending=a,b,…   scale: the backlog sizes (default 10000,100000,1000000,5000000 on PostgreSQL,
                          up to 1000000 on SQLite; --quick 10000,100000)
  --soak-minutes=N        soak: minutes at sustained load (default 60; --quick 2)
  --soak-rate=N           soak: jobs per second produced (default: 70 % of a drain measured first)
  --soak-warmup-minutes=N  soak: minutes produced before the measured ones, tabled, not compared (default 10)
  --soak-archive-minutes=N  soak: how long retention keeps archived rows (default 1, so that it deletes
                          from the second minute on, inside the first five minutes the checks compare with)
  --soak-hot-storage=a=1,b=2   soak: storage parameters set on jobs_hot first (an autovacuum A/B)
  --soak-own-cluster      soak: on a PostgreSQL cluster of its own, stock settings (autovacuum on),
                          started under a temporary directory and stopped after
  --scale-archived=a,b,…  scale: the archive sizes (default 10000,1000000,10000000 on PostgreSQL,
                          up to 5000000 on SQLite; --quick 10000,100000; 0 skips the archive curve)
  --partitioning=day      admin-reads: the data set's Archive and DLQ partitioned by day (or week, month),
                          with the partitions that cover its days made before seeding (PostgreSQL only);
                          writes the section "Admin reads, partitioned Archive (<period>)"
  --deck-rounds=N --deck-ticks=N   deck: timed rounds over the panels (default 5), timed ticks (default 20)
  --run-timeout-ms=N      bound of one run (default 300000)
  --start-ahead=N         ChokaQ's worker.startAhead in the suite (A/B runs; default: the library's)
  --handler-batch=N       ChokaQ's handler as a typed handler of the job type: 0 one job per call,
                          N a batch handler of N jobs per call (batch-handler rows)
  --handler-ms=M          with --handler-batch: each handler call waits M ms (one call's I/O)
  --handler-sink          with --handler-batch: each call INSERTs its jobs into a table (one
                          statement per call: a row per job, or the whole batch)
  --write / --no-write    (re)write bench/RESULTS.md (default: on unless --quick)
  --max-load=X            before each scenario wait until the 1-min load average is below X
  --max-load-wait-s=N     … but at most N seconds (default 600), then go on and say so
  --pg-url=URL            server (default ${DEFAULT_PG_URL}; runs use database chokaq_bench)`;

function list<T extends string>(value: string, allowed: readonly T[], flag: string): Set<T> {
  const items = value.split(',').filter(Boolean);
  for (const item of items) {
    if (!allowed.includes(item as T))
      throw new Error(`${flag}: unknown '${item}' (${allowed.join(', ')})`);
  }
  return new Set(items as T[]);
}

function positive(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${flag} must be a positive integer (got ${value})`);
  return n;
}

function nonNegative(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`${flag} must be a whole number (got ${value})`);
  return n;
}

/** Parses `argv` (without node and script); throws with the help text on a bad flag. */
export function parseArgs(argv: readonly string[]): BenchArgs | 'help' {
  const flags = new Map<string, string>();
  for (const arg of argv) {
    if (arg === '--help' || arg === '-h') return 'help';
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!match) throw new Error(`Unknown argument '${arg}'\n${HELP}`);
    flags.set(match[1], match[2] ?? 'true');
  }
  const quick = flags.get('quick') === 'true';
  const sizes: BenchSizes = { ...(quick ? QUICK : FULL) };
  const sizeFlags: Record<string, keyof BenchSizes> = {
    drain: 'drain',
    backlog: 'backlog',
    'backlog-drain': 'backlogDrain',
    single: 'single',
    bulk: 'bulk',
    'latency-jobs': 'latencyJobs',
  };
  const reads: ReadSizes = { ...(quick ? QUICK_READS : FULL_READS) };
  const readFlags: Record<string, keyof ReadSizes> = {
    'reads-archived': 'archived',
    'reads-dead': 'dead',
    'reads-pending': 'pending',
    'reads-reps': 'repetitions',
  };
  const deck: DeckSizes = { ...(quick ? QUICK_DECK : FULL_DECK) };
  const deckFlags: Record<string, keyof DeckSizes> = {
    'deck-rounds': 'panelRounds',
    'deck-ticks': 'ticks',
  };
  const known = new Set([
    'quick',
    'peers',
    'json',
    'profile',
    'write',
    'no-write',
    'runs',
    'scenarios',
    'dialects',
    'concurrency',
    'run-timeout-ms',
    'pg-url',
    'max-load',
    'max-load-wait-s',
    'start-ahead',
    'handler-batch',
    'handler-ms',
    'handler-sink',
    'scale-pending',
    'scale-archived',
    'soak-minutes',
    'soak-rate',
    'soak-archive-minutes',
    'soak-warmup-minutes',
    'soak-hot-storage',
    'soak-own-cluster',
    'partitioning',
    ...Object.keys(sizeFlags),
    ...Object.keys(readFlags),
    ...Object.keys(deckFlags),
  ]);
  for (const key of flags.keys())
    if (!known.has(key)) throw new Error(`Unknown flag --${key}\n${HELP}`);
  for (const [flag, key] of Object.entries(sizeFlags)) {
    const value = flags.get(flag);
    if (value !== undefined) (sizes[key] as number) = positive(value, `--${flag}`);
  }
  for (const [flag, key] of Object.entries(readFlags)) {
    const value = flags.get(flag);
    if (value !== undefined) reads[key] = positive(value, `--${flag}`);
  }
  for (const [flag, key] of Object.entries(deckFlags)) {
    const value = flags.get(flag);
    if (value !== undefined) deck[key] = positive(value, `--${flag}`);
  }
  const concurrency = flags.get('concurrency');
  if (concurrency)
    sizes.concurrency = concurrency.split(',').map((c) => positive(c, '--concurrency'));
  const scalePending = flags
    .get('scale-pending')
    ?.split(',')
    .map((n) => positive(n, '--scale-pending'));
  const scaleArchivedFlag = flags.get('scale-archived');
  const scaleArchived =
    scaleArchivedFlag === '0'
      ? []
      : scaleArchivedFlag?.split(',').map((n) => positive(n, '--scale-archived'));
  if (sizes.backlogDrain > sizes.backlog) throw new Error('--backlog-drain must be ≤ --backlog');
  const startAhead = flags.get('start-ahead');
  if (startAhead !== undefined && !/^\d+$/.test(startAhead)) {
    throw new Error(`--start-ahead must be an integer ≥ 0 (got ${startAhead})`);
  }
  const handlerBatch = flags.get('handler-batch');
  const handlerMs = flags.get('handler-ms') ?? '0';
  for (const [flag, value] of [
    ['handler-batch', handlerBatch],
    ['handler-ms', handlerMs],
  ] as const) {
    if (value !== undefined && !/^\d+$/.test(value)) {
      throw new Error(`--${flag} must be an integer ≥ 0 (got ${value})`);
    }
  }
  if ((flags.has('handler-ms') || flags.has('handler-sink')) && handlerBatch === undefined) {
    throw new Error('--handler-ms and --handler-sink need --handler-batch');
  }
  const soakMinutes = flags.get('soak-minutes');
  const soakRate = flags.get('soak-rate');
  const soakArchiveMinutes = flags.get('soak-archive-minutes');
  const soakWarmupMinutes = flags.get('soak-warmup-minutes');
  const partitioning = flags.get('partitioning');
  if (partitioning !== undefined) {
    if (!PARTITION_PERIODS.includes(partitioning as PartitionPeriod)) {
      throw new Error(
        `--partitioning: unknown '${partitioning}' (${PARTITION_PERIODS.join(', ')})`,
      );
    }
    // Only admin-reads writes a section of its own for a partitioned data set; the deck and the
    // scale scenarios would overwrite their plain figures.
    if (flags.get('scenarios') !== 'admin-reads') {
      throw new Error('--partitioning applies to --scenarios=admin-reads alone');
    }
  }
  return {
    partitioning: partitioning as PartitionPeriod | undefined,
    scalePending,
    scaleArchived,
    soakMinutes:
      soakMinutes === undefined ? (quick ? 2 : 60) : positive(soakMinutes, '--soak-minutes'),
    soakRate: soakRate === undefined ? undefined : positive(soakRate, '--soak-rate'),
    soakArchiveMinutes:
      soakArchiveMinutes === undefined ? 1 : positive(soakArchiveMinutes, '--soak-archive-minutes'),
    soakWarmupMinutes:
      soakWarmupMinutes === undefined
        ? quick
          ? 0
          : 10
        : nonNegative(soakWarmupMinutes, '--soak-warmup-minutes'),
    soakHotStorage: flags.get('soak-hot-storage'),
    soakOwnCluster: flags.has('soak-own-cluster'),
    startAhead: startAhead === undefined ? undefined : Number(startAhead),
    handler:
      handlerBatch === undefined
        ? undefined
        : {
            batch: Number(handlerBatch),
            callMs: Number(handlerMs),
            sink: flags.get('handler-sink') === 'true',
          },
    quick,
    peers: flags.get('peers') === 'true',
    json: flags.get('json') === 'true',
    profile: flags.get('profile') === 'true',
    write: flags.has('no-write') ? false : flags.has('write') || !quick,
    runs: flags.has('runs') ? positive(flags.get('runs')!, '--runs') : quick ? 1 : 3,
    scenarios: flags.has('scenarios')
      ? list(flags.get('scenarios')!, SCENARIOS, '--scenarios')
      : new Set(DEFAULT_SCENARIOS),
    dialects: flags.has('dialects')
      ? list(flags.get('dialects')!, BENCH_DIALECTS, '--dialects')
      : new Set(BENCH_DIALECTS),
    sizes,
    reads,
    deck,
    runTimeoutMs: flags.has('run-timeout-ms')
      ? positive(flags.get('run-timeout-ms')!, '--run-timeout-ms')
      : 300_000,
    maxLoad: flags.has('max-load') ? Number(flags.get('max-load')) : undefined,
    maxLoadWaitMs: flags.has('max-load-wait-s')
      ? positive(flags.get('max-load-wait-s')!, '--max-load-wait-s') * 1_000
      : 600_000,
    pgUrl: pgUrlOf(flags.get('pg-url')),
  };
}

export { HELP };
