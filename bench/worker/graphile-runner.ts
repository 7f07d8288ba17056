import { Logger, run, type Runner } from 'graphile-worker';
import { Pool } from 'pg';
import type { RunnerFactory } from './protocol';

/** graphile-worker logs every job at info; keep only warnings and errors. */
const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning')
    process.stderr.write(`[graphile ${level}] ${message}\n`);
});

/**
 * The documented performance preset (worker.graphile.org/docs/performance): a local queue of 500
 * and completion/failure batching with delay 0, pool of 25. `concurrentJobs` follows the scenario,
 * as ChokaQ's concurrency does.
 */
const PERFORMANCE_PRESET = {
  localQueue: { size: 500 },
  completeJobBatchDelay: 0,
  failJobBatchDelay: 0,
};

/** graphile-worker 0.17, either with its defaults or with the performance preset. */
export const createGraphileRunner: RunnerFactory = async (config, onJob) => {
  const preset = config.variant === 'preset';
  // The pool is ours and warmed before 'ready', as ChokaQ's storage pool is. Its size is
  // graphile-worker's own: 25 in the documented preset, 10 by default (graphile warns that 10 is
  // below concurrency 50; that is what its defaults do). Never larger: two worker processes must
  // stay far below max_connections (100), which other test suites on this server share.
  const pgPool = new Pool({ connectionString: config.url, max: preset ? 25 : 10 });
  pgPool.on('error', (error) => process.stderr.write(`[graphile pool] ${error.message}\n`));
  pgPool.on('connect', (client) =>
    client.on('error', (error) => process.stderr.write(`[graphile client] ${error.message}\n`)),
  );
  await pgPool.query('SELECT 1');
  let runner: Runner | undefined;
  return {
    start: async () => {
      runner = await run({
        pgPool,
        schema: config.schema,
        concurrency: config.concurrency,
        noHandleSignals: true,
        logger: quietLogger,
        taskList: { [config.queue]: async (payload) => onJob(payload as { t?: number }) },
        preset: preset ? { worker: PERFORMANCE_PRESET } : undefined,
      });
    },
    stop: async () => {
      try {
        await runner?.stop();
      } finally {
        await pgPool.end();
      }
    },
  };
};
