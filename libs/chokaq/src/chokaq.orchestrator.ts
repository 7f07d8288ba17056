import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
  OnModuleInit,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { SchedulerRegistry } from '@nestjs/schedule';
import {
  CHOKAQ_MIDDLEWARE,
  CHOKAQ_READ_REPLICA,
  CHOKAQ_RESOLVED_OPTIONS,
  CHOKAQ_STORAGE,
} from './chokaq.constants';
import { toError } from './common/error-text';
import { logEvent } from './common/log-events';
import { storageSchema } from './config/storage-defaults';
import { ChokaQExplorer } from './discovery/chokaq.explorer';
import { HandlerRegistry } from './discovery/handler.registry';
import { ChokaQMiddleware } from './interfaces/middleware.interface';
import { ResolvedChokaQOptions } from './interfaces/module-options.interface';
import { RecurringJobSpec } from './interfaces/recurring-job.interface';
import { ChokaQMetrics } from './observability/chokaq-metrics';
import { ChokaQTracing } from './observability/chokaq-tracing';
import { queueGaugeSource } from './observability/queue-gauges';
import { ChokaQWorker } from './runtime/chokaq-worker';
import { checkHandlerTransactions } from './runtime/handler-transactions';
import { JobEvents } from './runtime/job-events';
import { SchedulerRegistryAdapter } from './scheduler-registry.adapter';
import { JobStorage } from './storage/job-storage';
import { WorkerRegistry } from './worker.registry';

/**
 * The only ChokaQ class that touches Nest lifecycle hooks (nestjs/schedule's orchestrator split):
 *
 * | hook | what happens |
 * |---|---|
 * | `onModuleInit` | discover handlers, recurring jobs and `@OnJobEvent` listeners (every provider is instantiated by now); refuse transactional handlers the storage cannot run; give the registry a drain-worker factory; register the queue gauges |
 * | `onApplicationBootstrap` | construct and start the worker, unless `worker.enabled` is false; set it into the registry |
 * | `onModuleDestroy` | close the registry to drains; `worker.beginStop()`: stop claiming, release the buffer, abort running signals |
 * | `beforeApplicationShutdown` | `await worker.stop()`, clear the registry, unregister the queue gauges, then close the storage |
 *
 * Why this split: Nest calls every module's `onModuleDestroy` before any
 * `beforeApplicationShutdown`, and `@nestjs/typeorm` destroys its `DataSource` in
 * `onApplicationShutdown`. Starting the drain early gives running handlers the whole shutdown
 * sequence to finish; awaiting it in `beforeApplicationShutdown` guarantees every completion is
 * written while a borrowed `DataSource` is still open. Shutdown is idempotent; no signal handlers
 * are installed (that is `app.enableShutdownHooks()`'s job).
 *
 * Recurring jobs' timers are listed in the application's `SchedulerRegistry` as `chokaq:<name>`
 * when the application imports `ScheduleModule.forRoot()`. ChokaQModule does not import it itself:
 * `@nestjs/schedule` 6 under Nest 11 does not merge a second `ScheduleModule.forRoot()` with the
 * application's (two module instances, two explorers), so every `@Cron`, `@Interval` and
 * `@Timeout` of the application would run twice. Without it the timers run all the same, unlisted.
 * Their entries go when the worker stops, in `beforeApplicationShutdown`.
 *
 * It has no read API: `JobClient`, `ChokaQAdmin` and `ChokaQTesting` reach the worker through
 * the {@link WorkerRegistry} it writes, and only `ChokaQModule` imports this class.
 *
 * @internal
 */
@Injectable()
export class ChokaQOrchestrator
  implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown
{
  private readonly logger = new Logger('ChokaQ');
  private worker: ChokaQWorker | undefined;
  /** A worker that is never started, built on demand for `drain()` in producer-only mode. */
  private drainWorker: ChokaQWorker | undefined;
  private recurring: RecurringJobSpec[] = [];
  private shuttingDown = false;
  private shutdown: Promise<void> | undefined;
  private recurringTimers: SchedulerRegistryAdapter | undefined;

  constructor(
    @Inject(CHOKAQ_RESOLVED_OPTIONS) private readonly options: ResolvedChokaQOptions,
    @Inject(CHOKAQ_STORAGE) private readonly storage: JobStorage,
    @Inject(CHOKAQ_READ_REPLICA) private readonly replica: JobStorage | null,
    @Inject(CHOKAQ_MIDDLEWARE) private readonly middleware: ChokaQMiddleware[],
    private readonly explorer: ChokaQExplorer,
    private readonly registry: HandlerRegistry,
    private readonly workers: WorkerRegistry,
    private readonly events: JobEvents,
    private readonly metrics: ChokaQMetrics,
    private readonly tracing: ChokaQTracing,
    private readonly moduleRef: ModuleRef,
  ) {}

