/*
 * The part of the OpenTelemetry metrics API (`@opentelemetry/api` 1.x) that ChokaQ calls, stated
 * structurally. `@opentelemetry/api` is an optional peer dependency: nothing here imports it at
 * compile time, and `loadOtelApi` requires it only when the metrics are switched on, so the
 * library loads, compiles and runs without it.
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

/** What ChokaQ uses of the `@opentelemetry/api` module. */
export interface OtelApi {
  metrics: { getMeterProvider(): OtelMeterProvider };
  /** The API's no-op meter: what the global provider hands out while no SDK is registered. */
  createNoopMeter(): OtelMeter;
}

/** The package name of the optional peer. */
export const OTEL_API_PACKAGE = '@opentelemetry/api';

/**
 * `@opentelemetry/api` as the application installed it, or undefined when it is not installed.
 * Any other failure to load it (a broken install) is thrown: it is worth a failed start, not
 * silently missing metrics.
 *
 * `load` is for tests (a `require` that fails as a missing package does).
 */
export function loadOtelApi(
  // Required lazily, at the call, and only when metrics are on: a top-level import would make the
  // optional peer mandatory.
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
