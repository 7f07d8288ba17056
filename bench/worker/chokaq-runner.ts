import { resolveChokaQOptions } from '../../libs/chokaq/src/config/resolve-options';
import { setTimeout as delay } from 'node:timers/promises';
import { Pool } from 'pg';
import type {
  HandlerDefinition,
  HandlerLookup,
  JobBatchItem,
} from '../../libs/chokaq/src/interfaces/handler.interface';
import type { HandledJobs, ZombieRetryRule } from '../../libs/chokaq/src/interfaces/job.interface';
import type { StorageOptions } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import type { ResolvedChokaQOptions } from '../../libs/chokaq/src/interfaces/module-options.interface';
import { ChokaQMetrics } from '../../libs/chokaq/src/observability/chokaq-metrics';
import { ChokaQWorker } from '../../libs/chokaq/src/runtime/chokaq-worker';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { DEFAULT_BATCH_WAIT_MS } from '../../libs/chokaq/src/validation/decorator-options';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { quietLogger } from '../lib/quiet-logger';
import type { BenchPayload, MetricsVariant, RunnerFactory, WorkerConfig } from './protocol';
import { timeOperations } from './statement-timer';

/**
 * The bench's handler, as a Nest app would discover it: one queue-wide `@JobHandler('bench')`
 * (the default), or, for the batch-handler rows, a handler of the job type (the queue's name, as
 * the bench enqueues no type) that takes one job per call or batches of `shape.batch`, each call
 * waiting `shape.callMs` (a stand-in for the one round trip to another system a call makes).
 */
class BenchHandlers implements HandlerLookup {
  /** One definition per queue run (one queue unless the scale scenario names several). */
  private readonly definitions = new Map<string, HandlerDefinition>();

  constructor(
    private readonly queues: readonly string[],
    onJob: (payload: BenchPayload) => void,
    private readonly shape: WorkerConfig['handler'],
    /** With `shape.sink`: writes the numbers of one call's jobs, in one statement. */
    sink?: (numbers: number[]) => Promise<void>,
  ) {
    const callMs = shape?.callMs ?? 0;
    const call = async (payloads: BenchPayload[]) => {
      if (callMs > 0) await delay(callMs);
      if (sink) await sink(payloads.map((p) => p?.i ?? 0));
      for (const payload of payloads) onJob(payload);
    };
    for (const queue of queues) {
      this.definitions.set(queue, {
        queue,
        ...(shape === undefined ? {} : { type: queue }),
        name: 'Bench.noop',
        // The default handler is exactly what it always was: no wait, not even an `await`.
        invoke:
          callMs === 0 && sink === undefined
            ? async (payload) => onJob(payload as BenchPayload)
            : (payload) => call([payload as BenchPayload]),
        ...(shape !== undefined &&
          shape.batch > 0 && {
            batch: { size: shape.batch, waitMs: DEFAULT_BATCH_WAIT_MS },
            invokeBatch: (items: JobBatchItem[]) =>
              call(items.map((item) => item.payload as BenchPayload)),
          }),
      });
    }
  }

  resolve(queue: string): HandlerDefinition | undefined {
    return this.definitions.get(queue);
  }

  handled(): HandledJobs {
    return this.shape === undefined
      ? { queues: [...this.queues], types: [] }
      : { queues: [], types: this.queues.map((queue) => ({ queue, type: queue })) };
  }

  /** The bench handler does not opt into retryZombies. */
  zombieRetryRules(): ZombieRetryRule[] {
    return [];
  }
}

/** The storage options of a bench run; shared with the parent so both open the same tables. */
export function chokaqStorageOptions(config: WorkerConfig): StorageOptions {
  return config.dialect === 'postgres'
    ? {
        type: 'postgres',
        url: config.url,
        schema: config.schema,
        autoCreateSchema: false,
        ...(config.partitioning === undefined ? {} : { partitioning: config.partitioning }),
      }
    : { type: 'sqlite', database: config.file, schema: config.schema, autoCreateSchema: false };
}

/**
 * The worker's metrics for a metrics A/B variant, as the module would create them: `sdk` first
 * registers what an application would (an SDK MeterProvider whose reader is the Prometheus
 * exporter, no server: nothing scrapes during a drain). The SDK is imported only then, so the
 * other variants' processes never load it.
 */
async function metricsFor(
  variant: MetricsVariant | undefined,
  options: ResolvedChokaQOptions['metrics'],
): Promise<ChokaQMetrics | undefined> {
  if (variant === undefined) return undefined;
  if (variant === 'sdk') {
    const [{ metrics }, { MeterProvider }, { PrometheusExporter }] = await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-metrics'),
      import('@opentelemetry/exporter-prometheus'),
    ]);
    const exporter = new PrometheusExporter({ preventServerStart: true });
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }));
  }
  const created = ChokaQMetrics.create({ ...options, enabled: variant !== 'off' });
  if (created.enabled !== (variant === 'sdk')) {
    throw new Error(`metrics variant ${variant}: recording is ${created.enabled ? 'on' : 'off'}`);
  }
  return created;
}

/**
 * ChokaQ without Nest: `createJobStorage` + `ChokaQWorker`, exactly what the orchestrator wires,
 * with every option at its default except `worker.concurrency`.
 */
export const createChokaqRunner: RunnerFactory = async (config, onJob) => {
  const storageOptions = chokaqStorageOptions(config);
  let storage: JobStorage = await createJobStorage(storageOptions);
  if (config.timeStatements) storage = timeOperations(storage);
  const options = resolveChokaQOptions({
    storage: storageOptions,
    worker: { ...config.chokaqWorker, concurrency: config.concurrency },
    ...(config.retention === undefined ? {} : { retention: config.retention }),
  });
  const sink = config.handler?.sink ? await openSink(config) : undefined;
  const worker = new ChokaQWorker({
    storage,
    handlers: new BenchHandlers(
      config.queues ?? [config.queue],
      onJob,
      config.handler,
      sink?.write,
    ),
    options,
    logger: quietLogger,
    metrics: await metricsFor(config.metrics, options.metrics),
  });
  return {
    start: () => worker.start(),
    stop: async () => {
      try {
        await worker.stop();
      } finally {
        await storage.close();
        await sink?.close();
      }
    },
  };
};

/**
 * The batch-handler rows' stand-in for a handler's own database work (`--handler-sink`): a pool of
 * 10 connections writing each call's job numbers into `bench_sink` of the run's schema, one
 * INSERT per call: one row for a per-job handler, the whole batch for a batch handler.
 */
async function openSink(
  config: WorkerConfig,
): Promise<{ write: (numbers: number[]) => Promise<void>; close: () => Promise<void> }> {
  if (config.dialect !== 'postgres') throw new Error('--handler-sink runs on PostgreSQL only');
  const pool = new Pool({ connectionString: config.url, max: 10 });
  const table = `"${config.schema}".bench_sink`;
  await pool.query(`CREATE TABLE IF NOT EXISTS ${table} (i int NOT NULL)`);
  const insert = `INSERT INTO ${table} (i) SELECT unnest($1::int[])`;
  return {
    write: async (numbers) => void (await pool.query(insert, [numbers])),
    close: () => pool.end(),
  };
}
