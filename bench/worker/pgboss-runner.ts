import { PgBoss } from 'pg-boss';
import type { BenchPayload, RunnerFactory } from './protocol';

/** Jobs per fetch: the "batch 100" of the comparison. */
export const PGBOSS_BATCH = 100;

/**
 * pg-boss 12 with its best settings for throughput and latency: LISTEN/NOTIFY (queue created with
 * `notify: true` by the parent), batches of 100, continuous fetching while batches come back full.
 * pg-boss has no per-job concurrency; it runs `localConcurrency` fetch-and-run workers, so we map
 * the scenario's concurrency C to ceil(C / 10) of them (10 → 1, 50 → 5).
 */
export const createPgBossRunner: RunnerFactory = async (config, onJob) => {
  const boss = new PgBoss({
    connectionString: config.url,
    schema: config.schema,
    useListenNotify: true,
    migrate: false,
    schedule: false,
  });
  boss.on('error', (error: unknown) => process.stderr.write(`[pg-boss error] ${String(error)}\n`));
  await boss.start();
  return {
    start: async () => {
      await boss.work<BenchPayload>(
        config.queue,
        {
          batchSize: PGBOSS_BATCH,
          localConcurrency: Math.ceil(config.concurrency / 10),
          burstWhenBatchFull: true,
          pollingIntervalSeconds: 0.5,
        },
        async (jobs) => {
          for (const job of jobs) onJob(job.data);
        },
      );
    },
    stop: () => boss.stop({ graceful: true, timeout: 10_000 }),
  };
};
