import { Injectable } from '@nestjs/common';
import { JobClient, JobHandler, defineJob } from '../../libs/chokaq/src';
import { describeEachDialect, TestSchema } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';

const Reindex = defineJob<{ doc: string; rev: number }>('dedupe', 'reindex.v1');
const Digest = defineJob<{ user: string; n: number }>('dedupe', 'digest.v1');

@Injectable()
class DedupeHandlers {
  static runs: string[] = [];

  @JobHandler(Reindex)
  async reindex(payload: { doc: string; rev: number }): Promise<void> {
    DedupeHandlers.runs.push(`reindex ${payload.doc}@${payload.rev}`);
  }

  @JobHandler(Digest)
  async digest(payload: { user: string; n: number }): Promise<void> {
    DedupeHandlers.runs.push(`digest ${payload.user}#${payload.n}`);
  }
}

/**
 * Dedupe keys as an application sees them (issue 30, part 1): through `JobClient` and a running
 * worker, a burst of debounced enqueues runs once, with the last payload, after the window; a
 * throttled key runs once however often it is enqueued within its window, even after its job ran.
 */
describeEachDialect('dedupe keys through JobClient and a worker', ({ name: dialect }) => {
  let db: TestSchema;
  beforeEach(() => {
    db = e2eDatabase(dialect);
    DedupeHandlers.runs = [];
  });
  afterEach(async () => db.close());

  it('a debounced burst runs once with its last payload; a throttled key runs once per window', async () => {
    const app = await bootApp(db, { providers: [DedupeHandlers] });
    try {
      const jobs = app.get(JobClient);
      // Each enqueue moves the run time a window past itself: the burst only has to be quicker than
      // one window between two enqueues.
      const debounce = { key: 'reindex:doc-1', mode: 'debounce', windowMs: 1_000 } as const;
      const burst: string[] = [];
      for (let rev = 1; rev <= 5; rev++) {
        burst.push(await jobs.enqueue(Reindex, { doc: 'doc-1', rev }, { dedupe: debounce }));
      }
      expect(new Set(burst).size).toBe(1);

      const throttle = { key: 'digest:ana', mode: 'throttle', windowMs: 3_600_000 } as const;
      const digest = await jobs.enqueue(Digest, { user: 'ana', n: 1 }, { dedupe: throttle });
      await waitFor(
        'both jobs to run',
        async () =>
          DedupeHandlers.runs.length >= 2 && (await jobs.getJob(digest))?.pillar === 'archive',
        { timeoutMs: 10_000, intervalMs: 25 },
      );
      // Within the window, after the holder ran: still the holder, and nothing runs again.
      expect(await jobs.enqueue(Digest, { user: 'ana', n: 2 }, { dedupe: throttle })).toBe(digest);
      expect((await jobs.getJob(digest))?.dedupe).toMatchObject({
        key: 'digest:ana',
        mode: 'throttle',
      });

      await waitFor(
        'the debounced job to be archived',
        async () => (await jobs.getJob(burst[0]))?.pillar === 'archive',
        {
          timeoutMs: 10_000,
          intervalMs: 25,
        },
      );
      expect(DedupeHandlers.runs.sort()).toEqual(['digest ana#1', 'reindex doc-1@5']);
    } catch (error) {
      await app.close();
      throw error;
    }
    await closeAndCheck(app, db);
  });
});
