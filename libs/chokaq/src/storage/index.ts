/**
 * `@chokaq/nestjs/storage` — the storage protocol, for custom storages and tests: the
 * `JobStorage` contract every dialect implements and every type its signatures mention. An
 * application does not need it (the root entry exports what `JobClient`, `ChokaQAdmin` and the
 * handlers take and return, some of which this protocol uses too). The protocol follows the
 * worker and may change in a minor release; `api/storage.api.md` shows each change in review.
 */
export type {
  HandlerTransaction,
  HandlerTransactionSupport,
  JobQueries,
  JobStorage,
  JobStore,
} from './job-storage';
export type {
  CancelResult,
  ClaimedJobs,
  CompletedJob,
  DedupeOption,
  DedupeState,
  DlqMove,
  EnqueueOptions,
  EnqueueResult,
  FetchRequest,
  HandledJobs,
  HotJob,
  JobDedupe,
  JobLease,
  KeepAliveResult,
  NewJob,
  PendingEdits,
  PendingUpdate,
  PendingUpdateResult,
  QueueGroupLoad,
  QueueInfo,
  QueuePatch,
  RateLimit,
  RescuedZombie,
  ResurrectEdits,
  RetentionPolicy,
  RetentionResult,
  RunRef,
  StorageDialect,
  ZombieRescueResult,
  ZombieRetryRule,
  DependencyCheckResult,
  DependencyPolicy,
  DependencyState,
  DependencyView,
  JobDependencies,
  JobDependency,
} from '../interfaces/job.interface';
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
} from '../interfaces/batch.interface';
export type { SchemaStatus, SchemaVersionInfo } from '../interfaces/schema-status.interface';
export type {
  CircuitState,
  WorkerHeartbeat,
  WorkerInfo,
  WorkerQuery,
  WorkerState,
} from '../interfaces/worker.interface';
export type {
  MisfirePolicy,
  RecurringJobDefinition,
  RecurringJobRecord,
  RecurringJobSource,
} from '../interfaces/recurring-job.interface';
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
  StartLag,
  SummaryStats,
  ThroughputPoint,
  ThroughputSeriesQuery,
  ThroughputStats,
} from '../interfaces/job-view.interface';
export { AUDIT_ACTIONS } from '../interfaces/audit.interface';
export type {
  AuditAction,
  AuditEntry,
  AuditLogPage,
  AuditLogQuery,
  AuditRequest,
} from '../interfaces/audit.interface';
export { FailureReason, JobStatus } from '../interfaces/job-status.enum';
