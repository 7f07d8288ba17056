import { PgBoss } from 'pg-boss';
import { Client } from 'pg';
import { benchSchemaName, dropSchema, queryCount } from '../lib/pg-admin';
import { PGBOSS_BATCH } from '../worker/pgboss-runner';
import { BENCH_QUEUE, type BenchSystem, type SystemRun } from './bench-system';

/** pg-boss with LISTEN/NOTIFY and batches of 100 (its best settings here). */
export function pgBossSystem(benchUrl: string, version: string): BenchSystem {
  return {
    id: 'pg-boss',
    label: `pg-boss ${version}`,
    dialect: 'postgres',
    peer: true,
    settings:
      `useListenNotify + queue notify, work batchSize ${PGBOSS_BATCH}, burstWhenBatchFull, ` +
      'localConcurrency = ceil(concurrency / 10), polling 0.5 s',
    open: () => openRun(benchUrl),
  };
}

async function openRun(benchUrl: string): Promise<SystemRun> {
  const schema = benchSchemaName('pb');
  const boss = new PgBoss({
    connectionString: benchUrl,
    schema,
    supervise: false,
    schedule: false,
  });
  boss.on('error', (error: unknown) => process.stderr.write(`[pg-boss error] ${String(error)}\n`));
  await boss.start();
  await boss.createQueue(BENCH_QUEUE, { notify: true });
  const pg = new Client({ connectionString: benchUrl });
  await pg.connect();
  let closed = false;
  return {
    workerConfig: (concurrency) => ({
      kind: 'pgboss',
      variant: 'best',
      dialect: 'postgres',
      url: benchUrl,
      schema,
      queue: BENCH_QUEUE,
      concurrency,
    }),
    enqueueOne: async (payload) => {
      await boss.send(BENCH_QUEUE, payload);
    },
    enqueueMany: async (payloads) => {
      await boss.insert(
        BENCH_QUEUE,
        payloads.map((data) => ({ data })),
      );
    },
    prefillChunk: 10_000,
    finishedCount: () =>
      queryCount(pg, `SELECT count(*) AS n FROM ${schema}.job WHERE state = 'completed'`),
    close: async () => {
      if (closed) return;
      closed = true;
      await boss.stop({ graceful: false, timeout: 5_000 }).catch(() => undefined);
      await pg.end().catch(() => undefined);
      await dropSchema(benchUrl, schema);
    },
  };
}
