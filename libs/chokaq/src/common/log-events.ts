import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { ChokaQLogRecord, type LogFieldValue } from './chokaq-log-record';

/** The Nest log level an event is written at. */
export type LogEventLevel = 'log' | 'warn' | 'error';

/** One row of {@link CHOKAQ_LOG_EVENTS}. */
export interface LogEventSpec {
  /** Stable numeric id; never reused for another meaning. */
  readonly id: number;
  /** The level it is always written at. */
  readonly level: LogEventLevel;
  /** The names of the structured fields it carries besides `message`, `eventId` and `event`. */
  readonly fields: readonly string[];
}

/**
 * Every line ChokaQ logs, by stable name, with its stable id, level and fields. The ids follow the
 * ranges of the .NET ChokaQ, so one log search serves both:
 *
 * | range | what |
 * |---|---|
 * | 1000s | the worker: start, stop, loops, heartbeat, its row in the Workers table; the metrics' reads |
 * | 2000s | a job's run: retries, DLQ moves, late results, starts that failed |
 * | 2100s | state transitions and their plumbing: conflicts, completion batches, event listeners |
 * | 3000s | enqueue: recurring slots |
 * | 4000s | rescue and retention |
 * | 5000s | schema and storage connections |
 * | 6000s | operator actions through `ChokaQAdmin` |
 *
 * Ids, names and field names are contract (a spec pins them): a log search or an alert may key on
 * them. A changed meaning gets a new id; the message text may change freely.
 *
 * @publicApi
 */
