import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/**
 * OpenTelemetry traces for the sample, printed to the console, when `OTEL_TRACES=console`. The
 * application owns the SDK (here `@opentelemetry/sdk-trace-base`, `@opentelemetry/context-async-hooks`
 * and `@opentelemetry/core`); ChokaQ only starts spans through `@opentelemetry/api`. What an SDK
 * start registers, registered by hand: the provider, an `AsyncLocalStorage` context manager (the
 * active span follows async calls) and the W3C Trace Context propagator (ChokaQ writes and reads
 * the context it stores with each job through it). Register before `NestFactory.create`: ChokaQ
 * binds its tracer when the module's providers are created.
 *
 * `SimpleSpanProcessor` prints each span as it ends, so nothing waits in a buffer at exit.
 */
export function registerConsoleTracing(): BasicTracerProvider | undefined {
  if (process.env.OTEL_TRACES !== 'console') return undefined;
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return provider;
}
