import Database from 'better-sqlite3';
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { CHOKAQ_DEFAULTS } from '../../libs/chokaq/src/config/resolve-options';
import type { StorageOptions } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { METRIC_SEAL_SETTING } from '../../libs/chokaq/src/storage/postgres/sql';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import type { PartitionPeriod } from '../../libs/chokaq/src/storage/shared/partitions';
import {
  ARCHIVE_SPAN_MS,
  DLQ_SPAN_MS,
  SEAL_AGE_MS,
  SEED_QUEUES,
  seedStatements,
} from '../lib/admin-reads-seed';
import type { BenchDialect, ReadSizes } from '../lib/args';
import { benchSchemaName, dropSchema } from '../lib/pg-admin';
import { makePastPartitions, partitionCount } from '../lib/pg-partitions';
import { explainPostgres, explainSqlite, type CapturedStatement } from '../lib/statement-capture';

/*
 * The data set of the admin-reads scenario (issue 13), seeded once per dialect and shared by the
 * scenarios that read it: admin-reads times the `ChokaQAdmin` reads on it, and the deck scenario
 * loads The Deck over the same rows when both run in one invocation.
 */

type Log = (message: string) => void;

/** The SQLite table prefix (the library's default), as the other ChokaQ bench runs use. */
const SQLITE_PREFIX = 'chokaq_';

