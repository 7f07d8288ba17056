import { Injectable } from '@nestjs/common';
import { JobClient, JobContext, JobHandler, defineJob } from '../../libs/chokaq/src';
import { describeEachDialect, TestSchema } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';

const Listed = defineJob<Record<string, never>>('backoff', 'listed.v1');
const Decided = defineJob<Record<string, never>>('backoff', 'decided.v1');

/** A wait long enough that the retry after it cannot happen during the test. */
const LONG_MS = 3_600_000;

@Injectable()
class Flaky {
  readonly attempts = new Map<string, number>();

  /** The list's first wait is 0 (a retry at once), its second an hour. */
  @JobHandler(Listed, { backoff: [0, LONG_MS] })
  async listed(_payload: unknown, ctx: JobContext): Promise<void> {
    this.attempts.set(ctx.id, ctx.attempt);
    throw new Error(`listed attempt ${ctx.attempt}`);
  }

  /** The function answers 0 after the first failure, then throws: the policy's delay applies. */
  @JobHandler(Decided, {
    backoff: (attempt: number, error: unknown) => {
      if (attempt === 1) return 0;
      throw new Error(`no delay for ${(error as Error).message}`);
    },
  })
  async decided(_payload: unknown, ctx: JobContext): Promise<void> {
    this.attempts.set(ctx.id, ctx.attempt);
    throw new Error(`decided attempt ${ctx.attempt}`);
  }
}

/**
 * `@JobHandler(…, { backoff })` with a real worker: each retry waits what the handler's list or
 * function says instead of the global policy (whose first wait here is an hour), and a function
 * that throws gets the policy's delay, the retry's stored error saying why.
 */
describeEachDialect('@JobHandler backoff', ({ name: dialect }) => {
  let db: TestSchema;
  beforeEach(() => (db = e2eDatabase(dialect)));
  afterEach(async () => db.close());

  it('waits what the handler says, and the policy where its function fails', async () => {
    const app = await bootApp(db, {
      providers: [Flaky],
      options: { retry: { maxAttempts: 5, baseDelayMs: LONG_MS, jitterMs: 0 } },
    });
    try {
      const jobs = app.get(JobClient);
      const flaky = app.get(Flaky);
      const listed = await jobs.enqueue(Listed, {});
      const decided = await jobs.enqueue(Decided, {});
      // Attempt 1 fails and, by each handler's backoff, runs again at once; attempt 2 fails too.
      await waitFor(
        'both jobs to fail their second attempt and wait',
        async () => {
          for (const id of [listed, decided]) {
            const job = await jobs.getJob(id);
            if (flaky.attempts.get(id) !== 2 || job?.status !== 0) return false;
          }
          return true;
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      const now = Date.now();
      for (const id of [listed, decided]) {
        const job = await jobs.getJob(id);
        expect(job).toMatchObject({ pillar: 'hot', attemptCount: 2 });
        // Due in about an hour: the list's second wait, or the policy's after the function threw.
        const dueInMs = job!.scheduledAtUtc!.getTime() - now;
        expect(dueInMs).toBeGreaterThan(LONG_MS - 60_000);
        expect(dueInMs).toBeLessThanOrEqual(LONG_MS + 60_000);
      }
      expect((await jobs.getJob(listed))?.lastError).not.toContain('backoff function');
      expect((await jobs.getJob(decided))?.lastError).toContain(
        "[backoff function threw (Error: no delay for decided attempt 2); the retry policy's delay applied]",
      );
    } catch (error) {
      await app.close();
      throw error;
    }
    await closeAndCheck(app, db);
  });
});
