import type { LoggerService } from '@nestjs/common';
import { resolveChokaQOptions } from '../../libs/chokaq/src/config/resolve-options';
import type {
  HandlerDefinition,
  HandlerLookup,
} from '../../libs/chokaq/src/interfaces/handler.interface';
import type { HandledJobs, ZombieRetryRule } from '../../libs/chokaq/src/interfaces/job.interface';
import type { StorageOptions } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import { ChokaQWorker } from '../../libs/chokaq/src/runtime/chokaq-worker';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import type { BenchPayload, RunnerFactory, WorkerConfig } from './protocol';
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
 * ChokaQ without Nest: `createJobStorage` + `ChokaQWorker`, exactly what the orchestrator wires,
 * with every option at its default except `worker.concurrency`.
 */
export const createChokaqRunner: RunnerFactory = async (config, onJob) => {
  const storageOptions = chokaqStorageOptions(config);
  let storage: JobStorage = await createJobStorage(storageOptions);
  if (config.timeStatements) storage = timeOperations(storage);
  const worker = new ChokaQWorker({
    storage,
    handlers: new BenchHandlers(config.queue, onJob),
    options: resolveChokaQOptions({
      storage: storageOptions,
      worker: { ...config.chokaqWorker, concurrency: config.concurrency },
    }),
    logger: quietLogger,
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
