import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { CHOKAQ_DEFAULTS } from '../../libs/chokaq/src/config/resolve-options';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { MAX_ENQUEUE_MANY } from '../../libs/chokaq/src/validation/limits';
import type { BenchDialect, BenchHandlerShape } from '../lib/args';
import { benchSchemaName, dropSchema, queryCount } from '../lib/pg-admin';
import { chokaqStorageOptions } from '../worker/chokaq-runner';
import type { MetricsVariant, WorkerConfig } from '../worker/protocol';
import { BENCH_QUEUE, type BenchSystem, type CrashProbe, type SystemRun } from './bench-system';

const SQLITE_PREFIX = 'chokaq_';

const DEFAULTS = CHOKAQ_DEFAULTS.worker;

/**
 * The worker settings a `--start-ahead=N` run overrides: `startAhead`, and `prefetch` raised to N
 * when N is above its default, since prefetch caps how many rows wait ahead.
 */
function aheadSettings(startAhead: number): { startAhead: number; prefetch: number } {
  return { startAhead, prefetch: Math.max(DEFAULTS.prefetch, startAhead) };
}

/** What the metrics A/B calls each variant. */
export const METRICS_VARIANTS: ReadonlyArray<{ variant: MetricsVariant; label: string }> = [
  { variant: 'off', label: 'metrics off' },
  { variant: 'api', label: 'API, no SDK' },
  { variant: 'sdk', label: 'SDK registered' },
];

/**
 * ChokaQ on PostgreSQL (schema per run in `chokaq_bench`) or SQLite (temporary file per run). With
 * `metrics`, one variant of the metrics A/B (its id is `chokaq-metrics-<variant>`).
 */
export function chokaqSystem(
  dialect: BenchDialect,
  benchUrl: string,
  metrics?: MetricsVariant,
  startAhead?: number,
  handler?: BenchHandlerShape,
): BenchSystem {
  const variant = METRICS_VARIANTS.find((v) => v.variant === metrics);
  return {
    id: variant ? `chokaq-metrics-${variant.variant}` : 'chokaq',
    label: variant ? `ChokaQ, ${variant.label}` : 'ChokaQ',
    dialect,
    peer: false,
    retention: true,
    settings:
      `ChokaQ defaults (prefetch ${startAhead === undefined ? DEFAULTS.prefetch : aheadSettings(startAhead).prefetch}, batch ${DEFAULTS.batchSize}, poll ${DEFAULTS.pollIntervalMs} ms, completion batch 500 / 20 ms, ` +
      `jobs started in their claim when a slot is free${dialect === 'postgres' ? `, start ahead ${startAhead ?? DEFAULTS.startAhead}` : ''}` +
      `${dialect === 'postgres' ? ', prepared statements, LISTEN/NOTIFY, pool 10' : ', WAL, synchronous FULL except claims'}), concurrency per scenario; ` +
      'driven without Nest (createJobStorage + ChokaQWorker)' +
      (handler === undefined
        ? ''
        : `; handler: ${handler.batch === 0 ? 'one job per call' : `batches of ${handler.batch}`}, ${handler.callMs} ms per call${handler.sink ? ', one INSERT per call' : ''}`),
    open: () => openRun(dialect, benchUrl, metrics, startAhead, handler),
  };
}

