import { makeWorkerUtils } from 'graphile-worker';
import { Client } from 'pg';
import { benchSchemaName, dropSchema, queryCount } from '../lib/pg-admin';
import { BENCH_QUEUE, type BenchSystem, type SystemRun } from './bench-system';

/** graphile-worker with its documented performance preset, or with its defaults. */
export function graphileSystem(
  variant: 'preset' | 'default',
  benchUrl: string,
  version: string,
): BenchSystem {
  return {
    id: `graphile-${variant}`,
    label: `graphile-worker ${version} (${variant === 'preset' ? 'preset' : 'defaults'})`,
    dialect: 'postgres',
    peer: true,
    settings:
      variant === 'preset'
        ? 'documented performance preset: localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0, pool 25; concurrentJobs per scenario'
        : 'defaults (no local queue, no completion batching, poll 2000 ms, LISTEN/NOTIFY), pool 10; concurrentJobs per scenario (graphile warns that a pool below the concurrency is not optimal — that is its default)',
    open: () => openRun(variant, benchUrl),
  };
}

async function openRun(variant: string, benchUrl: string): Promise<SystemRun> {
  const schema = benchSchemaName('gw');
  const utils = await makeWorkerUtils({ connectionString: benchUrl, schema });
  await utils.migrate();
  const pg = new Client({ connectionString: benchUrl });
  await pg.connect();
  let added = 0;
  let closed = false;
  return {
    workerConfig: (concurrency) => ({
      kind: 'graphile',
      variant,
      dialect: 'postgres',
      url: benchUrl,
      schema,
      queue: BENCH_QUEUE,
      concurrency,
    }),
    enqueueOne: async (payload) => {
      await utils.addJob(BENCH_QUEUE, payload);
      added++;
    },
    enqueueMany: async (payloads) => {
      await utils.addJobs(payloads.map((payload) => ({ identifier: BENCH_QUEUE, payload })));
      added += payloads.length;
    },
    prefillChunk: 10_000,
    // Completed jobs are deleted: finished = added − still in the table.
    finishedCount: async () =>
      added - (await queryCount(pg, `SELECT count(*) AS n FROM ${schema}._private_jobs`)),
    close: async () => {
      if (closed) return;
      closed = true;
      await Promise.resolve()
        .then(() => utils.release())
        .catch(() => undefined);
      await pg.end().catch(() => undefined);
      await dropSchema(benchUrl, schema);
    },
  };
}
