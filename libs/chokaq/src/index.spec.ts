import * as api from './index';

/**
 * Pins, at compile time, the types a user needs to call or implement the exported `JobStorage` (and its halves):
 * `npm run typecheck` fails if one of them stops being exported.
 */
export type StorageContractTypes = [
  api.JobStorage,
  api.JobStore,
  api.JobQueries,
  api.NewJob,
  api.EnqueueOptions,
  api.EnqueueResult,
  api.JobLease,
  api.HandledJobs,
  api.FetchRequest,
  api.HotJob,
  api.KeepAliveResult,
  api.CompletedJob,
  api.HandlerTransaction,
  api.HandlerTransactionSupport,
  api.RunRef,
  api.DlqMove,
  api.ZombieRescueResult,
  api.RescuedZombie,
  api.ZombieRetryRule,
  api.WorkerHeartbeat,
  api.WorkerInfo,
  api.WorkerQuery,
  api.RecurringJobDefinition,
  api.RecurringJobRecord,
  api.CountQuery,
  api.ThroughputSeriesQuery,
  api.ThroughputPoint,
  api.QueueOutcomesQuery,
  api.QueueOutcomes,
  api.StartLag,
  api.SchemaStatus,
  api.SchemaVersionInfo,
  api.GetJobOptions,
  api.JobAttempt,
  api.JobAttemptOutcome,
];

/**
 * Pins the runtime names of the public API. A change here is a change of the published package:
 * update the README and the changelog with it.
 */
describe('public API (index.ts)', () => {
  it('exports exactly these values', () => {
    expect(Object.keys(api).sort()).toEqual(
      [
        'CHOKAQ_LOG_EVENTS',
        'CHOKAQ_METER_NAME',
        'CHOKAQ_METRICS',
        'CHOKAQ_SPAN_ATTRIBUTES',
        'CHOKAQ_TRACER_NAME',
        'AUDIT_ACTIONS',
        'ChokaQAdmin',
        'ChokaQCompatibilityLevelError',
        'ChokaQConfirmationError',
        'ChokaQDrainTimeoutError',
        'ChokaQDuplicateHandlerError',
        'ChokaQDuplicateRecurringJobError',
        'ChokaQError',
        'ChokaQFatalError',
        'ChokaQHandlerScopeError',
        'ChokaQJobAbortedError',
        'ChokaQJobTimeoutError',
        'ChokaQMissingPeerError',
        'ChokaQLogRecord',
        'ChokaQModule',
        'ChokaQRecurringJobNotFoundError',
        'ChokaQStorageUnavailableError',
        'ChokaQTesting',
        'ChokaQThrottledError',
        'ChokaQTransactionError',
        'ChokaQTransactionalHandlerError',
        'ChokaQUnsupportedServerError',
        'ChokaQValidationError',
        'ChokaQPayloadValidationError',
        'ChokaQPayloadVersionError',
        'ChokaQWorkerDisabledError',
        'FailureReason',
        'HandlerRegistry',
        'JOB_EVENT_NAMES',
        'JobClient',
        'JobEvents',
        'JobHandler',
        'JobStatus',
        'MAX_ENQUEUE_MANY',
        'MAX_LIST_SCAN',
        'MAX_PAGE_SIZE',
        'OnJobEvent',
        'RecurringJob',
        'defineJob',
        'getChokaQOptionsToken',
        'getJobStorageToken',
        'resolveChokaQOptions',
      ].sort(),
    );
  });

  it('exposes forRoot and forRootAsync', () => {
    expect(typeof api.ChokaQModule.forRoot).toBe('function');
    expect(typeof api.ChokaQModule.forRootAsync).toBe('function');
  });

  it('keeps the contract codes of SPEC §2', () => {
    expect(api.JobStatus).toMatchObject({
      Pending: 0,
      Fetched: 1,
      Processing: 2,
      Succeeded: 3,
      Failed: 4,
      Cancelled: 5,
      Zombie: 6,
    });
    expect(api.FailureReason).toMatchObject({
      MaxRetriesExceeded: 0,
      Cancelled: 1,
      Zombie: 2,
      CircuitBreakerOpen: 3,
      Throttled: 5,
      FatalError: 6,
      Timeout: 7,
      HeartbeatFailure: 9,
      RetryLifetimeExpired: 10,
      NoHandler: 11,
    });
  });

  it('makes every error a ChokaQError', () => {
    for (const [name, value] of Object.entries(api)) {
      if (name.endsWith('Error') && name !== 'ChokaQError') {
        expect((value as { prototype: unknown }).prototype).toBeInstanceOf(api.ChokaQError);
      }
    }
  });
});