export const CHOKAQ_LOG_EVENTS = {
  // ------------------------------------------------------------------ 1000s worker
  WorkerStarted: {
    id: 1000,
    level: 'log',
    fields: [
      'workerId',
      'dialect',
      'schema',
      'queues',
      'types',
      'recurring',
      'concurrency',
      'prefetch',
      'startAhead',
      'pollIntervalMs',
    ],
  },
  WorkerStopped: { id: 1001, level: 'log', fields: ['workerId'] },
  ProducerOnlyStarted: { id: 1002, level: 'log', fields: ['dialect', 'schema'] },
  NotificationsUnavailable: { id: 1003, level: 'warn', fields: ['workerId', 'error'] },
  ShutdownWaiting: { id: 1004, level: 'log', fields: ['workerId', 'running', 'gracePeriodMs'] },
  ShutdownJobsLeft: { id: 1005, level: 'warn', fields: ['workerId', 'jobIds', 'gracePeriodMs'] },
  ShutdownStepFailed: { id: 1006, level: 'error', fields: ['workerId', 'step', 'error'] },
  OutcomeListenerFailed: { id: 1007, level: 'error', fields: ['error'] },
  LoopFailed: { id: 1010, level: 'warn', fields: ['loop', 'error'] },
  LoopRecovered: { id: 1011, level: 'log', fields: ['loop', 'failures'] },
  HeartbeatFailed: { id: 1020, level: 'warn', fields: ['workerId', 'error'] },
  HeartbeatThresholdReached: {
    id: 1021,
    level: 'error',
    fields: ['workerId', 'failures', 'abortRunning'],
  },
  HeartbeatRecovered: { id: 1022, level: 'log', fields: ['workerId', 'failures'] },
  WorkerRowWriteFailed: { id: 1030, level: 'warn', fields: ['workerId', 'error'] },
  WorkerRowRecovered: { id: 1031, level: 'log', fields: ['workerId', 'failures'] },
  WorkerRowStopFailed: { id: 1032, level: 'warn', fields: ['workerId', 'error'] },
  QueueGaugesReadFailed: { id: 1040, level: 'warn', fields: ['error'] },
  QueueGaugesReadRecovered: { id: 1041, level: 'log', fields: ['failures'] },

  // ------------------------------------------------------------------ 2000s job execution
  JobRetryScheduled: {
    id: 2000,
    level: 'warn',
    fields: ['jobId', 'queue', 'type', 'attempt', 'delayMs', 'error'],
  },
  JobDeadLettered: {
    id: 2001,
    level: 'error',
    fields: ['jobId', 'queue', 'type', 'attempt', 'reason', 'error'],
  },
  JobCancelledWhileRunning: {
    id: 2002,
    level: 'log',
    fields: ['jobId', 'queue', 'type', 'attempt'],
  },
  JobLateResult: { id: 2003, level: 'warn', fields: ['jobId', 'queue', 'type', 'settled'] },
  JobAbandonedAtShutdown: { id: 2004, level: 'warn', fields: ['jobId', 'queue', 'type'] },
  JobStartFailed: { id: 2005, level: 'warn', fields: ['count', 'error'] },
  JobStartRecovered: { id: 2006, level: 'log', fields: ['failures'] },

  // ------------------------------------------------------------------ 2100s transitions
  StateTransitionConflict: { id: 2100, level: 'warn', fields: ['operation', 'jobId'] },
  TransitionWriteFailed: {
    id: 2101,
    level: 'error',
    fields: ['operation', 'jobId', 'attempts', 'error'],
  },
  CompletionBatchFailed: { id: 2102, level: 'warn', fields: ['count', 'error'] },
  CompletionBatchRecovered: { id: 2103, level: 'log', fields: ['failures'] },
  CompletionsUnwritten: { id: 2104, level: 'error', fields: ['count', 'error'] },
  EventListenerBehind: { id: 2110, level: 'warn', fields: ['listener', 'maxQueued'] },
  EventListenerFailed: {
    id: 2111,
    level: 'error',
    fields: ['listener', 'jobEvent', 'jobId', 'error', 'suppressed'],
  },
  CancelEventsFailed: { id: 2112, level: 'error', fields: ['error'] },

  // ------------------------------------------------------------------ 3000s enqueue
  RecurringSlotEnqueued: { id: 3010, level: 'log', fields: ['recurringJob', 'slot', 'jobId'] },
  RecurringSlotsMissed: { id: 3011, level: 'log', fields: ['recurringJob', 'upTo'] },
  RecurringCronInvalid: {
    id: 3012,
    level: 'error',
    fields: ['recurringJob', 'cron', 'timeZone', 'error'],
  },
  RecurringTimerNameTaken: { id: 3013, level: 'warn', fields: ['recurringJob', 'timerName'] },

  // ------------------------------------------------------------------ 4000s rescue
  FetchedJobsRecovered: { id: 4000, level: 'log', fields: ['count'] },
  ZombiesDeadLettered: { id: 4001, level: 'warn', fields: ['count', 'workerIds', 'jobIds'] },
  ZombiesRetried: { id: 4002, level: 'warn', fields: ['count', 'workerIds', 'jobIds'] },
  DependentsCancelled: { id: 4003, level: 'warn', fields: ['count', 'jobIds'] },
  RetentionApplied: {
    id: 4010,
    level: 'log',
    fields: ['archive', 'dlq', 'metricBuckets', 'workers'],
  },

  // ------------------------------------------------------------------ 5000s schema and storage
  SchemaMigrated: {
    id: 5000,
    level: 'log',
    fields: ['dialect', 'schema', 'fromVersion', 'toVersion', 'applied'],
  },
  SqliteNotWal: { id: 5010, level: 'warn', fields: ['journalMode'] },
  SqliteRollbackFailed: { id: 5011, level: 'error', fields: ['error', 'rollbackError'] },
  SqliteChangeListenerFailed: { id: 5012, level: 'warn', fields: ['error'] },
  SqliteWalWatchLost: { id: 5013, level: 'log', fields: ['file', 'error'] },
  PreparedStatementsReset: { id: 5020, level: 'log', fields: ['schema'] },
  NotifyListenerFailed: { id: 5021, level: 'warn', fields: ['channel', 'error'] },
  NotifyConnectionLost: { id: 5022, level: 'warn', fields: ['label', 'error'] },
  NotifyConnectionRestored: { id: 5023, level: 'log', fields: ['label', 'attempts'] },
  HandlerTransactionPoolSmall: {
    id: 5030,
    level: 'warn',
    fields: ['poolSize', 'concurrency', 'handlers'],
  },
  ReadReplicaUnavailable: { id: 5040, level: 'warn', fields: ['error'] },
  ArchivePartitioned: {
    id: 5050,
    level: 'log',
    fields: ['dialect', 'schema', 'table', 'period', 'keptRows'],
  },
  PartitionsChanged: { id: 5051, level: 'log', fields: ['table', 'created', 'dropped'] },
  PartitionMaintenanceDeferred: {
    id: 5052,
    level: 'warn',
    fields: ['table', 'partition', 'error'],
  },

  // ------------------------------------------------------------------ 6000s admin
  QueueUpdated: { id: 6000, level: 'log', fields: ['queue', 'settings'] },
  JobsCancelled: {
    id: 6001,
    level: 'log',
    fields: ['actor', 'requested', 'cancelled', 'cancelRequested'],
  },
  JobResurrected: { id: 6002, level: 'log', fields: ['jobId', 'actor', 'resurrected'] },
  DlqResurrectedByFilter: { id: 6003, level: 'log', fields: ['actor', 'count'] },
  DlqPurged: { id: 6004, level: 'log', fields: ['actor', 'count'] },
  DlqPurgedByFilter: { id: 6005, level: 'log', fields: ['actor', 'count'] },
  JobUpdated: { id: 6006, level: 'log', fields: ['jobId', 'actor', 'fields'] },
  RecurringJobUpserted: { id: 6010, level: 'log', fields: ['recurringJob', 'cron', 'timeZone'] },
  RecurringJobPaused: { id: 6011, level: 'log', fields: ['recurringJob'] },
  RecurringJobResumed: { id: 6012, level: 'log', fields: ['recurringJob'] },
  RecurringJobRemoved: { id: 6013, level: 'log', fields: ['recurringJob'] },
  RecurringJobTriggered: { id: 6014, level: 'log', fields: ['recurringJob', 'actor', 'jobId'] },
  ConcurrencyChanged: { id: 6020, level: 'log', fields: ['concurrency'] },
} as const satisfies Record<string, LogEventSpec>;

/** The name of a ChokaQ log event (a key of {@link CHOKAQ_LOG_EVENTS}). @publicApi */
export type ChokaQLogEventName = keyof typeof CHOKAQ_LOG_EVENTS;

/** The fields an event carries, by name: every one must be given (undefined when unknown). */
export type LogEventFields<N extends ChokaQLogEventName> = {
  readonly [K in (typeof CHOKAQ_LOG_EVENTS)[N]['fields'][number]]: LogFieldValue;
};

/**
 * Writes one event to `logger` at the event's level: a {@link ChokaQLogRecord} as the message
 * argument (see there why this call shape suits Nest's default logger and JSON loggers alike),
 * and `trace`, for an error that has a stack worth printing, as Nest's second `error` argument.
 */
export function logEvent<N extends ChokaQLogEventName>(
  logger: ChokaQLogger,
  event: N,
  message: string,
  fields: LogEventFields<N>,
  trace?: string,
): void {
  const spec: LogEventSpec = CHOKAQ_LOG_EVENTS[event];
  const record = new ChokaQLogRecord(message, spec.id, event, fields);
  switch (spec.level) {
    case 'log':
      logger.log(record);
      return;
    case 'warn':
      logger.warn(record);
      return;
    case 'error':
      if (trace === undefined) logger.error(record);
      else logger.error(record, trace);
      return;
  }
}
