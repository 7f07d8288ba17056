/**
 * ChokaQ for NestJS — the public API. Everything else under `src/` is internal and may change
 * without notice; `index.spec.ts` pins the names exported here.
 */

// Module and configuration
export { ChokaQModule } from './chokaq.module';
export type { ChokaQForRootAsyncOptions, ChokaQForRootOptions } from './chokaq.module-definition';
export { getChokaQOptionsToken, getJobStorageToken } from './chokaq.constants';
export { resolveChokaQOptions } from './config/resolve-options';
export type {
  ChokaQModuleExtras,
  ChokaQModuleOptions,
  ResolvedChokaQOptions,
} from './config/chokaq-options';
export type {
  CommonStorageOptions,
  DataSourceStorageOptions,
  MssqlStorageOptions,
  PostgresStorageOptions,
  SqliteStorageOptions,
  StorageOptions,
} from './storage/storage-options';
export type { TransientRetryOptions } from './storage/shared/transient-retry';

// Declaring jobs and handlers
export { defineJob, JobHandler, RecurringJob } from './decorators';
export type {
  JobDefinition,
  JobPayload,
  RecurringJobOptions,
  TypedJobHandlerDecorator,
} from './decorators';
export type { JobHandlerOptions } from './discovery/handler-definition';
export { HandlerRegistry } from './discovery/handler.registry';
export type { JobContext } from './runtime/job-context';
export type { ChokaQMiddleware } from './runtime/middleware';
export type { RecurringJobSpec } from './runtime/recurring-job-spec';

// Producing, operating, testing
export { JobClient } from './client/job-client';
export type {
  EnqueueItem,
  EnqueueJobOptions,
  JobOptions,
  TransactionOption,
  TypedEnqueueItem,
  TypedEnqueueJobOptions,
} from './client/job-client';
export { ChokaQAdmin } from './admin/chokaq-admin.service';
export { ChokaQTesting } from './testing/chokaq-testing';
export type { RunDueJobsOptions } from './testing/chokaq-testing';
export type { JobOutcome } from './runtime/chokaq-worker';

// Job model
export { FailureReason, JobStatus } from './storage/job-status';
export { MAX_ENQUEUE_MANY, MAX_PAGE_SIZE } from './storage/job-storage';
export type {
  ActiveFilter,
  BulkPreview,
  CancelResult,
  DlqErrorFamily,
  DlqFilter,
  HistoryFilter,
  JobStorage,
  JobView,
  MisfirePolicy,
  Page,
  PageQuery,
  Pillar,
  QueueHealth,
  QueueInfo,
  QueuePatch,
  QueueStats,
  RecurringJobRecord,
  RetentionPolicy,
  RetentionResult,
  ResurrectEdits,
  RunRef,
  SortKey,
  StorageDialect,
  SummaryStats,
  ThroughputStats,
} from './storage/job-storage';

// Errors
export * from './errors';
