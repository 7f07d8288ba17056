import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { MAX_ENQUEUE_MANY } from '../../libs/chokaq/src/validation/limits';
import { backendPids, benchSchemaName, dropSchema } from '../lib/pg-admin';
import { cpuBetween, cpuSnapshot } from '../lib/proc-cpu';
import { pollUntil, sleep } from '../lib/stats';
import { WorkerProcess } from '../lib/worker-process';
import type { WorkerConfig } from '../worker/protocol';
import { withApplicationName } from './drain.scenario';

type Log = (message: string) => void;

/** The soak's queue. */
const QUEUE = 'soak';
/** Jobs of the drain that measures the rate the soak produces at a share of. */
const RATE_PROBE_JOBS = 20_000;
/** The producer's step: each tick enqueues what the rate asks for since the start. */
const PRODUCER_TICK_MS = 100;
/** Bound of the rate probe's drain and of every wait of the soak. */
const WAIT_MS = 300_000;

/** What a soak runs. */
export interface SoakPlan {
  minutes: number;
  /**
   * Minutes produced at the same rate before the measured ones, recorded but not compared: the
   * tables reach the size and the churn they keep (retention deleting, autovacuum passes over the
   * Archive as well as the hot table), so the first five measured minutes are of the state the
   * last five are. Absent: none.
   */
  warmupMinutes?: number;
  /** Share of the measured drain rate the producers enqueue at (the issue: about 70 %). */
  share: number;
  /**
   * Jobs per second to produce; when absent, `share` of the drain rate measured first
   * ({@link RATE_PROBE_JOBS} drained at `concurrency` by the same worker).
   */
  rate?: number;
  concurrency: number;
  /** The worker's `retention.archiveMs`: archived rows live this long, so retention has work every pass. */
  archiveMs: number;
  /** The worker's `retention.intervalMs`. */
  retentionIntervalMs: number;
  /**
   * Storage parameters set on `jobs_hot` before the run (`name=value,…`, `--soak-hot-storage`): an
   * A/B of autovacuum or fillfactor settings against the schema's own. Absent: the schema's.
   */
  hotStorage?: string;
}

/** `name=value,…` of storage parameters, each a lower-case name and a number; anything else is refused. */
export function parseStorageParameters(text: string): string {
  const parts = text.split(',').map((p) => p.trim());
  for (const part of parts) {
    if (!/^[a-z_]+=\d+(\.\d+)?$/.test(part)) {
      throw new Error(`--soak-hot-storage: "${part}" is not name=number`);
    }
  }
  return parts.join(', ');
}

/** One minute of a soak, measured at its end. */
export interface SoakMinute {
  /** 1-based, counted separately for the warm-up minutes and the measured ones. */
  minute: number;
  /** A minute of the warm-up: tabled, not compared and not charted. */
  warmup?: boolean;
  enqueued: number;
  /** Jobs archived during the minute, per second. */
  jobsPerSecond: number;
  /** Enqueue → start of the jobs archived during the minute (database clock), ms. */
  latencyP50: number;
  latencyP99: number;
  /**
   * The same latencies counted per tenth of a millisecond (bucket → jobs): what the checks pool to
   * read one percentile over five minutes' jobs rather than averaging five minutes' percentiles.
   */
  latencyCounts: ReadonlyMap<number, number>;
  /** Pending rows at the minute's end. */
  backlog: number;
  /** `jobs_hot` with its indexes, and its indexes alone, MB. */
  hotMb: number;
  hotIndexesMb: number;
  hotDeadTuples: number;
  /** Autovacuum runs of `jobs_hot` during the minute. */
  hotAutovacuums: number;
  /** Live rows of the Archive (statistics estimate): what retention keeps it at. */
  archiveRows: number;
  /** The worker's peak RSS during the minute (sampled every 250 ms). */
  workerRssMb: number;
  /** The worker's V8 heap in use at the minute's end. */
  workerHeapMb: number;
  /** CPU of the worker process and of the PostgreSQL backends serving it, per 1,000 archived jobs, ms. */
  cpuPer1k: number;
}

/** A whole soak. */
export interface SoakRun {
  plan: SoakPlan;
  /** The drain rate measured first, jobs per second; undefined when the production rate was given. */
  drainRate?: number;
  /** What the producers enqueued at, jobs per second. */
  rate: number;
  minutes: SoakMinute[];
  schemaSettings: string;
}

