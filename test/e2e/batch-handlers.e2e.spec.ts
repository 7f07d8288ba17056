import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import {
  FailureReason,
  JobBatchItem,
  JobBatchOutcome,
  JobClient,
  JobHandler,
  defineJob,
} from '../../libs/chokaq/src';
import { describeEachDialect, TestSchema } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';

/** What an item asks its batch handler to report. */
interface Item {
  n: number;
  /** `fail`: a failed outcome; `retry`: retry at once, then succeed. */
  ask?: 'fail' | 'retry';
}

const Indexed = defineJob('batch-e2e', 'index.v1', {
  schema: z.object({ n: z.number().int(), ask: z.enum(['fail', 'retry']).optional() }),
});
const Thrown = defineJob<{ n: number }>('batch-e2e', 'thrown.v1');

@Injectable()
class Indexer {
  /** The sizes of the batches the handler was called with, in order. */
  readonly batches: number[] = [];
  /** Attempts each job was seen at, by job number. */
  readonly seen = new Map<number, number[]>();
  thrownCalls = 0;

  @JobHandler(Indexed, { batch: { size: 5, waitMs: 100 }, maxAttempts: 2, recordResult: true })
  async index(items: JobBatchItem<Item>[]): Promise<JobBatchOutcome[]> {
    this.batches.push(items.length);
    return items.map(({ payload, ctx }) => {
      this.seen.set(payload.n, [...(this.seen.get(payload.n) ?? []), ctx.attempt]);
      if (payload.ask === 'fail') return { status: 'failed', error: new Error(`no ${payload.n}`) };
      if (payload.ask === 'retry' && ctx.attempt === 1) return { status: 'retry', delayMs: 0 };
      return { status: 'succeeded', result: { indexed: payload.n } };
    });
  }

  /** Throws for the whole batch: every job of it fails that attempt. */
  @JobHandler(Thrown, { batch: { size: 10, waitMs: 50 }, maxAttempts: 1 })
  async thrown(items: JobBatchItem<{ n: number }>[]): Promise<void> {
    this.thrownCalls++;
    throw new Error(`batch of ${items.length} failed`);
  }
}

/**
 * Batch handlers (issue 30, part 3) with a real worker: jobs of one type reach the handler in
 * batches of at most `size`; each job is decided by its own outcome and keeps its own attempts,
 * retries, DLQ move and result; a payload its schema refuses fails alone; a throw fails the batch.
 */
describeEachDialect('batch handlers', ({ name: dialect }) => {
  let db: TestSchema;
  beforeEach(() => (db = e2eDatabase(dialect)));
  afterEach(async () => db.close());

  it('calls the handler with batches and decides each job by its own outcome', async () => {
    const app = await bootApp(db, {
      providers: [Indexer],
      options: { worker: { concurrency: 10 }, retry: { baseDelayMs: 0, jitterMs: 0 } },
    });
    try {
      const jobs = app.get(JobClient);
      const indexer = app.get(Indexer);
      const asks: Record<number, Item['ask']> = { 3: 'fail', 7: 'retry' };
      const good = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11];
      const ids: string[] = [];
      (
        await jobs.enqueueMany(
          Indexed,
          good.map((n) => ({ payload: { n, ask: asks[n] } })),
        )
      ).forEach((id, i) => (ids[good[i]] = id));
      // Job 9's payload is one the schema refuses, as a producer without the definition stores it.
      ids[9] = await jobs.enqueue('batch-e2e', { n: 'nine' }, { type: 'index.v1' });
      const finished = await waitFor(
        'every job to leave the hot table',
        async () => {
          const views = await Promise.all(ids.map((id) => jobs.getJob(id)));
          return views.every((v) => v && v.pillar !== 'hot') ? views : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      expect(indexer.batches.every((size) => size >= 1 && size <= 5)).toBe(true);
      expect(Math.max(...indexer.batches)).toBeGreaterThan(1);
      finished.forEach((job, n) => {
        if (n === 3) {
          // Failed in two batches (maxAttempts 2), then the DLQ with its own error.
          expect(job).toMatchObject({ pillar: 'dlq', attemptCount: 2 });
          expect(job!.failureReason).toBe(FailureReason.MaxRetriesExceeded);
          expect(job!.errorDetails).toContain('no 3');
        } else if (n === 9) {
          expect(job).toMatchObject({ pillar: 'dlq', failureReason: FailureReason.FatalError });
        } else {
          expect(job).toMatchObject({ pillar: 'archive', result: { indexed: n } });
          expect(job!.attemptCount).toBe(n === 7 ? 2 : 1);
        }
      });
      expect(indexer.seen.get(3)).toEqual([1, 2]);
      expect(indexer.seen.get(7)).toEqual([1, 2]);
      expect(indexer.seen.size).toBe(11);
      expect(indexer.seen.get(0)).toEqual([1]);
    } finally {
      await closeAndCheck(app, db);
    }
  });

  it('fails every job of a batch whose handler throws', async () => {
    const app = await bootApp(db, {
      providers: [Indexer],
      options: { worker: { concurrency: 10 } },
    });
    try {
      const jobs = app.get(JobClient);
      const ids = await jobs.enqueueMany(
        Thrown,
        Array.from({ length: 4 }, (_, n) => ({ payload: { n } })),
      );
      const dead = await waitFor(
        'the batch to reach the DLQ',
        async () => {
          const views = await Promise.all(ids.map((id) => jobs.getJob(id)));
          return views.every((v) => v?.pillar === 'dlq') ? views : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      for (const job of dead) expect(job!.errorDetails).toMatch(/batch of \d failed/);
      expect(app.get(Indexer).thrownCalls).toBeLessThanOrEqual(4);
    } finally {
      await closeAndCheck(app, db);
    }
  });
});
