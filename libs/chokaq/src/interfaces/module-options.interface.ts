import type { Type } from '@nestjs/common';
import type { ChokaQMiddleware } from './middleware.interface';
import type { StorageOptions } from './storage-options.interface';

/**
 * Everything `ChokaQModule.forRoot()` accepts. Durations are milliseconds. Every field is optional;
 * {@link resolveChokaQOptions} applies the defaults (SPEC §6) and validates the result.
 *
 * @publicApi
 */
export interface ChokaQModuleOptions {
  /** Where the tables live. Default: the SQLite file `chokaq.db` in the working directory. */
  storage?: StorageOptions;
  retry?: {
    /** Attempts in all, including the first. Default 3. */
    maxAttempts?: number;
    /** Wait before the first retry. Default 3,000. */
    baseDelayMs?: number;
    /** Growth of the wait per further attempt. Default 2. */
    multiplier?: number;
    /** Longest wait between attempts. Default 3,600,000 (1 h). */
    maxDelayMs?: number;
    /** Random extra wait, 0 to this, added to each retry. Default 1,000. */
    jitterMs?: number;
    /** No retry once a job has been in the hot table this long (from `EnqueuedAtUtc`). Default 86,400,000 (1 day). */
    maxJobAgeMs?: number;
  };
  execution?: {
    /** Execution timeout when neither the handler nor the queue sets one. Default 900,000 (15 min). */
    timeoutMs?: number;
  };
  heartbeat?: {
    /** Interval of the process's batched heartbeat, jittered ±20 %. Default 10,000. */
    intervalMs?: number;
    /** Consecutive heartbeat failures before the process reacts. Default 10. */
    failureThreshold?: number;
    /** After `failureThreshold` failures abort running jobs (true) or log degraded and go on (false). Default true. */
    cancelOnHeartbeatFailure?: boolean;
  };
  rescue?: {
    /** Interval of the rescue loop, jittered; its first run is delayed by one interval. Default 60,000. */
    intervalMs?: number;
    /** A Fetched row untouched this long returns to Pending. Default 600,000. */
    fetchedJobTimeoutMs?: number;
    /** A Processing row whose heartbeat is this old is a zombie (queues may override). Default 600,000. */
    zombieTimeoutMs?: number;
  };
  worker?: {
    /** False = producer-only: `JobClient` and admin work, no loop runs. Default true. */
    enabled?: boolean;
    /** Handlers running at once in this process (resizable at run time). Default 10. */
    concurrency?: number;
    /**
     * Claimed jobs waiting in this process for a slot: Fetched rows buffered, or rows started ahead
     * (`startAhead`). Bounds what a process holds in memory before its handlers: at most
     * `prefetch × payload.maxBytes` of payloads. Default 128.
     */
    prefetch?: number;
    /**
     * Most jobs a claim may start ahead of this process's free slots (PostgreSQL; other dialects
     * start nothing ahead). Started ahead, a job is Processing with its attempt counted while it
     * waits here for a slot, so a freed slot runs its next job with no round trip. How many are kept
     * follows the recent rate (about two claim round trips of work, so slow handlers keep next to
     * none), at most this and at most `prefetch`. The cost: a crash of the process leaves up to
     * `concurrency + startAhead` jobs as zombies, some of which never ran. `0` turns it off (every
     * job is started when a slot is free for it). Not used by a process that handles a queue with a
     * `MaxWorkers` budget or a rate limit. Default 128.
     */
    startAhead?: number;
    /** Most rows claimed by one fetch. Default 20. */
    batchSize?: number;
    /** Sleep of the fetcher when nothing is due. Default 1,000. */
    pollIntervalMs?: number;
    /** How long shutdown waits for running handlers after aborting their signals. Default 30,000. */
    shutdownGracePeriodMs?: number;
    /** Worker id; default `hostname:pid:random`. */
    workerId?: string;
  };
  payload?: {
    /** Largest payload, in UTF-8 bytes of its JSON. Default 1,000,000. */
    maxBytes?: number;
  };
  retention?: {
    /** Archive rows are kept this long after they finished. Default 7 days. */
    archiveMs?: number;
    /** DLQ rows are kept this long after they failed. Default 30 days. */
    dlqMs?: number;
    /** Metric buckets are kept this long. Default 1 day. */
    metricsMs?: number;
    /**
     * Rows of the Workers table (`ChokaQAdmin.listWorkers`) are kept this long after the worker
     * was last seen: stopped and lost workers stay visible this long. At least
     * `rescue.zombieTimeoutMs`, so a lost worker is shown as lost before it is removed. Default
     * 1 day, or `rescue.zombieTimeoutMs` when that is longer.
     */
    workersMs?: number;
    /** Audit log entries are kept this long. Default 90 days (longer than the DLQ's 30). */
    auditMs?: number;
    /** Interval of the maintenance loop. Default 3,600,000 (1 h). */
    intervalMs?: number;
  };
  circuitBreaker?: {
    /** Failures of one job type within `windowMs` that open its circuit. Default 5. */
    failureThreshold?: number;
    /** Window in which failures are counted. Default 60,000. */
    windowMs?: number;
    /** How long an open circuit stays open before half-open probes. Default 30,000. */
    breakDurationMs?: number;
    /** Probes allowed at once while half-open. Default 1. */
    halfOpenProbes?: number;
  };
  events?: {
    /**
     * Events waiting for one listener (an `@OnJobEvent` method or a `JobEvents` subscription)
     * while it is busy with earlier ones. Beyond this, that listener's new events are dropped
     * (counted, logged once); the job and the other listeners are never held up. Default 1,000.
     */
    maxQueuedPerListener?: number;
  };
  /**
   * OpenTelemetry metrics (meter `chokaq`). They need the optional peer `@opentelemetry/api` and a
   * `MeterProvider`: the global one an application registers with an OpenTelemetry SDK, or
   * `meterProvider`. Without either, every instrument is a no-op.
   */
  metrics?: {
    /** False: record nothing, even with an SDK registered. Default true. */
    enabled?: boolean;
    /**
     * The `MeterProvider` to record into. Default: the global one of `@opentelemetry/api`
     * (`metrics.getMeterProvider()`), read when the module's providers are created, so register
     * the SDK before creating the Nest application.
     */
    meterProvider?: ChokaQMeterProvider;
    /**
     * Distinct values each attribute (`queue`, `type`, `reason`, `outcome`) may take in this
     * process; further values are recorded as `other`. Default 100.
     */
    maxAttributeValues?: number;
    /**
     * Observe the queue gauges (`chokaq.queue.pending`, `chokaq.queue.oldest_due_age`,
     * `chokaq.queue.dlq_size`), read from the database once per collection. They describe the
     * whole cluster, so one process exporting them is enough: set false in the others. Default true.
     */
    queueGauges?: boolean;
  };
  /**
   * OpenTelemetry traces (tracer `chokaq`): the trace context of the enqueuing code is stored with
   * each job, and each run of a handler is a `CONSUMER` span parented by and linked to it. They need
   * the optional peer `@opentelemetry/api` and a `TracerProvider`: the global one an application
   * registers with an OpenTelemetry SDK, or `tracerProvider`. Without either, nothing is traced.
   */
  tracing?: {
    /** False: store no trace context and start no span, even with an SDK registered. Default true. */
    enabled?: boolean;
    /**
     * The `TracerProvider` to start spans on. Default: the global one of `@opentelemetry/api`
     * (`trace.getTracerProvider()`), read when the module's providers are created, so register
     * the SDK before creating the Nest application. Trace contexts are written and read through
     * the API's global propagator either way (every OpenTelemetry SDK setup registers the W3C one).
     */
    tracerProvider?: ChokaQTracerProvider;
  };
}

