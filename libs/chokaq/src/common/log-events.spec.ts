import { ConsoleLogger, Logger, type LoggerService } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { ChokaQLogRecord } from './chokaq-log-record';
import { CHOKAQ_LOG_EVENTS, logEvent } from './log-events';

/**
 * The published event catalogue: id, name, level and field names of every log line. A log search
 * or an alert may key on any of them, so a change here must be a deliberate edit of this list
 * (and of the README's table, which the last test compares with the code).
 */
const PINNED: ReadonlyArray<[id: number, name: string, level: string, fields: string[]]> = [
  [
    1000,
    'WorkerStarted',
    'log',
    [
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
  ],
  [1001, 'WorkerStopped', 'log', ['workerId']],
  [1002, 'ProducerOnlyStarted', 'log', ['dialect', 'schema']],
  [1003, 'NotificationsUnavailable', 'warn', ['workerId', 'error']],
  [1004, 'ShutdownWaiting', 'log', ['workerId', 'running', 'gracePeriodMs']],
  [1005, 'ShutdownJobsLeft', 'warn', ['workerId', 'jobIds', 'gracePeriodMs']],
  [1006, 'ShutdownStepFailed', 'error', ['workerId', 'step', 'error']],
  [1007, 'OutcomeListenerFailed', 'error', ['error']],
  [1010, 'LoopFailed', 'warn', ['loop', 'error']],
  [1011, 'LoopRecovered', 'log', ['loop', 'failures']],
  [1020, 'HeartbeatFailed', 'warn', ['workerId', 'error']],
  [1021, 'HeartbeatThresholdReached', 'error', ['workerId', 'failures', 'abortRunning']],
  [1022, 'HeartbeatRecovered', 'log', ['workerId', 'failures']],
  [1030, 'WorkerRowWriteFailed', 'warn', ['workerId', 'error']],
  [1031, 'WorkerRowRecovered', 'log', ['workerId', 'failures']],
  [1032, 'WorkerRowStopFailed', 'warn', ['workerId', 'error']],
  [1040, 'QueueGaugesReadFailed', 'warn', ['error']],
  [1041, 'QueueGaugesReadRecovered', 'log', ['failures']],
  [2000, 'JobRetryScheduled', 'warn', ['jobId', 'queue', 'type', 'attempt', 'delayMs', 'error']],
  [2001, 'JobDeadLettered', 'error', ['jobId', 'queue', 'type', 'attempt', 'reason', 'error']],
  [2002, 'JobCancelledWhileRunning', 'log', ['jobId', 'queue', 'type', 'attempt']],
  [2003, 'JobLateResult', 'warn', ['jobId', 'queue', 'type', 'settled']],
  [2004, 'JobAbandonedAtShutdown', 'warn', ['jobId', 'queue', 'type']],
  [2005, 'JobStartFailed', 'warn', ['count', 'error']],
  [2006, 'JobStartRecovered', 'log', ['failures']],
  [2100, 'StateTransitionConflict', 'warn', ['operation', 'jobId']],
  [2101, 'TransitionWriteFailed', 'error', ['operation', 'jobId', 'attempts', 'error']],
  [2102, 'CompletionBatchFailed', 'warn', ['count', 'error']],
  [2103, 'CompletionBatchRecovered', 'log', ['failures']],
  [2104, 'CompletionsUnwritten', 'error', ['count', 'error']],
  [2110, 'EventListenerBehind', 'warn', ['listener', 'maxQueued']],
  [2111, 'EventListenerFailed', 'error', ['listener', 'jobEvent', 'jobId', 'error', 'suppressed']],
  [2112, 'CancelEventsFailed', 'error', ['error']],
  [3010, 'RecurringSlotEnqueued', 'log', ['recurringJob', 'slot', 'jobId']],
  [3011, 'RecurringSlotsMissed', 'log', ['recurringJob', 'upTo']],
  [3012, 'RecurringCronInvalid', 'error', ['recurringJob', 'cron', 'timeZone', 'error']],
  [3013, 'RecurringTimerNameTaken', 'warn', ['recurringJob', 'timerName']],
  [4000, 'FetchedJobsRecovered', 'log', ['count']],
  [4001, 'ZombiesDeadLettered', 'warn', ['count', 'workerIds', 'jobIds']],
  [4002, 'ZombiesRetried', 'warn', ['count', 'workerIds', 'jobIds']],
  [4003, 'DependentsCancelled', 'warn', ['count', 'jobIds']],
  [4010, 'RetentionApplied', 'log', ['archive', 'dlq', 'metricBuckets', 'workers']],
  [5000, 'SchemaMigrated', 'log', ['dialect', 'schema', 'fromVersion', 'toVersion', 'applied']],
  [5010, 'SqliteNotWal', 'warn', ['journalMode']],
  [5011, 'SqliteRollbackFailed', 'error', ['error', 'rollbackError']],
  [5012, 'SqliteChangeListenerFailed', 'warn', ['error']],
  [5013, 'SqliteWalWatchLost', 'log', ['file', 'error']],
  [5020, 'PreparedStatementsReset', 'log', ['schema']],
  [5021, 'NotifyListenerFailed', 'warn', ['channel', 'error']],
  [5022, 'NotifyConnectionLost', 'warn', ['label', 'error']],
  [5023, 'NotifyConnectionRestored', 'log', ['label', 'attempts']],
  [5030, 'HandlerTransactionPoolSmall', 'warn', ['poolSize', 'concurrency', 'handlers']],
  [5040, 'ReadReplicaUnavailable', 'warn', ['error']],
  [5050, 'ArchivePartitioned', 'log', ['dialect', 'schema', 'table', 'period', 'keptRows']],
  [5051, 'PartitionsChanged', 'log', ['table', 'created', 'dropped']],
  [5052, 'PartitionMaintenanceDeferred', 'warn', ['table', 'partition', 'error']],
  [6000, 'QueueUpdated', 'log', ['queue', 'settings']],
  [6001, 'JobsCancelled', 'log', ['actor', 'requested', 'cancelled', 'cancelRequested']],
  [6002, 'JobResurrected', 'log', ['jobId', 'actor', 'resurrected']],
  [6003, 'DlqResurrectedByFilter', 'log', ['actor', 'count']],
  [6004, 'DlqPurged', 'log', ['actor', 'count']],
  [6005, 'DlqPurgedByFilter', 'log', ['actor', 'count']],
  [6006, 'JobUpdated', 'log', ['jobId', 'actor', 'fields']],
  [6010, 'RecurringJobUpserted', 'log', ['recurringJob', 'cron', 'timeZone']],
  [6011, 'RecurringJobPaused', 'log', ['recurringJob']],
  [6012, 'RecurringJobResumed', 'log', ['recurringJob']],
  [6013, 'RecurringJobRemoved', 'log', ['recurringJob']],
  [6014, 'RecurringJobTriggered', 'log', ['recurringJob', 'actor', 'jobId']],
  [6020, 'ConcurrencyChanged', 'log', ['concurrency']],
];

/** The catalogue in the code, as rows like {@link PINNED}, in declaration order. */
function catalogue(): Array<[number, string, string, string[]]> {
  return Object.entries(CHOKAQ_LOG_EVENTS).map(([name, spec]) => [
    spec.id,
    name,
    spec.level,
    [...spec.fields],
  ]);
}

/** A LoggerService that keeps its calls. */
function recorder(): LoggerService & { calls: Array<[string, unknown[]]> } {
  const calls: Array<[string, unknown[]]> = [];
  const at =
    (level: string) =>
    (...args: unknown[]) =>
      calls.push([level, args]);
  return { calls, log: at('log'), warn: at('warn'), error: at('error') };
}

describe('CHOKAQ_LOG_EVENTS', () => {
  it('pins every id, name, level and field name', () => {
    expect(catalogue()).toEqual(PINNED);
  });

  it('has unique ids, ascending, each in the range of its kind', () => {
    const ids = catalogue().map(([id]) => id);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    for (const id of ids) expect([1, 2, 3, 4, 5, 6]).toContain(Math.floor(id / 1000));
  });

  it('never names a field like the record keys every event has', () => {
    for (const [, name, , fields] of catalogue()) {
      for (const reserved of ['message', 'eventId', 'event', 'context', 'level']) {
        expect(`${name}.${fields.includes(reserved) ? reserved : ''}`).toBe(`${name}.`);
      }
    }
  });

  it('is the table of the README section "Log events"', () => {
    const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
    const section = readme.split(/^## Log events$/m)[1]?.split(/^## /m)[0] ?? '';
    const rows = section
      .split('\n')
      .filter((line) => /^\| \d{4} \|/.test(line))
      .map((line) => line.split('|').map((cell) => cell.trim()))
      .map(([, id, name, level, fields]): [number, string, string, string[]] => [
        Number(id),
        name.replace(/`/g, ''),
        level.replace(/`/g, ''),
        fields === '' ? [] : fields.replace(/`/g, '').split(/,\s*/),
      ]);
    expect(rows).toEqual(catalogue());
  });
});

describe('logEvent', () => {
  it('writes a record at the event level: message, id, name, then the fields, in that order', () => {
    const logger = recorder();
    logEvent(logger, 'JobDeadLettered', 'Job j moved to the DLQ', {
      jobId: 'j',
      queue: 'emails',
      type: 'welcome.v1',
      attempt: 3,
      reason: 'MaxRetriesExceeded',
      error: 'Error: boom',
    });
    expect(logger.calls).toHaveLength(1);
    const [level, args] = logger.calls[0];
    expect(level).toBe('error');
    expect(args).toHaveLength(1);
    const record = args[0] as ChokaQLogRecord;
    expect(record).toBeInstanceOf(ChokaQLogRecord);
    expect(Object.keys(record)).toEqual([
      'message',
      'eventId',
      'event',
      'jobId',
      'queue',
      'type',
      'attempt',
      'reason',
      'error',
    ]);
    expect({ ...record }).toMatchObject({ eventId: 2001, event: 'JobDeadLettered', attempt: 3 });
    // Stringified, it is the message: what a logger that prints String(message) shows.
    expect(String(record)).toBe('Job j moved to the DLQ');
    expect(inspect(record)).toBe('Job j moved to the DLQ');
  });

  it('hands an error trace over as the second argument of error()', () => {
    const logger = recorder();
    logEvent(
      logger,
      'EventListenerFailed',
      'listener threw',
      {
        listener: 'L.m',
        jobEvent: 'started',
        jobId: 'j',
        error: 'boom',
        suppressed: 0,
      },
      'Error: boom\n    at x (y.ts:1:1)',
    );
    expect(logger.calls[0][0]).toBe('error');
    expect(logger.calls[0][1][1]).toBe('Error: boom\n    at x (y.ts:1:1)');
  });
});

/**
 * Through Nest's own path (`new Logger(context)` → the application logger), the default
 * ConsoleLogger prints the human line exactly as a string message would be printed, and its JSON
 * mode writes the record's fields.
 */
describe("logEvent through Nest's Logger and ConsoleLogger (Nest 11)", () => {
  let out: string[];
  beforeEach(() => {
    out = [];
    for (const stream of [process.stdout, process.stderr]) {
      jest.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
        out.push(String(chunk));
        return true;
      });
    }
  });
  afterEach(() => {
    jest.restoreAllMocks();
    Logger.overrideLogger(new ConsoleLogger());
  });

  const fields = { count: 1, workerIds: ['w1'], jobIds: ['j1'] } as const;

  it('prints the message on one line with the class context, like a string message', () => {
    Logger.overrideLogger(new ConsoleLogger({ colors: false }));
    const logger = new Logger('ChokaQWorker');
    logEvent(logger, 'ZombiesDeadLettered', 'Rescue: 1 zombie job(s) moved to the DLQ', fields);
    logger.warn('Rescue: 1 zombie job(s) moved to the DLQ');
    expect(out).toHaveLength(2);
    const strip = (line: string) => line.replace(/^.*? WARN /, '').replace(/\s+$/, '');
    expect(strip(out[0])).toBe('[ChokaQWorker] Rescue: 1 zombie job(s) moved to the DLQ');
    expect(strip(out[0])).toBe(strip(out[1]));
  });

  it('prints an error with its trace, on stderr', () => {
    Logger.overrideLogger(new ConsoleLogger({ colors: false }));
    logEvent(new Logger('ChokaQWorker'), 'ShutdownStepFailed', "Shutdown step 'x' failed: boom", {
      workerId: 'w',
      step: 'x',
      error: 'boom',
    });
    expect(out).toHaveLength(1);
    expect(out[0]).toContain("[ChokaQWorker] Shutdown step 'x' failed: boom");
    expect(out[0]).not.toContain('Object(');
  });

  it('writes the fields in JSON mode (ConsoleLogger json: true), under message', () => {
    Logger.overrideLogger(new ConsoleLogger({ json: true }));
    logEvent(new Logger('ChokaQWorker'), 'ZombiesDeadLettered', 'Rescue: 1 zombie', fields);
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0])).toMatchObject({
      level: 'warn',
      context: 'ChokaQWorker',
      message: {
        message: 'Rescue: 1 zombie',
        eventId: 4001,
        event: 'ZombiesDeadLettered',
        count: 1,
        workerIds: ['w1'],
        jobIds: ['j1'],
      },
    });
  });
});
