import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { ChokaQAdmin } from '../../libs/chokaq/src/admin/chokaq-admin.service';
import { resolveChokaQOptions } from '../../libs/chokaq/src/config/resolve-options';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import type {
  CountQuery,
  ListPage,
  ListQuery,
} from '../../libs/chokaq/src/interfaces/job-view.interface';
import type { StorageOptions } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import {
  misses,
  PAGE_ROWS,
  targetMs,
  type AdminReadsRun,
  type ReadKind,
  type ReadTiming,
} from '../lib/admin-reads-report';
import { readFilters, SEARCH_TERM, SEED_QUEUES, seedStatements } from '../lib/admin-reads-seed';
import type { BenchDialect, ReadSizes } from '../lib/args';
import { benchSchemaName, dropSchema } from '../lib/pg-admin';
import { captureStatements, explainPostgres, explainSqlite } from '../lib/statement-capture';
import { percentile } from '../lib/stats';

type Log = (message: string) => void;

/** The SQLite table prefix (the library's default), as the other ChokaQ bench runs use. */
const SQLITE_PREFIX = 'chokaq_';
/** Rows per page of every timed list read: what a dashboard table shows. */
const PAGE = PAGE_ROWS;
/** Rows per page while walking to the deep page (not timed). */
const WALK_PAGE = 1_000;

/** Where one dialect's data lives, and how the bench reaches it beside the storage. */
interface Target {
  dialect: BenchDialect;
  options: StorageOptions;
  /** Runs one seeding statement on the bench's own connection. */
  exec(sql: string, params?: unknown[]): Promise<void>;
  /** Rows of a query on the bench's own connection. */
  rows<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /** A table name, qualified. */
  table(name: string): string;
  /** The qualifier the seed statements use (quoted schema, or the table prefix). */
  qualifier: string;
  /** VACUUM/ANALYZE after seeding. */
  analyze(): Promise<void>;
  sizeMb(): Promise<number>;
  explain(statements: Awaited<ReturnType<typeof captureStatements>>): Promise<string[]>;
  close(): Promise<void>;
}

async function postgresTarget(benchUrl: string): Promise<Target> {
  const schema = benchSchemaName('reads');
  const client = new Client({ connectionString: benchUrl });
  await client.connect();
  // Seeding only: a crash loses nothing that matters, and the commit waits drop out.
  await client.query('SET synchronous_commit = off');
  let closed = false;
  return {
    dialect: 'postgres',
    options: { type: 'postgres', url: benchUrl, schema, autoCreateSchema: true },
    exec: async (sql, params = []) => {
      await client.query(sql, params);
    },
    rows: async <T>(sql: string, params: unknown[] = []) =>
      (await client.query(sql, params)).rows as T[],
    table: (name) => `"${schema}".${name}`,
    qualifier: `"${schema}"`,
    // VACUUM as well as ANALYZE: a million fresh inserts would start autovacuum on the archive
    // while the reads are timed; this way it has nothing left to do, and the tables are in the
    // state autovacuum keeps a long-lived database in (visibility map set, statistics current).
    analyze: async () => {
      for (const t of ['jobs_archive', 'jobs_dlq', 'jobs_hot', 'metric_buckets', 'stats_summary']) {
        await client.query(`VACUUM (ANALYZE) "${schema}".${t}`);
      }
      await client.query(`ANALYZE "${schema}".queues`);
      await client.query(`ANALYZE "${schema}".workers`);
    },
    sizeMb: async () => {
      const { rows } = await client.query<{ bytes: string }>(
        `SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND c.relkind = 'r'`,
        [schema],
      );
      return Number(rows[0].bytes) / 2 ** 20;
    },
    explain: (statements) => explainPostgres(benchUrl, statements),
    close: async () => {
      if (closed) return;
      closed = true;
      await client.end().catch(() => undefined);
      await dropSchema(benchUrl, schema);
    },
  };
}

