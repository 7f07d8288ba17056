/*
 * The part of the OpenTelemetry API (`@opentelemetry/api` 1.x: metrics, and the trace, context and
 * propagation APIs) that ChokaQ calls, stated structurally. `@opentelemetry/api` is an optional
 * peer dependency: nothing here imports it at compile time, and `loadOtelApi` requires it only
 * when metrics or traces are switched on, so the library loads, compiles and runs without it.
 */

/** Attributes of one data point: ChokaQ's are all strings. */
export type OtelAttributes = Record<string, string>;

/** A `Counter` or an `UpDownCounter`. */
export interface OtelCounter {
  add(value: number, attributes?: OtelAttributes): void;
}

/** A `Histogram`. */
export interface OtelHistogram {
  record(value: number, attributes?: OtelAttributes): void;
}

/** An observable instrument (ChokaQ's are `ObservableGauge`s), only ever handed back to the meter. */
export type OtelObservable = object;

/** What a batch observable callback reports through. */
export interface OtelBatchObservableResult {
  observe(observable: OtelObservable, value: number, attributes?: OtelAttributes): void;
}

/** A callback observing several instruments from one read. */
export type OtelBatchObservableCallback = (
  result: OtelBatchObservableResult,
) => void | Promise<void>;

/** `MetricOptions` as ChokaQ sets them. */
export interface OtelInstrumentOptions {
  description?: string;
  unit?: string;
  advice?: { explicitBucketBoundaries?: number[] };
}

/** A `Meter`. */
export interface OtelMeter {
  createCounter(name: string, options?: OtelInstrumentOptions): OtelCounter;
  createUpDownCounter(name: string, options?: OtelInstrumentOptions): OtelCounter;
  createHistogram(name: string, options?: OtelInstrumentOptions): OtelHistogram;
  createObservableGauge(name: string, options?: OtelInstrumentOptions): OtelObservable;
  addBatchObservableCallback(
    callback: OtelBatchObservableCallback,
    observables: OtelObservable[],
  ): void;
  removeBatchObservableCallback(
    callback: OtelBatchObservableCallback,
    observables: OtelObservable[],
  ): void;
}

/** A `MeterProvider`. */
export interface OtelMeterProvider {
  getMeter(name: string, version?: string): OtelMeter;
}

/** An opaque `Context` of the context API. */
export type OtelContext = object;

/** A `SpanContext`: the identity of a span, as propagated. */
export interface OtelSpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
}

/** Attributes of a span: ChokaQ's are strings and numbers. */
export type OtelSpanAttributes = Record<string, string | number>;

/** A `Span`, as ChokaQ ends it. */
export interface OtelSpan {
  spanContext(): OtelSpanContext;
  setAttribute(key: string, value: string | number): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error): void;
  end(): void;
}

/** `SpanOptions` as ChokaQ sets them. */
export interface OtelSpanOptions {
  kind?: number;
  attributes?: OtelSpanAttributes;
  links?: Array<{ context: OtelSpanContext }>;
}

/** A `Tracer`. */
export interface OtelTracer {
  startSpan(name: string, options?: OtelSpanOptions, context?: OtelContext): OtelSpan;
}

/** A `TracerProvider`. */
export interface OtelTracerProvider {
  getTracer(name: string, version?: string): OtelTracer;
}

/** The API's `ProxyTracerProvider`: the global provider, a no-op until an SDK sets its delegate. */
export interface OtelProxyTracerProvider extends OtelTracerProvider {
  /** The tracer of the registered SDK, or undefined while none is registered. */
  getDelegateTracer(name: string, version?: string): OtelTracer | undefined;
}

/** What ChokaQ uses of the `@opentelemetry/api` module. */
export interface OtelApi {
  metrics: { getMeterProvider(): OtelMeterProvider };
  /** The API's no-op meter: what the global provider hands out while no SDK is registered. */
  createNoopMeter(): OtelMeter;
  trace: {
    getTracerProvider(): OtelTracerProvider;
    getSpanContext(context: OtelContext): OtelSpanContext | undefined;
    isSpanContextValid(spanContext: OtelSpanContext): boolean;
    setSpan(context: OtelContext, span: OtelSpan): OtelContext;
  };
  context: {
    active(): OtelContext;
    with<T>(context: OtelContext, fn: () => T): T;
  };
  propagation: {
    /** Writes the context into `carrier` through the global propagator (W3C by default in SDKs). */
    inject(context: OtelContext, carrier: Record<string, string>): void;
    /** Reads a context from `carrier` through the global propagator, on top of `context`. */
    extract(context: OtelContext, carrier: Readonly<Record<string, string>>): OtelContext;
  };
  /** The empty context: a span started on it is a root unless a propagated context is added. */
  ROOT_CONTEXT: OtelContext;
  /** The class of the API's global tracer provider (see {@link OtelProxyTracerProvider}). */
  ProxyTracerProvider: abstract new (...args: never[]) => OtelProxyTracerProvider;
}

/** `SpanKind.CONSUMER` of `@opentelemetry/api` (a stable enum value of the API). */
export const OTEL_SPAN_KIND_CONSUMER = 4;

/** `SpanStatusCode.ERROR` of `@opentelemetry/api` (a stable enum value of the API). */
export const OTEL_STATUS_ERROR = 2;

/** The package name of the optional peer. */
export const OTEL_API_PACKAGE = '@opentelemetry/api';

/**
 * `@opentelemetry/api` as the application installed it, or undefined when it is not installed.
 * Any other failure to load it (a broken install) is thrown: it is worth a failed start, not
 * silently missing metrics or traces.
 *
 * `load` is for tests (a `require` that fails as a missing package does).
 */
export function loadOtelApi(
  // Required lazily, at the call, and only when metrics or traces are on: a top-level import would
  // make the optional peer mandatory.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  load: () => unknown = () => require('@opentelemetry/api'),
): OtelApi | undefined {
  try {
    return load() as OtelApi;
  } catch (error) {
    if (isMissingPackage(error)) return undefined;
    throw error;
  }
}

/** Node's error for a package that is not installed (not one that failed inside its own code). */
function isMissingPackage(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return (
    e?.code === 'MODULE_NOT_FOUND' &&
    typeof e.message === 'string' &&
    e.message.includes(`'${OTEL_API_PACKAGE}'`)
  );
}
