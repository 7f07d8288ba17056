import type { LoggerService } from '@nestjs/common';
import { resolveChokaQOptions } from '../../libs/chokaq/src/config/resolve-options';
import type {
  HandlerDefinition,
  HandlerLookup,
} from '../../libs/chokaq/src/interfaces/handler.interface';
import type { HandledJobs, ZombieRetryRule } from '../../libs/chokaq/src/interfaces/job.interface';
import type { StorageOptions } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import type { ResolvedChokaQOptions } from '../../libs/chokaq/src/interfaces/module-options.interface';
import { ChokaQMetrics } from '../../libs/chokaq/src/observability/chokaq-metrics';
import { ChokaQWorker } from '../../libs/chokaq/src/runtime/chokaq-worker';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import type { BenchPayload, MetricsVariant, RunnerFactory, WorkerConfig } from './protocol';
import { timeOperations } from './statement-timer';

/** Only warnings and errors reach stderr: per-job logging would be part of the measurement. */
const quietLogger: LoggerService = {
  log: () => undefined,
  debug: () => undefined,
  verbose: () => undefined,
  warn: (message: unknown) => process.stderr.write(`[chokaq warn] ${String(message)}\n`),
  error: (message: unknown) => process.stderr.write(`[chokaq error] ${String(message)}\n`),
};

/** One queue-wide handler: what a Nest app with a single `@JobHandler('bench')` would discover. */
class BenchHandlers implements HandlerLookup {
  private readonly definition: HandlerDefinition;

  constructor(
    private readonly queue: string,
    onJob: (payload: BenchPayload) => void,
  ) {
    this.definition = {
      queue,
      name: 'Bench.noop',
      invoke: async (payload) => onJob(payload as BenchPayload),
    };
  }

  resolve(queue: string): HandlerDefinition | undefined {
    return queue === this.queue ? this.definition : undefined;
  }

  handled(): HandledJobs {
    return { queues: [this.queue], types: [] };
  }

  /** The bench handler does not opt into retryZombies. */
  zombieRetryRules(): ZombieRetryRule[] {
    return [];
  }
}

/** The storage options of a bench run; shared with the parent so both open the same tables. */
export function chokaqStorageOptions(config: WorkerConfig): StorageOptions {
  return config.dialect === 'postgres'
    ? { type: 'postgres', url: config.url, schema: config.schema, autoCreateSchema: false }
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
  });
  const worker = new ChokaQWorker({
    storage,
    handlers: new BenchHandlers(config.queue, onJob),
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
      }
    },
  };
};