/** The rows of `jobs_hot`'s statistics a minute reads. */
interface HotStats {
  hotMb: number;
  hotIndexesMb: number;
  dead: number;
  autovacuums: number;
  archiveRows: number;
  backlog: number;
}

async function hotStats(db: Client, schema: string): Promise<HotStats> {
  const hot = `"${schema}".jobs_hot`;
  const { rows } = await db.query<Record<string, string>>(
    `SELECT pg_total_relation_size($1::regclass) AS total, pg_indexes_size($1::regclass) AS indexes,
            h.n_dead_tup AS dead, h.autovacuum_count AS autovacuums, a.n_live_tup AS archive_rows,
            (SELECT count(*) FROM ${hot} WHERE status = 0) AS backlog
     FROM pg_stat_user_tables h, pg_stat_user_tables a
     WHERE h.relid = $1::regclass AND a.relid = $2::regclass`,
    [hot, `"${schema}".jobs_archive`],
  );
  const [r] = rows;
  return {
    hotMb: Number(r.total) / 2 ** 20,
    hotIndexesMb: Number(r.indexes) / 2 ** 20,
    dead: Number(r.dead),
    autovacuums: Number(r.autovacuums),
    archiveRows: Number(r.archive_rows),
    backlog: Number(r.backlog),
  };
}

/** The jobs archived in [from, to) of the database clock: how many, and their enqueue → start latency. */
async function archivedBetween(
  db: Client,
  schema: string,
  from: Date,
  to: Date,
): Promise<{ n: number; p50: number; p99: number; counts: Map<number, number> }> {
  // One read of the window's rows (a materialised CTE) for the percentiles and the counts.
  const { rows } = await db.query<{
    n: string;
    p50: number | null;
    p99: number | null;
    counts: Record<string, number> | null;
  }>(
    `WITH x AS MATERIALIZED (
       SELECT extract(epoch FROM started_at_utc - enqueued_at_utc) * 1000 AS lag_ms
       FROM "${schema}".jobs_archive
       WHERE finished_at_utc >= $1 AND finished_at_utc < $2)
     SELECT count(*) AS n,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY lag_ms) AS p50,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY lag_ms) AS p99,
            (SELECT json_object_agg(b.bucket, b.n)
             FROM (SELECT floor(lag_ms * 10)::int AS bucket, count(*) AS n FROM x GROUP BY 1) b)
              AS counts
     FROM x`,
    [from, to],
  );
  const [r] = rows;
  return {
    n: Number(r.n),
    p50: Number(r.p50 ?? NaN),
    p99: Number(r.p99 ?? NaN),
    counts: new Map(Object.entries(r.counts ?? {}).map(([bucket, n]) => [Number(bucket), n])),
  };
}

/**
 * The `q` quantile of the minutes' pooled latency counts, ms (the upper edge of the bucket that
 * holds it: 0.1 ms resolution); NaN when no job was counted.
 */
