import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ChokaQAdmin, JobClient, batchJob } from '@chokaq/nestjs';
import { trace } from '@opentelemetry/api';
import { Broken, Flaky, Greet, GreetingsDone, Report, Sync } from './demo.jobs';

/** Enqueues demo batches and logs the pillars every few seconds. */
@Injectable()
export class DemoService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Demo');
  private readonly tracer = trace.getTracer('sample');
  private timer?: NodeJS.Timeout;
  private producer?: NodeJS.Timeout;
  private batch = 0;

  constructor(
    private readonly jobs: JobClient,
    private readonly admin: ChokaQAdmin,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const ids = await this.enqueueBatch(10);
    this.logger.log(`Enqueued a first batch of ${ids.length} demo jobs`);
    const everyMs = Number(process.env.DEMO_REPORT_MS ?? 3_000);
    this.timer = setInterval(() => void this.report(), everyMs);
    this.timer.unref();
    // A small batch every few seconds keeps jobs flowing while you watch (DEMO_ENQUEUE_MS=0 stops it).
    const enqueueMs = Number(process.env.DEMO_ENQUEUE_MS ?? 10_000);
    if (enqueueMs > 0) {
      this.producer = setInterval(
        () => void this.enqueueBatch(5).catch(() => undefined),
        enqueueMs,
      );
      this.producer.unref();
    }
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.producer) clearInterval(this.producer);
  }

  /**
   * `count` greetings, two partner syncs and a slow job; a flaky job every fourth batch and a
   * broken one every sixth (with a batch every 10 s, at most 4 and 3 of their failures fall in any
   * minute, below the circuit breaker's threshold of 5, so only the partner's outages open a
   * circuit). Enqueued
   * inside one span (what
   * an HTTP server instrumentation would start for `POST /demo`): with `OTEL_TRACES=console` every
   * run of these jobs prints as a span of its trace. Without an SDK the span is a no-op.
   */
  enqueueBatch(count: number): Promise<string[]> {
    return this.tracer.startActiveSpan('demo.enqueue-batch', async (span) => {
      try {
        return await this.enqueueAll(count);
      } finally {
        span.end();
      }
    });
  }

  private async enqueueAll(count: number): Promise<string[]> {
    const batch = ++this.batch;
    // The greetings are a batch: when the last one has finished, GreetingsDone runs once.
    const greetings = await this.jobs.enqueueBatch(
      Array.from({ length: count }, (_, i) =>
        batchJob(Greet, { name: `visitor ${batch}.${i + 1}` }),
      ),
      { onComplete: batchJob(GreetingsDone, { n: batch }) },
    );
    const ids = [
      ...greetings.jobIds,
      ...(await this.jobs.enqueueMany(Sync, [
        { payload: { n: batch } },
        { payload: { n: batch } },
      ])),
      await this.jobs.enqueue(Report, { n: batch, steps: 10 }, { priority: 5 }),
    ];
    if (batch % 4 === 1)
      ids.push(await this.jobs.enqueue(Flaky, { n: batch, failTimes: 2 }, { tags: ['demo'] }));
    if (batch % 6 === 1)
      ids.push(await this.jobs.enqueue(Broken, { n: batch }, { tags: ['demo'] }));
    return ids;
  }

  async stats(): Promise<unknown> {
    const [summary, queues] = await Promise.all([
      this.admin.getSummary(),
      this.admin.getQueueStats(),
    ]);
    return { summary, queues, worker: this.admin.workerStats() };
  }

  private async report(): Promise<void> {
    try {
      const s = await this.admin.getSummary();
      // "~": the dialect estimates the retained rows (PostgreSQL, SQL Server) instead of counting.
      const about = (estimated: boolean) => (estimated ? '~' : '');
      this.logger.log(
        `pending ${s.pending} · fetched ${s.fetched} · processing ${s.processing} · ` +
          `archive ${about(s.estimated.archived)}${s.archived} · DLQ ${about(s.estimated.dlq)}${s.dlq} · ` +
          `retried ${s.retriedTotal} · deferred by a circuit ${s.deferredTotal} (lifetime)`,
      );
    } catch (error) {
      this.logger.warn(`stats unavailable: ${String(error)}`);
    }
  }
}