async function openRun(
  dialect: BenchDialect,
  benchUrl: string,
  metrics: MetricsVariant | undefined,
  startAhead: number | undefined,
  handler: BenchHandlerShape | undefined,
): Promise<SystemRun> {
  let dir: string | undefined;
  const base: Omit<WorkerConfig, 'concurrency'> =
    dialect === 'postgres'
      ? {
          kind: 'chokaq',
          variant: 'default',
          dialect,
          url: benchUrl,
          schema: benchSchemaName('cq'),
          queue: BENCH_QUEUE,
        }
      : (() => {
          dir = mkdtempSync(join(tmpdir(), 'chokaq-bench-'));
          const file = join(dir, 'bench.db');
          return {
            kind: 'chokaq',
            variant: 'default',
            dialect,
            file,
            schema: SQLITE_PREFIX,
            queue: BENCH_QUEUE,
          };
        })();
  const storage = await createJobStorage({
    ...chokaqStorageOptions({ ...base, concurrency: 1 }),
    autoCreateSchema: true,
  });
  // Counts come over a separate connection, as an operator's query would.
  const pg = dialect === 'postgres' ? new Client({ connectionString: benchUrl }) : undefined;
  await pg?.connect();
  const sqlite = base.file ? new Database(base.file, { readonly: true }) : undefined;
  sqlite?.pragma('busy_timeout = 5000');
  const archive =
    dialect === 'postgres' ? `${base.schema}.jobs_archive` : `${SQLITE_PREFIX}jobs_archive`;
  const table = (name: string) => `${base.schema}.${name}`;
  const crashProbe: CrashProbe | undefined = pg && {
    startedPayloads: async () =>
      (
        await pg.query<{ i: number }>(
          `SELECT (payload::json ->> 'i')::int AS i FROM ${table('jobs_hot')} WHERE status = 2`,
        )
      ).rows.map((r) => r.i),
    fetchedCount: () =>
      queryCount(pg, `SELECT count(*) AS n FROM ${table('jobs_hot')} WHERE status = 1`),
    rescueAll: async () => {
      for (;;) {
        const zombies = await storage.archiveZombies(1);
        const recovered = await storage.recoverAbandoned(1);
        if (zombies.dlq.length + zombies.retried.length + recovered === 0) return;
      }
    },
    pillars: async () => {
      const { rows } = await pg.query<Record<string, string>>(
        `SELECT (SELECT count(*) FROM ${table('jobs_hot')}) AS hot,
                (SELECT count(*) FROM ${table('jobs_archive')}) AS archive,
                (SELECT count(*) FROM ${table('jobs_dlq')}) AS dlq,
                (SELECT count(*) FROM (SELECT id FROM ${table('jobs_archive')}
                                       UNION SELECT id FROM ${table('jobs_dlq')}) u) AS distinct_ids`,
      );
      const [r] = rows;
      return {
        hot: Number(r.hot),
        archive: Number(r.archive),
        dlq: Number(r.dlq),
        distinct: Number(r.distinct_ids),
      };
    },
  };
  let closed = false;
  return {
    workerConfig: (concurrency) => ({
      ...base,
      concurrency,
      metrics,
      ...(startAhead === undefined ? {} : { chokaqWorker: aheadSettings(startAhead) }),
      ...(handler === undefined ? {} : { handler }),
    }),
    enqueueOne: async (payload) => {
      await storage.enqueue({ queue: BENCH_QUEUE, payload });
    },
    enqueueMany: async (payloads) => {
      await storage.enqueueMany(payloads.map((payload) => ({ queue: BENCH_QUEUE, payload })));
    },
    prefillChunk: MAX_ENQUEUE_MANY,
    crashProbe,
    retentionPass: async () => {
      const keep = 365 * 24 * 3_600_000;
      const removed = await storage.applyRetention({
        archiveMs: 0,
        dlqMs: keep,
        metricsMs: keep,
        workersMs: keep,
        auditMs: keep,
      });
      return removed.archive;
    },
    finishedCount: async () =>
      pg
        ? queryCount(pg, `SELECT count(*) AS n FROM ${archive}`)
        : Number(
            (sqlite!.prepare(`SELECT count(*) AS n FROM ${archive}`).get() as { n: number }).n,
          ),
    close: async () => {
      if (closed) return;
      closed = true;
      await storage.close().catch(() => undefined);
      await pg?.end().catch(() => undefined);
      sqlite?.close();
      if (dialect === 'postgres') await dropSchema(benchUrl, base.schema);
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