  async onModuleInit(): Promise<void> {
    const schedulerRegistry = applicationSchedulerRegistry(this.moduleRef);
    this.recurringTimers = schedulerRegistry && new SchedulerRegistryAdapter(schedulerRegistry);
    try {
      const { handlers, recurring, listeners } = this.explorer.explore();
      // Producer-only processes too: a handler the storage cannot honour is a configuration error
      // wherever it is declared, and a drain would run it.
      checkHandlerTransactions(
        handlers,
        this.storage,
        this.options.worker.concurrency,
        this.logger,
      );
      this.registry.replaceAll(handlers);
      this.recurring = recurring;
      for (const { listener, ...options } of listeners) this.events.listen(listener, options);
      // Built on the first drain only: a worker is never constructed for nothing.
      this.workers.setDrainWorkerFactory(() => (this.drainWorker = this.createWorker()));
      // In every process, producer-only ones too: the gauges describe the database, not a worker.
      if (this.options.metrics.queueGauges)
        this.metrics.observeQueues(queueGaugeSource(this.replica ?? this.storage));
    } catch (error) {
      // Startup fails here; close what the storage provider opened, or a file handle or pool
      // would outlive the failed application.
      this.metrics.close();
      await this.closeStorage().catch(() => undefined);
      throw error;
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.options.worker.enabled) {
      const dialect = this.storage.dialect;
      const schema = storageSchema(this.options.storage, dialect);
      logEvent(
        this.logger,
        'ProducerOnlyStarted',
        `Producer-only (worker.enabled = false) on ${dialect} (schema ${schema}): ` +
          'JobClient and ChokaQAdmin work, no worker runs',
        { dialect, schema },
      );
      return;
    }
    if (this.shuttingDown) return;
    this.worker = this.createWorker();
    // Set before start() resolves, as the worker counts as running from the call on.
    this.workers.setWorker(this.worker);
    // The worker logs the startup banner (WorkerStarted) once its loops run.
    await this.worker.start();
  }

  onModuleDestroy(): void {
    this.shuttingDown = true;
    this.workers.close();
    this.worker?.beginStop();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  /**
   * Stops the worker (waiting for the drain) and closes the storage. Idempotent: every call returns
   * the same promise. Errors of both steps are collected into one `AggregateError`.
   */
  stop(): Promise<void> {
    this.shuttingDown = true;
    this.workers.close();
    this.shutdown ??= this.stopAll();
    return this.shutdown;
  }

  private createWorker(): ChokaQWorker {
    return new ChokaQWorker({
      storage: this.storage,
      handlers: this.registry,
      options: this.options,
      middleware: this.middleware,
      recurring: this.recurring,
      recurringTimers: this.recurringTimers,
      logger: new Logger('ChokaQWorker'),
      schema: storageSchema(this.options.storage, this.storage.dialect),
      events: this.events,
      metrics: this.metrics,
      tracing: this.tracing,
    });
  }

  private async stopAll(): Promise<void> {
    const errors: Error[] = [];
    for (const worker of [this.worker, this.drainWorker]) {
      if (!worker) continue;
      try {
        await worker.stop();
      } catch (error) {
        errors.push(toError(error));
      }
    }
    this.workers.clear();
    // The worker's recurring loop removed its entries; this covers a worker whose stop failed.
    this.recurringTimers?.clear();
    // A collection after this would read a closed storage (the MeterProvider outlives the app).
    this.metrics.close();
    try {
      await this.closeStorage();
    } catch (error) {
      errors.push(toError(error));
    }
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, 'ChokaQ shutdown failed');
  }

  private storageClosed: Promise<void> | undefined;

  /**
   * Closes the storage and the read replica once; a borrowed DataSource is left open by the
   * storage itself.
   */
  private closeStorage(): Promise<void> {
    this.storageClosed ??= Promise.all([this.storage.close(), this.replica?.close()]).then(
      () => undefined,
    );
    return this.storageClosed;
  }
}

/**
 * The application's `SchedulerRegistry`, when `@nestjs/schedule` is installed and the application
 * imports `ScheduleModule.forRoot()`; else undefined. `@nestjs/schedule` is an optional peer:
 * recurring jobs run on ChokaQ's own timers without it, and it is loaded only here, when present.
 */
function applicationSchedulerRegistry(moduleRef: ModuleRef): SchedulerRegistry | undefined {
  try {
    require.resolve('@nestjs/schedule');
  } catch {
    return undefined; // not installed
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const schedule = require('@nestjs/schedule') as {
    SchedulerRegistry: new (...args: never[]) => SchedulerRegistry;
  };
  try {
    return moduleRef.get(schedule.SchedulerRegistry, { strict: false });
  } catch {
    return undefined; // installed, but the application does not import ScheduleModule
  }
}
