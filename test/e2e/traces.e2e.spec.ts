import { join } from 'node:path';
import { INestApplication, Injectable } from '@nestjs/common';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  ChokaQAdmin,
  ChokaQFatalError,
  CHOKAQ_TRACER_NAME,
  JobContext,
  JobHandler,
} from '../../libs/chokaq/src';
import { parentSpanId, traceHarness } from '../support/span-recorder';
import { TestSchema, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';
import { WorkerProcess, forkFixture } from './support/worker-processes';

jest.setTimeout(120_000);

const PRODUCER = join(__dirname, 'fixtures', 'trace-producer.ts');

/** What the producer process answers to an enqueue. */
interface Enqueued {
  ids: string[];
  traceId?: string;
  spanId?: string;
  exported: string[];
}

/** Jobs whose first run ever failed, so a resurrected one succeeds (this process is the worker). */
const deadOnce = new Set<string>();

@Injectable()
class TracedHandlers {
  /** Succeeds, and calls a downstream service in a span of its own. */
  @JobHandler('traced', { type: 'ok.v1' })
  ok(): void {
    trace.getTracer('worker-app').startSpan('smtp send').end();
  }

  /** Fails its first attempt: a retry, then a success. */
  @JobHandler('traced', { type: 'flaky.v1' })
  flaky(_payload: unknown, ctx: JobContext): void {
    if (ctx.attempt === 1) throw new Error('downstream timeout');
  }

  /** Refuses its first run (to the DLQ at once); after a resurrect it succeeds. */
  @JobHandler('traced', { type: 'dead.v1' })
  dead(_payload: unknown, ctx: JobContext): void {
    if (deadOnce.has(ctx.id)) return;
    deadOnce.add(ctx.id);
    throw new ChokaQFatalError('refused');
  }

  @JobHandler('traced', { type: 'untraced.v1' })
  untraced(): void {}
}

/**
 * Traces across processes (issue 15): a producer process enqueues inside an active span (the request
 * that enqueues), with the W3C context stored in the job's row; this process runs the jobs as the
 * worker, and the SDK's in-memory exporter shows each run as a `CONSUMER` span of the producer's
 * trace, parented by and linked to the producer's span: every attempt of a retried job, and the
 * run after a resurrect (the context went hot → DLQ → hot with the row). A job enqueued outside any
 * span runs in a root span.
 */
describeEachDialect('traces across a producer process and a worker process', ({ name }) => {
  let db: TestSchema;
  let harness: ReturnType<typeof traceHarness>;
  let app: INestApplication | undefined;
  let producer: WorkerProcess | undefined;

  beforeEach(() => {
    db = e2eDatabase(name);
    deadOnce.clear();
    // Registered before the app is created, as an application does.
    harness = traceHarness({ register: true });
  });
  afterEach(async () => {
    await producer?.stop();
    producer = undefined;
    if (app) await closeAndCheck(app, db);
    app = undefined;
    await harness.disable();
    await db.close();
  });

  let calls = 0;
  function enqueueIn(
    process: WorkerProcess,
    items: Array<{ type: string; payload?: unknown }>,
    inSpan: boolean,
  ): Promise<Enqueued> {
    const call = ++calls;
    return new Promise((resolve, reject) => {
      const onMessage = (m: Partial<Enqueued> & { call?: number; error?: string }) => {
        if (m.call !== call) return;
        process.child.off('message', onMessage);
        if (m.ids) resolve(m as Enqueued);
        else reject(new Error(`the producer refused the enqueue: ${m.error}`));
      };
      process.child.on('message', onMessage);
      process.child.send({ call, enqueue: { queue: 'traced', items, inSpan } });
    });
  }

  /** ChokaQ's spans of one job, in the order they ended. */
  const runsOf = (id: string): ReadableSpan[] =>
    harness
      .spans()
      .filter(
        (s) =>
          s.instrumentationScope.name === CHOKAQ_TRACER_NAME &&
          s.attributes['messaging.message.id'] === id,
      );

  it("each run of a job is a CONSUMER span in the producer's trace, parented by and linked to its span; retries and a resurrect included", async () => {
    app = await bootApp(db, { providers: [TracedHandlers] });
    // 60 s for the child to compile and boot: a loaded CI machine takes more than the default.
    producer = await forkFixture(
      PRODUCER,
      { CHOKAQ_FIXTURE: JSON.stringify({ options: { storage: db.options } }) },
      60_000,
    );
    const request = await enqueueIn(
      producer,
      [{ type: 'ok.v1' }, { type: 'flaky.v1' }, { type: 'dead.v1' }],
      true,
    );
    const [ok, flaky, dead] = request.ids;
    const plain = await enqueueIn(producer, [{ type: 'untraced.v1' }], false);
    // The producer exported its own span: the trace exists on both sides.
    expect(request.exported).toEqual(['POST /signup']);
    expect(request.traceId).toMatch(/^[0-9a-f]{32}$/);

    await waitFor(
      'the ok, flaky and untraced jobs archived and the dead one in the DLQ',
      async () => {
        const archived = await db.count('archive');
        return archived === 3 && (await db.count('dlq', 'id = ?', [dead])) === 1;
      },
    );
    expect(await app.get(ChokaQAdmin).resurrect(dead)).toBe(true);
    await waitFor('the resurrected job archived', async () => {
      return (await db.count('archive', 'id = ?', [dead])) === 1;
    });

    const producerSpan = { traceId: request.traceId!, spanId: request.spanId! };
    const expectInProducerTrace = (span: ReadableSpan) => {
      expect(span.kind).toBe(SpanKind.CONSUMER);
      expect(span.name).toBe('process traced');
      expect(span.spanContext().traceId).toBe(producerSpan.traceId);
      expect(parentSpanId(span)).toBe(producerSpan.spanId);
      expect(span.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([
        [producerSpan.traceId, producerSpan.spanId],
      ]);
      expect(span.attributes).toMatchObject({
        'messaging.system': 'chokaq',
        'messaging.destination.name': 'traced',
      });
    };
    const summary = (spans: ReadableSpan[]) =>
      spans.map((s) => [
        s.attributes['chokaq.job.type'],
        s.attributes['chokaq.job.attempt'],
        s.attributes['chokaq.run.result'],
        s.status.code,
      ]);

    // One run, and the handler's own span is its child.
    const [okRun] = runsOf(ok);
    expectInProducerTrace(okRun);
    expect(summary([okRun])).toEqual([['ok.v1', 1, 'succeeded', SpanStatusCode.UNSET]]);
    const smtp = harness.spans().find((s) => s.name === 'smtp send')!;
    expect(parentSpanId(smtp)).toBe(okRun.spanContext().spanId);
    expect(smtp.spanContext().traceId).toBe(producerSpan.traceId);

    // Every attempt is in the trace; the failed one says why.
    const flakyRuns = runsOf(flaky);
    flakyRuns.forEach(expectInProducerTrace);
    expect(summary(flakyRuns)).toEqual([
      ['flaky.v1', 1, 'failed', SpanStatusCode.ERROR],
      ['flaky.v1', 2, 'succeeded', SpanStatusCode.UNSET],
    ]);
    expect(flakyRuns[0].status.message).toBe('downstream timeout');
    expect(flakyRuns[0].events.map((e) => e.attributes?.['exception.message'])).toEqual([
      'downstream timeout',
    ]);

    // The run after the resurrect is still parented by the producer's span.
    const deadRuns = runsOf(dead);
    deadRuns.forEach(expectInProducerTrace);
    expect(summary(deadRuns)).toEqual([
      ['dead.v1', 1, 'failed', SpanStatusCode.ERROR],
      ['dead.v1', 1, 'succeeded', SpanStatusCode.UNSET],
    ]);
    expect(deadRuns[0].events.map((e) => e.attributes?.['exception.type'])).toEqual([
      'ChokaQFatalError',
    ]);

    // Enqueued outside any span: a root span of a trace of its own, no link.
    expect(plain.traceId).toBeUndefined();
    const [plainRun] = runsOf(plain.ids[0]);
    expect(parentSpanId(plainRun)).toBeUndefined();
    expect(plainRun.links).toEqual([]);
    expect(plainRun.spanContext().traceId).not.toBe(producerSpan.traceId);
    expect((await app.get(ChokaQAdmin).getJob(plain.ids[0]))?.traceContext).toBeNull();
  });
});