/**
 * What ChokaQ needs of an OpenTelemetry `MeterProvider` (`@opentelemetry/api` 1.x), stated
 * structurally so that the options do not make `@opentelemetry/api` a compile-time dependency: a
 * `MeterProvider` of `@opentelemetry/sdk-metrics` is one.
 *
 * @publicApi
 */
export interface ChokaQMeterProvider {
  getMeter(name: string, version?: string, options?: { schemaUrl?: string }): unknown;
}

/**
 * What ChokaQ needs of an OpenTelemetry `TracerProvider` (`@opentelemetry/api` 1.x), stated
 * structurally (see {@link ChokaQMeterProvider}): a `BasicTracerProvider` or `NodeTracerProvider`
 * of the OpenTelemetry SDK is one.
 *
 * @publicApi
 */
export interface ChokaQTracerProvider {
  getTracer(name: string, version?: string, options?: { schemaUrl?: string }): unknown;
}

/**
 * Options of `forRoot`/`forRootAsync` that decide providers and therefore cannot come from an async
 * factory (nestjs/cache-manager style "extras").
 *
 * @publicApi
 */
export interface ChokaQModuleExtras {
  /** Middleware classes, resolved through Nest DI; the first listed is the outermost. */
  middleware?: Type<ChokaQMiddleware>[];
  /** Register the module globally. Default true. */
  isGlobal?: boolean;
}

/** {@link ChokaQModuleOptions} with every default applied and validated. */
export interface ResolvedChokaQOptions {
  storage: StorageOptions;
  retry: Required<NonNullable<ChokaQModuleOptions['retry']>>;
  execution: Required<NonNullable<ChokaQModuleOptions['execution']>>;
  heartbeat: Required<NonNullable<ChokaQModuleOptions['heartbeat']>>;
  rescue: Required<NonNullable<ChokaQModuleOptions['rescue']>>;
  worker: Required<NonNullable<ChokaQModuleOptions['worker']>>;
  payload: Required<NonNullable<ChokaQModuleOptions['payload']>>;
  retention: Required<NonNullable<ChokaQModuleOptions['retention']>>;
  circuitBreaker: Required<NonNullable<ChokaQModuleOptions['circuitBreaker']>>;
  events: Required<NonNullable<ChokaQModuleOptions['events']>>;
  metrics: Required<Omit<NonNullable<ChokaQModuleOptions['metrics']>, 'meterProvider'>> & {
    meterProvider?: ChokaQMeterProvider;
  };
  tracing: Required<Omit<NonNullable<ChokaQModuleOptions['tracing']>, 'tracerProvider'>> & {
    tracerProvider?: ChokaQTracerProvider;
  };
}
