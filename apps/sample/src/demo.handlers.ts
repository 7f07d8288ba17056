import { Injectable } from '@nestjs/common';
import { JobClient, JobContext, JobHandler, RecurringJob } from '@chokaq/nestjs';
import { Broken, Flaky, Greet, GreetingsDone, Report, Sync } from './demo.jobs';
import { PartnerApi } from './partner-api';

/** One handler per behaviour the demo shows. */
@Injectable()
export class DemoHandlers {
  constructor(
    private readonly partner: PartnerApi,
    private readonly jobs: JobClient,
  ) {}

  /** The callback of a round's greetings (a batch): runs once, after the last one finished. */
  @JobHandler(GreetingsDone)
  async greetingsDone(payload: { n: number }, ctx: JobContext): Promise<void> {
    const batch = ctx.batchId === null ? null : await this.jobs.getBatch(ctx.batchId);
    ctx.logger.log(
      `Round ${payload.n}: ${batch?.succeeded ?? '?'} of ${batch?.total ?? '?'} greetings delivered`,
    );
  }

  /** Always succeeds → Archive. Also enqueued every 15 s by a recurring job (once across processes). */
  @RecurringJob('demo.greet-every-15s', '*/15 * * * * *', { payload: { name: 'recurring job' } })
  @JobHandler(Greet)
  async greet(payload: { name: string }, ctx: JobContext): Promise<void> {
    ctx.logger.log(`Hello, ${payload.name}`);
  }

  /** Fails on its first `failTimes` attempts, then succeeds → retried with backoff, then Archive. */
  @JobHandler(Flaky)
  async flaky(payload: { n: number; failTimes: number }, ctx: JobContext): Promise<void> {
    if (ctx.attempt <= payload.failTimes) {
      throw new Error(`flaky #${payload.n}: transient failure on attempt ${ctx.attempt}`);
    }
  }

  /** Always fails → retried, then DLQ (MaxRetriesExceeded). Enqueued once a minute. */
  @JobHandler(Broken)
  async broken(payload: { n: number }): Promise<void> {
    throw new Error(`broken #${payload.n}: downstream said no`);
  }

  /**
   * Fails while the pretend partner API is down (see partner-api.ts): its circuit opens, holds the
   * next jobs back, and closes when a probe finds the API back.
   */
  @JobHandler(Sync)
  async sync(payload: { n: number }): Promise<void> {
    await this.partner.push(payload.n);
  }

  /** Slow and cooperative: reports progress and stops early when its signal aborts. */
  @JobHandler(Report, { timeoutMs: 60_000 })
  async render(payload: { n: number; steps: number }, ctx: JobContext): Promise<void> {
    for (let step = 1; step <= payload.steps; step++) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      await new Promise((resolve) => setTimeout(resolve, 200));
      await ctx.reportProgress(Math.round((step / payload.steps) * 100));
    }
  }
}