export function pooledPercentile(minutes: readonly SoakMinute[], q: number): number {
  const pooled = new Map<number, number>();
  for (const m of minutes) {
    for (const [bucket, n] of m.latencyCounts) pooled.set(bucket, (pooled.get(bucket) ?? 0) + n);
  }
  const total = [...pooled.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return NaN;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (const bucket of [...pooled.keys()].sort((a, b) => a - b)) {
    seen += pooled.get(bucket)!;
    if (seen >= rank) return (bucket + 1) / 10;
  }
  return NaN;
}

/**
 * A producer that enqueues at `rate` jobs per second, in bulk every {@link PRODUCER_TICK_MS} (what
 * the rate asks for since the start, so a slow tick is made up by the next), until stopped.
 */
function startProducer(
  storage: JobStorage,
  rate: number,
  log: Log,
): { taken(): number; stop(): Promise<void> } {
  let stopping = false;
  let enqueued = 0;
  let taken = 0;
  const started = performance.now();
  const loop = (async () => {
    while (!stopping) {
      const due = Math.floor(((performance.now() - started) / 1_000) * rate) - enqueued;
      for (let left = due; left > 0; left -= MAX_ENQUEUE_MANY) {
        const n = Math.min(left, MAX_ENQUEUE_MANY);
        await storage.enqueueMany(
          Array.from({ length: n }, (_, k) => ({ queue: QUEUE, payload: { i: enqueued + k } })),
        );
        enqueued += n;
      }
      await sleep(PRODUCER_TICK_MS);
    }
  })().catch((error: unknown) => log(`soak: producer failed: ${String(error)}`));
  return {
    /** Jobs enqueued since the last call. */
    taken: () => {
      const n = enqueued - taken;
      taken = enqueued;
      return n;
    },
    stop: async () => {
      stopping = true;
      await loop;
    },
  };
}

/**
 * The `soak` scenario (issue 31, part 2): one ChokaQ worker process (the defaults, `concurrency`,
 * a no-op handler, retention keeping archived rows `archiveMs`) on a fresh PostgreSQL schema, fed
 * by a producer in this process at `share` of the drain rate measured first on the same worker,
 * for `minutes`. At each minute's end: what was archived and how late it started (from the
 * Archive's own timestamps), the backlog, `jobs_hot`'s size, dead tuples and autovacuum runs, the
 * worker's RSS and heap, and the CPU per 1,000 jobs of the worker and its backends. The schema is
 * dropped after.
 */
export async function runSoak(benchUrl: string, plan: SoakPlan, log: Log): Promise<SoakRun> {
  const schema = benchSchemaName('soak');
  const storage = await createJobStorage({
    type: 'postgres',
    url: benchUrl,
    schema,
    autoCreateSchema: true,
  });
  const db = new Client({ connectionString: benchUrl });
  await db.connect();
  if (plan.hotStorage !== undefined) {
    await db.query(
      `ALTER TABLE "${schema}".jobs_hot SET (${parseStorageParameters(plan.hotStorage)})`,
    );
  }
  const appName = `bench_soak_${randomBytes(4).toString('hex')}`;
  const config: WorkerConfig = {
    kind: 'chokaq',
    variant: 'default',
    dialect: 'postgres',
    url: withApplicationName(benchUrl, appName),
    schema,
    queue: QUEUE,
    concurrency: plan.concurrency,
    retention: { archiveMs: plan.archiveMs, intervalMs: plan.retentionIntervalMs },
  };
  const worker = WorkerProcess.fork(config);
  let producer: ReturnType<typeof startProducer> | undefined;
  try {
    const { rows: settings } = await db.query<{ reloptions: string[] | null; autovacuum: string }>(
      `SELECT reloptions, current_setting('autovacuum') AS autovacuum FROM pg_class WHERE oid = $1::regclass`,
      [`"${schema}".jobs_hot`],
    );
    if (settings[0].autovacuum !== 'on') {
      log('soak: this server runs with autovacuum off; the hot table will only grow');
    }
    await worker.waitReady(WAIT_MS);
    let drainRate: number | undefined;
    if (plan.rate === undefined) {
      for (let i = 0; i < RATE_PROBE_JOBS; i += MAX_ENQUEUE_MANY) {
        const n = Math.min(MAX_ENQUEUE_MANY, RATE_PROBE_JOBS - i);
        await storage.enqueueMany(Array.from({ length: n }, () => ({ queue: QUEUE, payload: {} })));
      }
      const started = performance.now();
      worker.start();
      await pollUntil(
        () => (worker.assertAlive(), worker.handled >= RATE_PROBE_JOBS),
        WAIT_MS,
        'soak: the rate probe',
        5,
      );
      drainRate = RATE_PROBE_JOBS / ((performance.now() - started) / 1_000);
    } else {
      worker.start();
    }
    const rate = plan.rate ?? Math.round(drainRate! * plan.share);
    log(
      `soak: ${drainRate === undefined ? '' : `drain rate ${drainRate.toFixed(0)} jobs/s; `}producing ${rate} jobs/s`,
    );
    const pids = [worker.pid!];
    const now = async () => (await db.query<{ now: Date }>('SELECT now() AS now')).rows[0].now;
    let windowStart = await now();
    let before = await hotStats(db, schema);
    let cpu = {
      worker: cpuSnapshot(pids),
      backends: cpuSnapshot(await backendPids(benchUrl, appName)),
    };
    await worker.memory(10_000); // the first minute's RSS peak counts from here
    producer = startProducer(storage, rate, log);
    const minutes: SoakMinute[] = [];
    const t0 = performance.now();
    const warmup = plan.warmupMinutes ?? 0;
    for (let tick = 1; tick <= warmup + plan.minutes; tick++) {
      const warming = tick <= warmup;
      const minute = warming ? tick : tick - warmup;
      await sleep(Math.max(0, t0 + tick * 60_000 - performance.now()));
      worker.assertAlive();
      const windowEnd = await now();
      const backends = await backendPids(benchUrl, appName);
      const cpuNow = { worker: cpuSnapshot(pids), backends: cpuSnapshot(backends) };
      const archived = await archivedBetween(db, schema, windowStart, windowEnd);
      const stats = await hotStats(db, schema);
      const memory = await worker.memory(10_000);
      const cpuMs =
        cpuBetween(cpu.worker, cpuNow.worker).ms + cpuBetween(cpu.backends, cpuNow.backends).ms;
      const seconds = (windowEnd.getTime() - windowStart.getTime()) / 1_000;
      const row: SoakMinute = {
        minute,
        ...(warming ? { warmup: true } : {}),
        enqueued: producer.taken(),
        jobsPerSecond: archived.n / seconds,
        latencyP50: archived.p50,
        latencyP99: archived.p99,
        latencyCounts: archived.counts,
        backlog: stats.backlog,
        hotMb: stats.hotMb,
        hotIndexesMb: stats.hotIndexesMb,
        hotDeadTuples: stats.dead,
        hotAutovacuums: stats.autovacuums - before.autovacuums,
        archiveRows: stats.archiveRows,
        workerRssMb: memory.peakRssMb,
        workerHeapMb: memory.heapUsedMb,
        cpuPer1k: archived.n > 0 ? (cpuMs * 1_000) / archived.n : NaN,
      };
      minutes.push(row);
      log(
        `soak: ${warming ? 'warm-up ' : ''}minute ${minute}: ${row.jobsPerSecond.toFixed(0)} jobs/s, p50 ${row.latencyP50.toFixed(1)} ms, ` +
          `p99 ${row.latencyP99.toFixed(1)} ms, backlog ${row.backlog}, hot ${row.hotMb.toFixed(1)} MB ` +
          `(${row.hotDeadTuples} dead, ${row.hotAutovacuums} autovacuums), archive ${row.archiveRows}, ` +
          `RSS ${row.workerRssMb.toFixed(0)} MB, heap ${row.workerHeapMb.toFixed(0)} MB, ` +
          `CPU ${row.cpuPer1k.toFixed(1)} ms per 1,000`,
      );
      windowStart = windowEnd;
      before = stats;
      cpu = cpuNow;
    }
    await producer.stop();
    producer = undefined;
    await worker.stop(60_000);
    return {
      plan,
      ...(drainRate === undefined ? {} : { drainRate }),
      rate,
      minutes,
      schemaSettings:
        `${settings[0]?.reloptions?.join(', ') ?? 'PostgreSQL defaults'}; ` +
        `the server's autovacuum: ${settings[0]?.autovacuum}`,
    };
  } finally {
    await producer?.stop();
    worker.kill();
    await storage.close();
    await db.end().catch(() => undefined);
    await dropSchema(benchUrl, schema);
  }
}

/** The measured minutes of a soak, without its warm-up. */
export function measured(minutes: readonly SoakMinute[]): SoakMinute[] {
  return minutes.filter((m) => m.warmup !== true);
}

/** Mean of `f` over the minutes `from`–`to` (1-based, inclusive), of those that have a value. */
function meanOf(
  minutes: readonly SoakMinute[],
  from: number,
  to: number,
  f: (m: SoakMinute) => number,
): number {
  const values = minutes
    .filter((m) => m.minute >= from && m.minute <= to)
    .map(f)
    .filter(Number.isFinite);
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/** One of the issue's checks of a soak: what it compares, the figures, and whether it holds. */
export interface SoakCheck {
  what: string;
  figures: string;
  holds: boolean;
}

/**
 * The issue's "done when", read off a soak of at least 15 minutes: the last 5 minutes against the
 * first 5 (backlog not growing, p99 and CPU per 1,000 jobs within 10 %), `jobs_hot` with its
 * indexes within 1.2× its size at minute 10, and the worker's RSS within 10 % of minute 10. The p99
 * of five minutes is that of all their jobs (pooled counts), not the mean of five minutes' p99s,
 * which one minute's tail would move by a fifth of itself; the RSS of a minute is its peak.
 */
export function soakChecks(run: SoakRun): SoakCheck[] {
  const m = measured(run.minutes);
  const last = m.length;
  if (last < 15) return [];
  const at = (minute: number) => m.find((x) => x.minute === minute)!;
  const first5 = (f: (x: SoakMinute) => number) => meanOf(m, 1, 5, f);
  const last5 = (f: (x: SoakMinute) => number) => meanOf(m, last - 4, last, f);
  const within = (a: number, b: number, share: number) => a <= b * (1 + share);
  const fmt = (n: number, digits = 1) => n.toFixed(digits);
  // "Not growing": the last backlog is at most what the first five minutes saw at their largest,
  // or one second of production, whichever is more (a backlog of a few claims is no backlog).
  const firstBacklog = Math.max(...m.filter((x) => x.minute <= 5).map((x) => x.backlog), run.rate);
  const p99First = pooledPercentile(
    m.filter((x) => x.minute <= 5),
    0.99,
  );
  const p99Last = pooledPercentile(
    m.filter((x) => x.minute > last - 5),
    0.99,
  );
  const cpuFirst = first5((x) => x.cpuPer1k);
  const cpuLast = last5((x) => x.cpuPer1k);
  const hot10 = at(10).hotMb;
  const hotMax = Math.max(...m.filter((x) => x.minute >= 10).map((x) => x.hotMb));
  const rss10 = at(10).workerRssMb;
  const rssMax = Math.max(...m.filter((x) => x.minute >= 10).map((x) => x.workerRssMb));
  return [
    {
      what: 'backlog not growing (last minute against the first five)',
      figures: `${at(last).backlog} against at most ${firstBacklog}`,
      holds: at(last).backlog <= firstBacklog,
    },
    {
      what: 'p99 of the last 5 minutes within 10 % of the first 5 (all their jobs)',
      figures: `${fmt(p99Last)} against ${fmt(p99First)} ms`,
      holds: within(p99Last, p99First, 0.1),
    },
    {
      what: 'CPU per 1,000 jobs of the last 5 minutes within 10 % of the first 5',
      figures: `${fmt(cpuLast)} against ${fmt(cpuFirst)} ms`,
      holds: within(cpuLast, cpuFirst, 0.1),
    },
    {
      what: '`jobs_hot` with its indexes within 1.2× its size at minute 10',
      figures: `largest ${fmt(hotMax)} MB against ${fmt(hot10)} MB (${fmt(hotMax / hot10, 2)}×)`,
      holds: hotMax <= hot10 * 1.2,
    },
    {
      what: "the worker's RSS within 10 % of minute 10 (each minute's peak)",
      figures: `largest ${fmt(rssMax, 0)} MB against ${fmt(rss10, 0)} MB (${fmt(rssMax / rss10, 2)}×)`,
      holds: rssMax <= rss10 * 1.1,
    },
  ];
}

/** A soak's minutes as a table. */
export function soakTable(run: SoakRun): string {
  const lines = [
    '| minute | enqueued | archived (jobs/s) | p50 (ms) | p99 (ms) | backlog | `jobs_hot` (MB) | its indexes (MB) | dead tuples | autovacuums | archive rows | worker RSS, peak (MB) | heap (MB) | CPU per 1,000 (ms) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const m of run.minutes) {
    lines.push(
      `| ${m.warmup === true ? `w${m.minute}` : m.minute} | ${m.enqueued} | ${m.jobsPerSecond.toFixed(0)} | ${m.latencyP50.toFixed(1)} | ${m.latencyP99.toFixed(1)} | ` +
        `${m.backlog} | ${m.hotMb.toFixed(1)} | ${m.hotIndexesMb.toFixed(1)} | ${m.hotDeadTuples} | ${m.hotAutovacuums} | ` +
        `${m.archiveRows} | ${m.workerRssMb.toFixed(0)} | ${m.workerHeapMb.toFixed(0)} | ${m.cpuPer1k.toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}

/** The checks as a table (empty under 15 minutes: nothing to compare). */
export function soakChecksTable(checks: readonly SoakCheck[]): string {
  if (checks.length === 0)
    return '_Under 15 minutes: the first and last five minutes are not compared._';
  return [
    '| check (issue 31) | figures | verdict |',
    '|---|---|---|',
    ...checks.map((c) => `| ${c.what} | ${c.figures} | ${c.holds ? 'met' : '**missed**'} |`),
  ].join('\n');
}
