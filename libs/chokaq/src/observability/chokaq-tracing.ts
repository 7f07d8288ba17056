import { toError } from '../common/error-text';
import { libraryVersion } from '../common/version';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import {
  loadOtelApi,
  OTEL_SPAN_KIND_CONSUMER,
  OTEL_STATUS_ERROR,
  type OtelApi,
  type OtelSpan,
  type OtelTracer,
  type OtelTracerProvider,
} from './otel-api';

/** The tracer ChokaQ starts its spans on. @publicApi */
export const CHOKAQ_TRACER_NAME = 'chokaq';

/**
 * The attributes of the span of one run (its name is `process <queue>`, its kind `CONSUMER`): the
 * OpenTelemetry messaging conventions' names where they have one, `chokaq.*` for the rest. Values
 * of `chokaq.run.result`: `succeeded`, `failed` (the handler threw), `timeout`, `cancelled`,
 * `heartbeat-failure`, `abandoned` (still running at the end of the shutdown grace period).
 * @publicApi
 */
export const CHOKAQ_SPAN_ATTRIBUTES = {
  system: 'messaging.system',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  destination: 'messaging.destination.name',
  messageId: 'messaging.message.id',
  type: 'chokaq.job.type',
  attempt: 'chokaq.job.attempt',
  result: 'chokaq.run.result',
} as const;

/** How a run ended, as the span of the run records it (`chokaq.run.result`). */
export type RunSpanResult =
  'succeeded' | 'failed' | 'timeout' | 'cancelled' | 'heartbeat-failure' | 'abandoned';

/** What a run's span is started from: the claimed job and the attempt this run is. */
export interface TracedRun {
  id: string;
  queue: string;
  type: string;
  /** The producer's trace context stored with the job, if any. */
  traceContext: Readonly<Record<string, string>> | null;
}

/** The span of one run, started by {@link ChokaQTracing.startRun}. */
export interface RunSpan {
  /** Calls `fn` with the span as the active one, so spans the handler starts are its children. */
  run<T>(fn: () => T): T;
  /**
   * Ends the span with the run's result; unless it succeeded, with status ERROR and, when there
   * is one, the error recorded as an exception event. Only the first call counts.
   */
  end(result: RunSpanResult, error?: unknown): void;
}

/** The span of a run that no one traces: it runs `fn` as it is. */
const UNTRACED: RunSpan = { run: (fn) => fn(), end: () => undefined };

/**
 * ChokaQ's traces (tracer `chokaq`): the producer's trace context captured at enqueue, to be stored
 * with the job, and one `CONSUMER` span per run of a handler, linked to that context and parented
 * by it.
 *
 * **Parent and link.** A run's span has the producer's span (stored at enqueue) as its parent and
 * also links to it. The OpenTelemetry messaging conventions require the link (a batch consumer
 * cannot have several parents) and allow the parent when one message is processed, which is
 * always the case here: so the trace of the request that enqueued a job shows every attempt that
 * ran it, retries and runs after a resurrect included, and backends that follow links find it
 * too. A job without a stored context (enqueued with tracing off, by a recurring slot, or by an
 * older release) runs in a root span; the context of the worker's own loops is never the parent.
 *
 * **Off costs nothing.** Without `@opentelemetry/api`, without a registered SDK (the API's global
 * provider is a no-op until one registers), or with `tracing.enabled: false`, the instance is
 * disabled: nothing is captured at enqueue and a run gets a shared no-op span, with no object
 * built per job.
 *
 * Not a Nest provider by itself: the module creates it from the resolved options; `JobClient` and
 * the worker's executor get it (a disabled one by default).
 */
export class ChokaQTracing {
  /** False when nothing is traced (see the class comment). */
  readonly enabled: boolean;

  private constructor(
    private readonly api: OtelApi | undefined,
    private readonly tracer: OtelTracer | undefined,
  ) {
    this.enabled = api !== undefined && tracer !== undefined;
  }

  /** An instance that traces nothing (a worker built without tracing, tests). */
  static disabled(): ChokaQTracing {
    return new ChokaQTracing(undefined, undefined);
  }