/** Where one dialect's data lives, and how the bench reaches it beside the storage. */
export interface Target {
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
  /** The schema's name unquoted (PostgreSQL), or the table prefix (SQLite). */
  schemaName: string;
  /**
   * After seeding: VACUUM/ANALYZE, then the seed flushed to disk, so nothing timed afterwards pays
   * for writing it back. The seed writes without waiting for the disk (`synchronous_commit = off`,
   * SQLite's `synchronous = OFF`), which leaves up to gigabytes of it dirty in the page caches; the
   * first statement that must reach the disk then waits for all of it (on SQLite, the first WAL
   * checkpoint's fsync of the database file: a single enqueue took 659 ms once, 100 enqueues
   * after a 1,000,000-row seed; about 0.3 ms each once the file had been flushed).
   */
  analyze(): Promise<void>;
  sizeMb(): Promise<number>;
  explain(statements: readonly CapturedStatement[]): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * A partitioned Archive and DLQ (PostgreSQL, `storage.partitioning`): the period, and how far back
 * from now the partitions of past periods reach, made before anything is seeded (the seed writes
 * past times, which would otherwise land in the default partitions).
 */
export interface SeedLayout {
  period: PartitionPeriod;
  archiveBackMs: number;
  dlqBackMs: number;
}

/** The layout that covers the admin-reads seed's spans (archive 3 days, DLQ 4 days back). */
export function seedSpansLayout(period: PartitionPeriod): SeedLayout {
  // A minute more than each span: the seed's oldest row is a second and a bit before it.
  return { period, archiveBackMs: ARCHIVE_SPAN_MS + 60_000, dlqBackMs: DLQ_SPAN_MS + 60_000 };
}

async function postgresTarget(benchUrl: string, period?: PartitionPeriod): Promise<Target> {
  const schema = benchSchemaName(period === undefined ? 'reads' : 'parts');
  const client = new Client({ connectionString: benchUrl });
  await client.connect();
  // Seeding only: a crash loses nothing that matters, and the commit waits drop out.
  await client.query('SET synchronous_commit = off');
  let closed = false;
  return {
    dialect: 'postgres',
    options: {
      type: 'postgres',
      url: benchUrl,
      schema,
      autoCreateSchema: true,
      ...(period === undefined ? {} : { partitioning: { period } }),
    },
    exec: async (sql, params = []) => {
      await client.query(sql, params);
    },
    rows: async <T>(sql: string, params: unknown[] = []) =>
      (await client.query(sql, params)).rows as T[],
    table: (name) => `"${schema}".${name}`,
    qualifier: `"${schema}"`,
    schemaName: schema,
    // VACUUM as well as ANALYZE: a million fresh inserts would start autovacuum on the archive
    // while the reads are timed; this way it has nothing left to do, and the tables are in the
    // state autovacuum keeps a long-lived database in (visibility map set, statistics current).
    analyze: async () => {
      for (const t of [
        'jobs_archive',
        'jobs_dlq',
        'jobs_hot',
        'metric_buckets',
        'metric_totals',
        'stats_summary',
      ]) {
        await client.query(`VACUUM (ANALYZE) "${schema}".${t}`);
      }
      await client.query(`ANALYZE "${schema}".queues`);
      await client.query(`ANALYZE "${schema}".workers`);
      // Writes every dirty buffer and fsyncs it (the bench connects as a superuser or a member of
      // pg_checkpoint): the seed's pages are on disk before anything is timed.
      await client.query('CHECKPOINT');
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
    schemaName: SQLITE_PREFIX,
    analyze: async () => {
      handle().exec('ANALYZE');
      handle().pragma('wal_checkpoint(TRUNCATE)');
      // The checkpoint ran with `synchronous = OFF`: the pages it wrote wait in the OS cache.
      const fd = openSync(file, 'r+');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
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

/**
 * The last retention pass of a running app (`retention.intervalMs`, jittered by 20 %), over windows
 * that keep every seeded row. On PostgreSQL it seals the metric totals of every queue
 * (`metric_totals`), which a throughput series of all queues reads instead of the buckets for the
 * sealed minutes. The seal is then put back to where it stands just before the next pass
 * (`SEAL_AGE_MS`), so the series reads the most buckets a running app's does: its worst case.
 */
async function retentionPass(storage: JobStorage, target: Target): Promise<void> {
  const keep = 30 * 86_400_000;
  await storage.applyRetention({
    archiveMs: keep,
    dlqMs: keep,
    metricsMs: CHOKAQ_DEFAULTS.retention.metricsMs,
    workersMs: keep,
  });
  if (target.dialect !== 'postgres') return;
  const mark = `date_trunc('minute', now()) - ${SEAL_AGE_MS / 60_000} * interval '1 minute'`;
  await target.exec(`DELETE FROM ${target.table('metric_totals')} WHERE bucket_utc >= ${mark}`);
  await target.exec(
    `UPDATE ${target.table('settings')} SET value = extract(epoch FROM ${mark})::text
     WHERE name = $1`,
    [METRIC_SEAL_SETTING],
  );
}

/** A seeded data set: where it lives, what it holds, and how long it took. */
export interface ReadsData {
  dialect: BenchDialect;
  target: Target;
  /** The `now` the seed derived every time from (epoch ms). */
  nowMs: number;
  seedSeconds: number;
  analyzeSeconds: number;
  /** Rows per table after seeding (counted once, untimed). */
  counts: Record<string, number>;
  /** Archived rows per queue, in queue order. */
  archivedByQueue: Map<string, number>;
  sizeMb: number;
  /** Partitions of the Archive and the DLQ (the default ones included); null when they are plain. */
  partitions: { period: PartitionPeriod; archive: number; dlq: number } | null;
  /** Drops the schema (PostgreSQL) or deletes the file (SQLite). */
  close(): Promise<void>;
}

/**
 * A fresh schema (PostgreSQL) or file (SQLite), created by the storage; with `layout`, its Archive
 * and DLQ partitioned and the partitions of the past periods it names made (PostgreSQL only). The
 * caller seeds it and closes it.
 */
export async function createTarget(
  dialect: BenchDialect,
  benchUrl: string,
  layout?: SeedLayout,
): Promise<Target> {
  if (layout !== undefined && dialect !== 'postgres') {
    throw new Error(`a partitioned data set is PostgreSQL's only (not ${dialect})`);
  }
  const target =
    dialect === 'postgres' ? await postgresTarget(benchUrl, layout?.period) : sqliteTarget();
  try {
    // The storage creates (migrates) the schema and, with `partitioning`, converts the Archive and
    // the DLQ and makes the current period's partitions and those ahead.
    await (await createJobStorage(target.options)).close();
    if (layout !== undefined) {
      const nowMs = Date.now();
      const back = { jobs_archive: layout.archiveBackMs, jobs_dlq: layout.dlqBackMs } as const;
      for (const [table, ms] of Object.entries(back) as Array<[keyof typeof back, number]>) {
        await makePastPartitions(
          target,
          target.schemaName,
          table,
          layout.period,
          nowMs - ms,
          nowMs,
        );
      }
    }
    return target;
  } catch (error) {
    await target.close();
    throw error;
  }
}

/**
 * A fresh schema (PostgreSQL) or file (SQLite) created by the storage ({@link createTarget}, with
 * `layout` partitioned), bulk-seeded by `INSERT … SELECT` (`lib/admin-reads-seed.ts`), the
 * counters and controls of every queue and six Workers rows added, then analysed. The caller
 * closes it.
 */
export async function seedReadsData(
  dialect: BenchDialect,
  benchUrl: string,
  sizes: ReadSizes,
  log: Log,
  layout?: SeedLayout,
): Promise<ReadsData> {
  // The seed writes into exactly the tables (or partitions) the storage created.
  const target = await createTarget(dialect, benchUrl, layout);
  try {
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
    const storage = await createJobStorage(target.options);
    try {
      await seedWorkers(storage);
      await retentionPass(storage, target);
    } finally {
      await storage.close();
    }
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
    const partitions =
      layout === undefined
        ? null
        : {
            period: layout.period,
            archive: await partitionCount(target, target.table('jobs_archive')),
            dlq: await partitionCount(target, target.table('jobs_dlq')),
          };
    if (partitions) {
      log(`  partitions: ${partitions.archive} of the Archive, ${partitions.dlq} of the DLQ`);
    }
    return {
      dialect,
      target,
      nowMs,
      seedSeconds,
      analyzeSeconds,
      counts,
      archivedByQueue,
      sizeMb,
      partitions,
      close: () => target.close(),
    };
  } catch (error) {
    await target.close();
    throw error;
  }
}