function sqliteTarget(): Target {
  const dir = mkdtempSync(join(tmpdir(), 'chokaq-bench-reads-'));
  const file = join(dir, 'reads.db');
  let db: Database.Database | undefined;
  const handle = () => {
    // Opened after the storage created the schema (and with it WAL mode, which is persistent).
    db ??= new Database(file);
    db.pragma('busy_timeout = 5000');
    // Seeding only: a crash loses nothing that matters.
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -262144');
    return db;
  };
  return {
    dialect: 'sqlite',
    options: { type: 'sqlite', database: file, schema: SQLITE_PREFIX, autoCreateSchema: true },
    exec: async (sql, params = []) => {
      handle()
        .prepare(sql)
        .run(...params);
    },
    rows: async <T>(sql: string, params: unknown[] = []) =>
      handle()
        .prepare(sql)
        .all(...params) as T[],
    table: (name) => `${SQLITE_PREFIX}${name}`,
    qualifier: SQLITE_PREFIX,
    analyze: async () => {
      handle().exec('ANALYZE');
      handle().pragma('wal_checkpoint(TRUNCATE)');
    },
    sizeMb: async () => {
      const size = (path: string) => {
        try {
          return statSync(path).size;
        } catch {
          return 0;
        }
      };
      return (size(file) + size(`${file}-wal`)) / 2 ** 20;
    },
    explain: async (statements) => explainSqlite(file, statements),
    close: async () => {
      db?.close();
      db = undefined;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Lifetime counters and controls of the 20 queues, derived from the seeded rows (as if retention
 * had never run), so the summary and the queue stats show plausible figures.
 */
async function seedQueueRows(target: Target, nowMs: number): Promise<Map<string, number>> {
  const pg = target.dialect === 'postgres';
  const time = (ms: number) => (pg ? new Date(ms) : ms);
  const byQueue = new Map<
    string,
    { succeeded: number; retried: number; failed: number; cancelled: number }
  >();
  for (const queue of SEED_QUEUES)
    byQueue.set(queue, { succeeded: 0, retried: 0, failed: 0, cancelled: 0 });
  for (const r of await target.rows<{
    queue: string;
    n: number | string;
    retried: number | string;
  }>(
    `SELECT queue, count(*) AS n, sum(attempt_count - 1) AS retried FROM ${target.table('jobs_archive')} GROUP BY queue`,
  )) {
    Object.assign(byQueue.get(r.queue)!, { succeeded: Number(r.n), retried: Number(r.retried) });
  }
  for (const r of await target.rows<{ queue: string; status: number; n: number | string }>(
    `SELECT queue, status, count(*) AS n FROM ${target.table('jobs_dlq')} GROUP BY queue, status`,
  )) {
    const counts = byQueue.get(r.queue)!;
    if (Number(r.status) === 5) counts.cancelled += Number(r.n);
    else counts.failed += Number(r.n);
  }
  for (const [i, queue] of SEED_QUEUES.entries()) {
    const c = byQueue.get(queue)!;
    await target.exec(
      `INSERT INTO ${target.table('stats_summary')} (queue, succeeded_total, failed_total,
         cancelled_total, retried_total, resurrected_total, last_activity_utc)
       VALUES (${pg ? '$1, $2, $3, $4, $5, $6, $7' : '?, ?, ?, ?, ?, ?, ?'})`,
      [queue, c.succeeded, c.failed, c.cancelled, c.retried + c.failed * 2, i % 3, time(nowMs)],
    );
    // One paused queue, two with a worker budget.
    await target.exec(
      `INSERT INTO ${target.table('queues')} (name, is_paused, is_active, max_workers, last_updated_utc)
       VALUES (${pg ? '$1, $2, true, $3, $4' : '?, ?, 1, ?, ?'})`,
      [
        queue,
        pg ? queue === 'cleanup' : Number(queue === 'cleanup'),
        queue === 'emails' ? 20 : queue === 'billing' ? 10 : null,
        time(nowMs),
      ],
    );
  }
  return new Map([...byQueue].map(([queue, c]) => [queue, c.succeeded]));
}

/** A handful of worker processes: four running, one draining, one stopped. */
async function seedWorkers(storage: JobStorage): Promise<void> {
  for (let w = 0; w < 6; w++) {
    const queues = SEED_QUEUES.filter((_, i) => i % 6 === w || w === 0);
    await storage.upsertWorker({
      workerId: `worker-${w}`,
      host: `app-${w % 3}.internal`,
      pid: 4_000 + w,
      libraryVersion: '0.1.0',
      concurrency: 20,
      running: w === 5 ? 0 : 3 + w,
      handled: { queues, types: [] },
      circuits: w === 1 ? { 'webhooks/webhooks.send': 'open' } : {},
      draining: w === 4,
      starting: true,
    });
  }
  await storage.markWorkerStopped('worker-5');
}

/** The cursor after `rows` rows of a list (walked in pages of {@link WALK_PAGE}), or null if it has fewer. */
async function cursorAfter<F>(
  list: (query: ListQuery<F>) => Promise<ListPage>,
  filter: F | undefined,
  rows: number,
): Promise<string | null> {
  let cursor: string | undefined;
  let seen = 0;
  while (seen < rows) {
    const page = await list({ filter, limit: Math.min(WALK_PAGE, rows - seen), cursor });
    seen += page.items.length;
    if (!page.nextCursor) return null;
    cursor = page.nextCursor;
  }
  return cursor ?? null;
}

/** One timed read: a name, whether it is a search, and the call. */
interface Read {
  name: string;
  kind: ReadKind;
  call: () => Promise<unknown>;
  /** Says what the call returned (checked on the warm-up call). */
  describe?: (result: unknown) => string;
  skipped?: string;
}

/** Every read of the scenario, as `ChokaQAdmin` calls. */
async function buildReads(
  admin: ChokaQAdmin,
  sizes: ReadSizes,
  nowMs: number,
  log: Log,
): Promise<Read[]> {
  const { queue, type, from, to } = readFilters(nowMs);
  const deepAfter = sizes.deepRow - PAGE;
  const rowsOf = (k: number) => `${k.toLocaleString('en-US')} row${k === 1 ? '' : 's'}`;
  const pageNote = (result: unknown) => {
    const page = result as ListPage;
    return `${rowsOf(page.items.length)}${page.scanLimited ? ', stopped at the scan bound' : ''}`;
  };
  const reads: Read[] = [
    { name: 'getSummary', kind: 'read', call: () => admin.getSummary() },
    { name: 'getQueueStats', kind: 'read', call: () => admin.getQueueStats() },
    { name: 'getQueueHealth', kind: 'read', call: () => admin.getQueueHealth() },
    {
      name: 'getQueueOutcomes, 5 min',
      kind: 'read',
      call: () => admin.getQueueOutcomes(),
      describe: (r) => `${(r as unknown[]).length} queues`,
    },
    {
      name: 'getQueueOutcomes, 24 h',
      kind: 'read',
      call: () => admin.getQueueOutcomes({ minutes: 1_440 }),
      describe: (r) => `${(r as unknown[]).length} queues`,
    },
    {
      name: 'listActive, first page',
      kind: 'read',
      call: () => admin.listActive({ limit: PAGE }),
      describe: pageNote,
    },
  ];
  const lists = [
    {
      label: 'listArchive',
      pillar: 'archive' as const,
      list: (q: ListQuery<object>) => admin.listArchive(q),
      filters: [
        ['', undefined],
        ['queue', { queue }],
        ['queue + type', { queue, type }],
        ['time range', { from, to }],
      ] as Array<[string, object | undefined]>,
    },
    {
      label: 'listDlq',
      pillar: 'dlq' as const,
      list: (q: ListQuery<object>) => admin.listDlq(q),
      filters: [
        ['', undefined],
        ['queue', { queue }],
        ['queue + type', { queue, type }],
        ['reason', { reason: FailureReason.MaxRetriesExceeded }],
        ['time range', { from, to }],
      ] as Array<[string, object | undefined]>,
    },
  ];
  for (const { label, pillar, list, filters } of lists) {
    for (const [what, filter] of filters) {
      const suffix = what ? `, ${what}` : '';
      // How many rows the filter matches, counted once (not timed), to say where a page sits.
      const matching = await admin.countExactly({ pillar, filter } as CountQuery);
      const of = `of ${matching.toLocaleString('en-US')} matching`;
      reads.push({
        name: `${label}, first page${suffix}`,
        kind: 'read',
        call: () => list({ filter, limit: PAGE }),
        describe: (r) => `${pageNote(r)} ${of}`,
      });
      log(`  walking ${label}${suffix} to row ${deepAfter} (not timed)`);
      const cursor = await cursorAfter(list, filter, deepAfter);
      const name = `${label}, deep page${suffix}`;
      reads.push(
        cursor === null
          ? { name, kind: 'read', call: async () => undefined, skipped: `only ${rowsOf(matching)}` }
          : {
              name,
              kind: 'read',
              call: () => list({ filter, limit: PAGE, cursor }),
              describe: (r) =>
                `${pageNote(r)} from row ${(deepAfter + 1).toLocaleString('en-US')} ${of}`,
            },
      );
    }
  }
  const seriesTo = new Date(nowMs);
  const seriesFrom = new Date(nowMs - 24 * 3_600_000);
  reads.push(
    {
      name: 'getThroughputSeries, 24 h at 1 min',
      kind: 'read',
      call: () => admin.getThroughputSeries({ from: seriesFrom, to: seriesTo, stepMs: 60_000 }),
      describe: (r) => `${(r as unknown[]).length} points`,
    },
    {
      name: 'getThroughputSeries, 24 h at 1 min, one queue',
      kind: 'read',
      call: () =>
        admin.getThroughputSeries({ queue, from: seriesFrom, to: seriesTo, stepMs: 60_000 }),
      describe: (r) => `${(r as unknown[]).length} points`,
    },
    {
      name: 'getTopErrors',
      kind: 'read',
      call: () => admin.getTopErrors(),
      describe: (r) => `${(r as unknown[]).length} families`,
    },
    {
      name: 'listWorkers',
      kind: 'read',
      call: () => admin.listWorkers(),
      describe: (r) => `${(r as unknown[]).length} workers`,
    },
    {
      name: `listArchive, search '${SEARCH_TERM}'`,
      kind: 'search',
      call: () => admin.listArchive({ filter: { search: SEARCH_TERM }, limit: PAGE }),
      describe: pageNote,
    },
    {
      name: `listDlq, search '${SEARCH_TERM}'`,
      kind: 'search',
      call: () => admin.listDlq({ filter: { search: SEARCH_TERM }, limit: PAGE }),
      describe: pageNote,
    },
  );
  return reads;
}

/**
 * The admin-reads scenario on one dialect (issue 13, "Measure it"): a fresh schema (PostgreSQL) or
 * file (SQLite) created by the storage, bulk-seeded by `INSERT … SELECT`, analysed; then every
 * dashboard read as a `ChokaQAdmin` call (built without Nest over `createJobStorage`, as the
 * module wires it), one unmeasured round, then `repetitions` rounds of every read in turn (a
 * dashboard refresh asks them all), each call timed end to end. No worker runs.
 */
export async function runAdminReads(
  dialect: BenchDialect,
  benchUrl: string,
  sizes: ReadSizes,
  log: Log,
  waitForQuiet: () => Promise<void>,
): Promise<AdminReadsRun> {
  const target = dialect === 'postgres' ? await postgresTarget(benchUrl) : sqliteTarget();
  let storage: JobStorage | undefined;
  try {
    // The storage creates (migrates) the schema; the seed writes into exactly those tables.
    await (await createJobStorage(target.options)).close();
    const nowMs = Date.now();
    const seedStarted = performance.now();
    const statements = seedStatements(dialect, target.qualifier, sizes, nowMs);
    let done = 0;
    for (const statement of statements) {
      const started = performance.now();
      await target.exec(statement.sql);
      done++;
      log(
        `  seeded ${statement.rows.toLocaleString('en-US')} ${statement.label} rows in ` +
          `${((performance.now() - started) / 1_000).toFixed(1)} s (${done}/${statements.length})`,
      );
    }
    const archivedByQueue = await seedQueueRows(target, nowMs);
    const seedSeconds = (performance.now() - seedStarted) / 1_000;
    const analyzeStarted = performance.now();
    await target.analyze();
    const analyzeSeconds = (performance.now() - analyzeStarted) / 1_000;
    log(`  seeded in ${seedSeconds.toFixed(0)} s, analysed in ${analyzeSeconds.toFixed(0)} s`);

    const counts: Record<string, number> = {};
    for (const t of ['jobs_archive', 'jobs_dlq', 'jobs_hot', 'metric_buckets']) {
      const [row] = await target.rows<{ n: number | string }>(
        `SELECT count(*) AS n FROM ${target.table(t)}`,
      );
      counts[t] = Number(row.n);
    }
    const sizeMb = await target.sizeMb();
    log(`  rows ${JSON.stringify(counts)}, ${sizeMb.toFixed(0)} MB`);

    storage = await createJobStorage(target.options);
    await seedWorkers(storage);
    const admin = new ChokaQAdmin(
      storage,
      resolveChokaQOptions({ storage: target.options }),
      new WorkerRegistry(),
    );
    const reads = await buildReads(admin, sizes, nowMs, log);
    const live = reads.filter((r) => !r.skipped);

    await waitForQuiet();
    const loadBefore = loadavg()[0];
    const notes = new Map<Read, string>();
    // Warm-up round: each read once, unmeasured (plans cached, pages in memory).
    for (const read of live) {
      const result = await read.call();
      if (read.describe) notes.set(read, read.describe(result));
    }
    const samples = new Map<Read, number[]>(live.map((r) => [r, []]));
    for (let round = 0; round < sizes.repetitions; round++) {
      for (const read of live) {
        const started = performance.now();
        await read.call();
        samples.get(read)!.push(performance.now() - started);
      }
    }
    const loadAfter = loadavg()[0];

    const timings: ReadTiming[] = reads.map((read) => {
      if (read.skipped) {
        return {
          name: read.name,
          kind: read.kind,
          samplesMs: [],
          p50: NaN,
          p95: NaN,
          max: NaN,
          skipped: read.skipped,
        };
      }
      const values = samples.get(read)!;
      const sorted = [...values].sort((a, b) => a - b);
      return {
        name: read.name,
        kind: read.kind,
        samplesMs: values,
        p50: percentile(sorted, 50),
        p95: percentile(sorted, 95),
        max: sorted[sorted.length - 1],
        note: notes.get(read),
      };
    });
    for (const t of timings) {
      if (t.skipped) log(`  ${t.name}: not run (${t.skipped})`);
      else
        log(
          `  ${t.name}: p50 ${t.p50.toFixed(1)} ms, p95 ${t.p95.toFixed(1)} ms ` +
            `(target ${targetMs(dialect, t.kind)})${t.note ? `, ${t.note}` : ''}`,
        );
    }

    const run: AdminReadsRun = {
      dialect,
      seedSeconds,
      analyzeSeconds,
      counts,
      queueShares: [...archivedByQueue.values()].map((k) => k / Math.max(1, counts.jobs_archive)),
      sizeMb,
      loadBefore,
      loadAfter,
      timings,
      plans: [],
    };
    // A read over its target: the statements it sends, explained, for whoever decides the fix.
    for (const miss of misses(run)) {
      const read = reads.find((r) => r.name === miss.name)!;
      const captured = await captureStatements(dialect, read.call);
      const plans = await target.explain(captured);
      run.plans.push({
        read: miss.name,
        p95: miss.p95,
        statements: captured.map((c, i) => ({ sql: c.sql, plan: plans[i] })),
      });
      log(`  ${miss.name} missed its target: ${captured.length} statement(s) explained`);
    }
    return run;
  } finally {
    await storage?.close().catch(() => undefined);
    await target.close();
  }
}
