import { DynamicModule, Logger, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ChokaQAdmin } from './admin/chokaq-admin.service';
import { CHOKAQ_READ_REPLICA, CHOKAQ_RESOLVED_OPTIONS, CHOKAQ_STORAGE } from './chokaq.constants';
import {
  CHOKAQ_MODULE_OPTIONS,
  ChokaQForRootAsyncOptions,
  ChokaQForRootOptions,
  ConfigurableChokaQModule,
} from './chokaq.module-definition';
import { ChokaQOrchestrator } from './chokaq.orchestrator';
import { JobClient } from './client/job-client';
import { resolveChokaQOptions } from './config/resolve-options';
import { ChokaQMetadataAccessor } from './discovery/chokaq-metadata.accessor';
import { ChokaQExplorer } from './discovery/chokaq.explorer';
import { HandlerRegistry } from './discovery/handler.registry';
import { ChokaQModuleOptions, ResolvedChokaQOptions } from './interfaces/module-options.interface';
import { ChokaQMetrics } from './observability/chokaq-metrics';
import { ChokaQTracing } from './observability/chokaq-tracing';
import { JobEvents } from './runtime/job-events';
import { createJobStorage, openReadReplica } from './storage/create-storage';
import type { JobStorage } from './storage/job-storage';
import { WorkerRegistry } from './worker.registry';

/**
 * ChokaQ as a Nest module:
 *
 * ```ts
 * ChokaQModule.forRoot()                                             // SQLite file ./chokaq.db
 * ChokaQModule.forRoot({ storage: { type: 'postgres', url: process.env.DATABASE_URL } })
 * ChokaQModule.forRootAsync({
 *   imports: [TypeOrmModule], inject: [DataSource],
 *   useFactory: (ds: DataSource) => ({ storage: { dataSource: ds } }),
 * })
 * ```
 *
 * Options (forRoot) or the factory's result (forRootAsync) are validated at startup by
 * `resolveChokaQOptions`; `middleware` and `isGlobal` (default true) are top-level extras of both.
 * Exports `JobClient`, `ChokaQAdmin` and `JobEvents`.
 *
 * @publicApi
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    // options → validated options → storage (opened, schema ensured) → everything else
    {
      provide: CHOKAQ_RESOLVED_OPTIONS,
      useFactory: (options: ChokaQModuleOptions) => resolveChokaQOptions(options),
      inject: [CHOKAQ_MODULE_OPTIONS],
    },
    {
      provide: CHOKAQ_STORAGE,
      // The engine logs through Nest's Logger here, so its lines follow the app's logger.
      useFactory: (options: ResolvedChokaQOptions) =>
        createJobStorage(options.storage, { logger: (context) => new Logger(context) }),
      inject: [CHOKAQ_RESOLVED_OPTIONS],
    },
    // the hot standby of storage.readReplica (PostgreSQL), opened after the primary, or null
    {
      provide: CHOKAQ_READ_REPLICA,
      useFactory: async (options: ResolvedChokaQOptions, _primary: JobStorage) =>
        (await openReadReplica(options.storage, { logger: (context) => new Logger(context) })) ??
        null,
      inject: [CHOKAQ_RESOLVED_OPTIONS, CHOKAQ_STORAGE],
    },
    // process-local lifecycle events: the worker emits, @OnJobEvent methods and subscribers hear
    {
      provide: JobEvents,
      useFactory: (options: ResolvedChokaQOptions) =>
        new JobEvents(options.events, new Logger('ChokaQ')),
      inject: [CHOKAQ_RESOLVED_OPTIONS],
    },
    // OpenTelemetry instruments, bound to the MeterProvider registered when the app is created
    // (a no-op without @opentelemetry/api or an SDK); the worker, JobClient and ChokaQAdmin record
    {
      provide: ChokaQMetrics,
      useFactory: (options: ResolvedChokaQOptions) =>
        ChokaQMetrics.create(options.metrics, new Logger('ChokaQ')),
      inject: [CHOKAQ_RESOLVED_OPTIONS],
    },
    // OpenTelemetry traces, bound to the TracerProvider registered when the app is created (a
    // no-op likewise): JobClient stores the producer's context, the worker's runs are spans
    {
      provide: ChokaQTracing,
      useFactory: (options: ResolvedChokaQOptions) => ChokaQTracing.create(options.tracing),
      inject: [CHOKAQ_RESOLVED_OPTIONS],
    },
    ChokaQMetadataAccessor,
    ChokaQExplorer,
    HandlerRegistry,
    // the orchestrator (lifecycle hooks) writes the running worker into the registry; the producer
    // side below reads only the registry
    WorkerRegistry,
    ChokaQOrchestrator,
    JobClient,
    // a factory, not the class: the admin carries no Nest decorators (the CLI builds it too)
    {
      provide: ChokaQAdmin,
      useFactory: (
        storage: JobStorage,
        options: ResolvedChokaQOptions,
        workers: WorkerRegistry,
        events: JobEvents,
        metrics: ChokaQMetrics,
        handlers: HandlerRegistry,
        replica: JobStorage | null,
      ) =>
        new ChokaQAdmin(
          storage,
          options,
          workers,
          events,
          metrics,
          handlers,
          new Logger('ChokaQAdmin'),
          replica ?? storage,
        ),
      inject: [
        CHOKAQ_STORAGE,
        CHOKAQ_RESOLVED_OPTIONS,
        WorkerRegistry,
        JobEvents,
        ChokaQMetrics,
        HandlerRegistry,
        CHOKAQ_READ_REPLICA,
      ],
    },
  ],
  exports: [JobClient, ChokaQAdmin, JobEvents, CHOKAQ_STORAGE, CHOKAQ_RESOLVED_OPTIONS],
})
export class ChokaQModule extends ConfigurableChokaQModule {
  /**
   * Registers ChokaQ with `options` (validated at startup). Without options: the embedded SQLite
   * file `./chokaq.db` and every default. (The builder's own `forRoot` requires an argument.)
   */
  static override forRoot(options: ChokaQForRootOptions = {}): DynamicModule {
    return super.forRoot(options);
  }

  /**
   * Registers ChokaQ with options a factory returns (`useFactory`, `useClass` or `useExisting`,
   * with `imports` and `inject`), validated at startup. `middleware` and `isGlobal` are given here,
   * not by the factory.
   */
  static override forRootAsync(options: ChokaQForRootAsyncOptions): DynamicModule {
    return super.forRootAsync(options);
  }
}
