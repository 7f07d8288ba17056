import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { parentSpanId, traceHarness } from '../../../../test/support/span-recorder';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import { CHOKAQ_TRACER_NAME, ChokaQTracing, type TracedRun } from './chokaq-tracing';

const ON: ResolvedChokaQOptions['tracing'] = { enabled: true };

const PRODUCER = {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
};
const STORED = {
  traceparent: `00-${PRODUCER.traceId}-${PRODUCER.spanId}-01`,
  tracestate: 'vendor=opaque',
};

function run(traceContext: TracedRun['traceContext'] = STORED): TracedRun {
  return { id: 'job-1', queue: 'emails', type: 'welcome.v1', traceContext };
}

describe('ChokaQTracing', () => {
  describe('disabled: nothing is captured and no span is started', () => {
    it('with tracing.enabled false, even when a TracerProvider is given', async () => {
      const harness = traceHarness();
      const tracing = ChokaQTracing.create({ enabled: false, tracerProvider: harness.provider });
      expect(tracing.enabled).toBe(false);
      expect(tracing.capture()).toBeUndefined();
      const span = tracing.startRun(run(), 1);
      expect(span.run(() => 7)).toBe(7);
      span.end('failed', new Error('x'));
      expect(harness.spans()).toEqual([]);
      await harness.disable();
    });

    it('without @opentelemetry/api', () => {
      expect(ChokaQTracing.create(ON, () => undefined).enabled).toBe(false);
    });

    it('while no SDK has registered a global TracerProvider (the API proxy has no delegate)', () => {
      trace.disable();
      expect(ChokaQTracing.create(ON).enabled).toBe(false);
    });

    it('shares one no-op span between runs: nothing is built per job', () => {
      const tracing = ChokaQTracing.disabled();
      expect(tracing.startRun(run(), 1)).toBe(tracing.startRun(run(null), 2));
    });
  });

  describe('with an SDK registered globally (provider, context manager, W3C propagator)', () => {
    let harness: ReturnType<typeof traceHarness>;
    beforeEach(() => {
      harness = traceHarness({ register: true });
    });
    afterEach(() => harness.disable());

    it('captures the active span as a W3C carrier, and nothing outside a span', () => {
      const tracing = ChokaQTracing.create(ON);
      expect(tracing.enabled).toBe(true);
      expect(tracing.capture()).toBeUndefined();
      const tracer = trace.getTracer('app');
      const carrier = tracer.startActiveSpan('request', (span) => {
        span.end();
        return tracing.capture();
      });
      const { traceId, spanId } = harness.spans()[0].spanContext();
      expect(carrier).toEqual({ traceparent: `00-${traceId}-${spanId}-01` });
    });

    it('a run is a CONSUMER span parented by and linked to the stored context, with the messaging attributes', () => {
      const tracing = ChokaQTracing.create(ON);
      const span = tracing.startRun(run(), 3);
      span.end('succeeded');
      const [finished] = harness.spans();
      expect(finished.name).toBe('process emails');
      expect(finished.kind).toBe(SpanKind.CONSUMER);
      expect(finished.instrumentationScope.name).toBe(CHOKAQ_TRACER_NAME);
      expect(finished.spanContext().traceId).toBe(PRODUCER.traceId);
      expect(parentSpanId(finished)).toBe(PRODUCER.spanId);
      expect(finished.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([
        [PRODUCER.traceId, PRODUCER.spanId],
      ]);
      expect(finished.spanContext().traceState?.get('vendor')).toBe('opaque');
      expect(finished.attributes).toEqual({
        'messaging.system': 'chokaq',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.name': 'emails',
        'messaging.message.id': 'job-1',
        'chokaq.job.type': 'welcome.v1',
        'chokaq.job.attempt': 3,
        'chokaq.run.result': 'succeeded',
      });
      expect(finished.status.code).toBe(SpanStatusCode.UNSET);
    });

    it('without a stored context (or an unreadable one) a run is a root span without links, whatever context is active', () => {
      const tracing = ChokaQTracing.create(ON);
      const outer = trace.getTracer('app').startSpan('fetch loop');
      context.with(trace.setSpan(context.active(), outer), () => {
        tracing.startRun(run(null), 1).end('succeeded');
        tracing.startRun(run({ traceparent: 'not a traceparent' }), 1).end('succeeded');
      });
      outer.end();
      const runs = harness.spans().filter((s) => s.name === 'process emails');
      expect(runs).toHaveLength(2);
      for (const span of runs) {
        expect(parentSpanId(span)).toBeUndefined();
        expect(span.links).toEqual([]);
        expect(span.spanContext().traceId).not.toBe(outer.spanContext().traceId);
      }
    });

    it("the handler's own spans are children of the run's span, across awaits", async () => {
      const tracing = ChokaQTracing.create(ON);
      const span = tracing.startRun(run(), 1);
      await span.run(async () => {
        await new Promise((resolve) => setImmediate(resolve));
        trace.getTracer('app').startSpan('send email').end();
      });
      span.end('succeeded');
      const child = harness.spans().find((s) => s.name === 'send email')!;
      const parent = harness.spans().find((s) => s.name === 'process emails')!;
      expect(parentSpanId(child)).toBe(parent.spanContext().spanId);
      expect(child.spanContext().traceId).toBe(PRODUCER.traceId);
    });

    it('a failed run has status ERROR and the exception recorded; a run ends once', () => {
      const tracing = ChokaQTracing.create(ON);
      const span = tracing.startRun(run(), 2);
      span.end('failed', new TypeError('smtp down'));
      span.end('succeeded');
      tracing.startRun(run(), 1).end('failed', 'a string thrown');
      tracing.startRun(run(), 1).end('abandoned');
      const [failed, thrown, abandoned] = harness.spans();
      expect(harness.spans()).toHaveLength(3);
      expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: 'smtp down' });
      expect(failed.attributes['chokaq.run.result']).toBe('failed');
      expect(failed.events.map((e) => [e.name, e.attributes?.['exception.type']])).toEqual([
        ['exception', 'TypeError'],
      ]);
      expect(failed.events[0].attributes?.['exception.message']).toBe('smtp down');
      expect(thrown.status).toEqual({ code: SpanStatusCode.ERROR, message: 'a string thrown' });
      expect(abandoned.status).toEqual({ code: SpanStatusCode.ERROR, message: 'abandoned' });
      expect(abandoned.events).toEqual([]);
    });

    it('a TracerProvider given in the options is used instead of the global one', () => {
      const own = traceHarness();
      const tracing = ChokaQTracing.create({ enabled: true, tracerProvider: own.provider });
      tracing.startRun(run(), 1).end('succeeded');
      expect(own.spans().map((s) => s.name)).toEqual(['process emails']);
      expect(harness.spans()).toEqual([]);
      return own.disable();
    });
  });
});
