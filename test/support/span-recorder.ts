import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

/**
 * What an application's OpenTelemetry set-up does for traces, with the SDK's in-memory exporter: a
 * `BasicTracerProvider` that exports each span as it ends (`SimpleSpanProcessor`), and, with
 * `register`, the globals an SDK start registers: that provider, an `AsyncLocalStorage` context
 * manager (so the active span follows async calls) and the W3C Trace Context propagator.
 * `disable()` removes the globals again.
 */
export function traceHarness(options: { register?: boolean } = {}): {
  provider: BasicTracerProvider;
  exporter: InMemorySpanExporter;
  spans(): ReadableSpan[];
  disable(): Promise<void>;
} {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let manager: AsyncLocalStorageContextManager | undefined;
  if (options.register) {
    manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
  }
  return {
    provider,
    exporter,
    spans: () => exporter.getFinishedSpans(),
    async disable() {
      if (options.register) {
        trace.disable();
        propagation.disable();
        context.disable();
        manager?.disable();
      }
      await provider.shutdown();
    },
  };
}

/** The parent span id of a finished span (SDK 2.x keeps it in `parentSpanContext`). */
export function parentSpanId(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