  /**
   * The tracing of `options`: spans on the given `tracerProvider`, else on the global one of
   * `@opentelemetry/api` (loaded here; `loadApi` is for tests). Disabled when the options say so,
   * when the API is not installed, or when no SDK has registered a global provider yet. The
   * context is always captured and read through the API's global propagator and context manager.
   */
  static create(
    options: ResolvedChokaQOptions['tracing'],
    loadApi: () => OtelApi | undefined = loadOtelApi,
  ): ChokaQTracing {
    if (!options.enabled) return ChokaQTracing.disabled();
    const api = loadApi();
    if (!api) return ChokaQTracing.disabled();
    const version = libraryVersion();
    const given = options.tracerProvider as OtelTracerProvider | undefined;
    let tracer: OtelTracer | undefined;
    if (given) {
      tracer = given.getTracer(CHOKAQ_TRACER_NAME, version);
    } else {
      const provider = api.trace.getTracerProvider();
      // The global provider is the API's proxy; it hands out a real tracer only once an SDK has
      // registered its provider as the delegate.
      tracer =
        provider instanceof api.ProxyTracerProvider
          ? provider.getDelegateTracer(CHOKAQ_TRACER_NAME, version)
          : provider.getTracer(CHOKAQ_TRACER_NAME, version);
    }
    return tracer ? new ChokaQTracing(api, tracer) : ChokaQTracing.disabled();
  }

  /**
   * The active trace context as the global propagator writes it (`traceparent`, `tracestate`),
   * to be stored with a job; undefined when disabled or when the propagator wrote nothing (no
   * active span). Never throws: tracing must not fail an enqueue.
   */
  capture(): Record<string, string> | undefined {
    const api = this.api;
    if (!api) return undefined;
    try {
      const carrier: Record<string, string> = {};
      api.propagation.inject(api.context.active(), carrier);
      return Object.keys(carrier).length > 0 ? carrier : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Starts the span of one run of `job` (its `attempt`-th): `process <queue>`, kind `CONSUMER`,
   * parented by and linked to the producer's stored context when it holds a valid span context,
   * a root span otherwise. A shared no-op span when disabled, or when the SDK throws.
   */
  startRun(job: TracedRun, attempt: number): RunSpan {
    const { api, tracer } = this;
    if (!api || !tracer) return UNTRACED;
    try {
      return this.start(api, tracer, job, attempt);
    } catch {
      // A propagator or SDK that throws must not keep the handler from running.
      return UNTRACED;
    }
  }

  private start(api: OtelApi, tracer: OtelTracer, job: TracedRun, attempt: number): RunSpan {
    // Built on the empty context, not the active one: the claim that brought the job in may run
    // in whatever context woke the fetcher (a nudge from a request handler's enqueue).
    const parent = job.traceContext
      ? api.propagation.extract(api.ROOT_CONTEXT, job.traceContext)
      : api.ROOT_CONTEXT;
    const producer = api.trace.getSpanContext(parent);
    const A = CHOKAQ_SPAN_ATTRIBUTES;
    const span = tracer.startSpan(
      `process ${job.queue}`,
      {
        kind: OTEL_SPAN_KIND_CONSUMER,
        attributes: {
          [A.system]: 'chokaq',
          [A.operationType]: 'process',
          [A.operationName]: 'process',
          [A.destination]: job.queue,
          [A.messageId]: job.id,
          [A.type]: job.type,
          [A.attempt]: attempt,
        },
        links:
          producer && api.trace.isSpanContextValid(producer) ? [{ context: producer }] : undefined,
      },
      parent,
    );
    const active = api.trace.setSpan(parent, span);
    let ended = false;
    return {
      run: (fn) => api.context.with(active, fn),
      end: (result, error) => {
        if (ended) return;
        ended = true;
        endSpan(span, result, error);
      },
    };
  }
}

/** Records the result on `span` and ends it. An SDK that throws must not fail the run. */
function endSpan(span: OtelSpan, result: RunSpanResult, error: unknown): void {
  try {
    span.setAttribute(CHOKAQ_SPAN_ATTRIBUTES.result, result);
    if (result !== 'succeeded') {
      const cause = error === undefined ? undefined : toError(error);
      if (cause) span.recordException(cause);
      span.setStatus({ code: OTEL_STATUS_ERROR, message: cause?.message ?? result });
    }
  } catch {
    // The span keeps what was recorded; it is still ended below.
  }
  try {
    span.end();
  } catch {
    // Nothing more to do for a span the SDK refuses to end.
  }
}
