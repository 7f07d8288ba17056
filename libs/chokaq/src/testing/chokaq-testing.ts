import { INestApplicationContext } from '@nestjs/common';
import { ChokaQValidationError } from '../errors';
import { JobOutcome } from '../interfaces/job-outcome.interface';
import { RUN_DUE_JOBS_RULES, optionIssues } from '../validation/option-rules';
import { WorkerRegistry } from '../worker.registry';

/** Options of {@link ChokaQTesting.runDueJobs}. @publicApi */
export interface RunDueJobsOptions {
  /** Only these queues (default: every queue this app has handlers for). */
  queues?: string[];
  /**
   * Give up (with `ChokaQDrainTimeoutError`) after this long: an integer from 1 to 2^31 − 1 (a
   * timer holds no more). Default: the worker's own default.
   */
  timeoutMs?: number;
}

/**
 * Helpers for your own tests. The recommended set-up runs no background loop, so a test decides
 * when jobs run:
 *
 * ```ts
 * const moduleRef = await Test.createTestingModule({
 *   imports: [
 *     ChokaQModule.forRoot({
 *       storage: { type: 'sqlite', database: ':memory:' },
 *       worker: { enabled: false },
 *       retry: { baseDelayMs: 0, jitterMs: 0 },
 *     }),
 *     EmailsModule,
 *   ],
 * }).compile();
 * const app = await moduleRef.createNestApplication().init();  // or createNestApplicationContext
 * await app.get(JobClient).enqueue(WelcomeEmail, { to: 'a@b.c' });
 * const outcomes = await ChokaQTesting.runDueJobs(app);
 * expect(outcomes).toEqual([expect.objectContaining({ outcome: 'succeeded' })]);
 * await app.close();
 * ```
 *
 * @publicApi
 */
export const ChokaQTesting = Object.freeze({
  /**
   * Runs every due job of the given queues through the real pipeline (claim, middleware, handler,
   * retry policy, atomic moves) until none is due, and returns one outcome per run. Retries that
   * become due during the call (e.g. with `baseDelayMs: 0`) run too. Works with the worker enabled
   * or disabled, between `app.init()` and `app.close()`; outside them it rejects with
   * `ChokaQWorkerDisabledError`.
   */
  async runDueJobs(
    app: INestApplicationContext,
    options: RunDueJobsOptions = {},
  ): Promise<JobOutcome[]> {
    const { timeoutMs } = options;
    const issues = optionIssues({ timeoutMs }, RUN_DUE_JOBS_RULES, String);
    if (issues.length > 0) throw new ChokaQValidationError(issues);
    // strict: false, as the registry is internal to ChokaQModule (not exported from it).
    const workers = app.get(WorkerRegistry, { strict: false });
    return workers.drain(
      options.queues,
      options.timeoutMs === undefined ? undefined : { timeoutMs: options.timeoutMs },
    );
  },
});
