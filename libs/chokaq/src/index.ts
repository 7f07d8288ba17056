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
  ChokaQMeterProvider,
  ChokaQModuleExtras,
  ChokaQModuleOptions,
  ChokaQTracerProvider,
  ResolvedChokaQOptions,
} from './interfaces/module-options.interface';
export type {
  ArchivePartitioning,
  CommonStorageOptions,
  DataSourceStorageOptions,
  MssqlStorageOptions,
  PostgresConnectionOptions,
  PostgresReadReplicaOptions,
  PostgresStorageOptions,
  SqliteStorageOptions,
  StorageOptions,
  TransientRetryOptions,
} from './interfaces/storage-options.interface';

// Declaring jobs and handlers
export { defineJob, JobHandler, RecurringJob } from './decorators';
export type {
  DefineJobOptions,
  JobDefinition,
  JobInput,
  JobPayload,
  JobResult,
  PayloadVersionOptions,
  TypedBatchJobHandlerDecorator,
  TypedJobHandlerDecorator,
} from './decorators';
export type {
  StandardSchemaInput,
  StandardSchemaIssue,
  StandardSchemaOutput,
  StandardSchemaPathSegment,
  StandardSchemaResult,
  StandardSchemaV1,
} from './interfaces/standard-schema.interface';
export type {
  HandlerBackoff,
  JobBatchItem,
  JobBatchOptions,
  JobBatchOutcome,
  JobHandlerOptions,
  PayloadUpgradeStep,
} from './interfaces/handler.interface';
export type { JobContext } from './interfaces/job-context.interface';
export type { ChokaQMiddleware } from './interfaces/middleware.interface';
export type {
  MisfirePolicy,
  RecurringJobDefinition,
  RecurringJobOptions,
  RecurringJobRecord,
  RecurringJobSource,
  RecurringJobSpec,
  RecurringJobView,
  RecurringLastRun,
} from './interfaces/recurring-job.interface';

// Producing, operating, testing
export { JobClient } from './client/job-client';
export type {
  EnqueueItem,
  EnqueueJobOptions,
  JobOptions,
  TransactionOption,
  TypedEnqueueItem,
  TypedEnqueueJobOptions,
  TypedPendingEdits,
} from './client/job-client';
export { batchJob } from './client/batch-job';
export type { BatchEntry, BatchJobOptions, EnqueueBatchOptions } from './client/batch-job';
export { flowStep } from './client/flow-step';
export type {
  EnqueueFlowOptions,
  FlowEnqueued,
  FlowStep,
  FlowStepDependency,
  FlowStepOptions,
} from './client/flow-step';
export { ChokaQAdmin } from './admin/chokaq-admin.service';
export { ChokaQTesting } from './testing/chokaq-testing';
export type { RunDueJobsOptions } from './testing/chokaq-testing';
export type { JobOutcome } from './interfaces/job-outcome.interface';

// Lifecycle events
export { OnJobEvent } from './decorators';
export { JobEvents } from './runtime/job-events';
export type { JobEventListenerOptions, JobEventListenerStats } from './runtime/job-events';
export { JOB_EVENT_NAMES } from './interfaces/job-event.interface';
export type { JobEvent, JobEventFilter, JobEventName } from './interfaces/job-event.interface';

// Log events
export { CHOKAQ_LOG_EVENTS } from './common/log-events';
export type { ChokaQLogEventName, LogEventLevel, LogEventSpec } from './common/log-events';
export { ChokaQLogRecord } from './common/chokaq-log-record';
export type { LogFieldValue } from './common/chokaq-log-record';
export type { ChokaQLogger } from './interfaces/chokaq-logger.interface';

// Metrics (OpenTelemetry)
export { CHOKAQ_METER_NAME, CHOKAQ_METRICS } from './observability/metric-instruments';
export type {
  ChokaQMetricName,
  MetricAttribute,
  MetricInstrumentKind,
  MetricInstrumentSpec,
} from './observability/metric-instruments';

// Traces (OpenTelemetry)
export { CHOKAQ_SPAN_ATTRIBUTES, CHOKAQ_TRACER_NAME } from './observability/chokaq-tracing';
export type { RunSpanResult } from './observability/chokaq-tracing';

// The job model and the read model (what JobClient, ChokaQAdmin and the handlers take and return).
// The storage protocol (JobStorage and the worker's half of its vocabulary) is at the subpath
// `@chokaq/nestjs/storage`.
export { FailureReason, JobStatus } from './interfaces/job-status.enum';
export {
  MAX_DEPENDENCIES,
  MAX_ENQUEUE_MANY,
  MAX_LIST_SCAN,
  MAX_PAGE_SIZE,
} from './validation/limits';
export type {
  CancelResult,
  DedupeOption,
  DedupeState,
  DependencyCheckResult,
  DependencyPolicy,
  DependencyState,
  DependencyView,
  JobDependencies,
  JobDependency,
  HandledJobs,
  HotJob,
  JobDedupe,
  NewJob,
  PendingEdits,
  QueueGroupLoad,
  QueueInfo,
  QueuePatch,
  RateLimit,
  ResurrectEdits,
  RetentionPolicy,
  RetentionResult,
  StorageDialect,
} from './interfaces/job.interface';
export type {
  BatchCallbackJob,
  BatchCallbackKind,
  BatchCallbacks,
  BatchCallbackView,
  BatchEnqueued,
  BatchJob,
  BatchResultsPage,
  BatchResultsQuery,
  BatchView,
  NewBatch,
} from './interfaces/batch.interface';
export type { SchemaStatus, SchemaVersionInfo } from './interfaces/schema-status.interface';
export type {
  CircuitState,
  LocalWorkerHealth,
  LocalWorkerState,
  WorkerInfo,
  WorkerQuery,
  WorkerState,
} from './interfaces/worker.interface';
export { AUDIT_ACTIONS } from './interfaces/audit.interface';
export type {
  AuditAction,
  AuditEntry,
  AuditLogPage,
  AuditLogQuery,
  AuditRequest,
  BulkConfirmation,
  BulkDlqAction,
  DlqActionPreview,
} from './interfaces/audit.interface';
export type {
  ActiveFilter,
  BulkPreview,
  CountQuery,
  DlqErrorFamily,
  DlqFilter,
  GetJobOptions,
  HistoryFilter,
  JobAttempt,
  JobAttemptOutcome,
  JobListItem,
  JobView,
  ListOrder,
  ListPage,
  ListQuery,
  Pillar,
  QueueHealth,
  QueueOutcomes,
  QueueOutcomesQuery,
  QueueStats,
  ReadSource,
  StartLag,
  SummaryStats,
  ThroughputPoint,
  ThroughputSeriesQuery,
  ThroughputStats,
} from './interfaces/job-view.interface';

// Errors
export * from './errors';
