import { Injectable } from '@nestjs/common';
import {
  BatchResultsPage,
  BatchView,
  ChokaQAdmin,
  ChokaQPayloadValidationError,
  JobClient,
  JobContext,
  JobHandler,
  JobResult,
  batchJob,
  defineJob,
} from '../../libs/chokaq/src';
import type { StandardSchemaV1 } from '../../libs/chokaq/src/interfaces/standard-schema.interface';
import { describeEachDialect, TestSchema } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';

/** A schema that accepts `{ n }` with a whole n. */
const wholeN: StandardSchemaV1<{ n: number }> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (value) =>
      Number.isInteger((value as { n?: unknown })?.n)
        ? { value: value as { n: number } }
        : { issues: [{ message: 'n must be a whole number', path: ['n'] }] },
  },
};

const Part = defineJob('batches', 'part.v1', { schema: wholeN });
const Done = defineJob<{ label: string }>('batches', 'done.v1');
const Failed = defineJob<{ label: string }>('batches', 'failed.v1');
const Square = defineJob<{ n: number }, { square: number }>('batches', 'square.v1');
const Tally = defineJob<{ label: string }>('batches', 'tally.v1');

/** What the callbacks saw. */
const seen: { kind: string; label: string; batchId: string | null; batch: BatchView | null }[] = [];

/** The pages of results the tally callback read. */
const tallied: BatchResultsPage<JobResult<typeof Square>>[] = [];

@Injectable()
class BatchHandlers {
  constructor(private readonly jobs: JobClient) {}

  @JobHandler(Part, { maxAttempts: 1 })
  async part(payload: { n: number }): Promise<void> {
    if (payload.n < 0) throw new Error(`part ${payload.n} refused`);
  }

  @JobHandler(Done)
  async done(payload: { label: string }, ctx: JobContext): Promise<void> {
    const batch = ctx.batchId === null ? null : await this.jobs.getBatch(ctx.batchId);
    seen.push({ kind: 'done', label: payload.label, batchId: ctx.batchId, batch });
  }

  @JobHandler(Failed)
  async failed(payload: { label: string }, ctx: JobContext): Promise<void> {
    const batch = ctx.batchId === null ? null : await this.jobs.getBatch(ctx.batchId);
    seen.push({ kind: 'failed', label: payload.label, batchId: ctx.batchId, batch });
  }

  @JobHandler(Square, { recordResult: true })
  async square({ n }: { n: number }): Promise<{ square: number }> {
    return { square: n * n };
  }

  /** Reads every result of its batch, two at a time. */
  @JobHandler(Tally)
  async tally(_payload: { label: string }, ctx: JobContext): Promise<void> {
    let after: string | undefined;
    do {
      const page = await this.jobs.getBatchResults<JobResult<typeof Square>>(ctx.batchId!, {
        after,
        limit: 2,
      });
      tallied.push(page);
      after = page.nextCursor ?? undefined;
    } while (after !== undefined);
  }
}

/**
 * Batches end to end (issue 29, part 2): `JobClient.enqueueBatch` with definitions, a worker that
 * runs the batch's jobs, and the callbacks the settling move enqueues, whose handlers find their
 * batch in `ctx.batchId` and read its final counts.
 */
describeEachDialect('batches (enqueueBatch)', ({ name: dialect }) => {
  let db: TestSchema;
  beforeEach(() => {
    db = e2eDatabase(dialect);
    seen.length = 0;
    tallied.length = 0;
  });
  afterEach(async () => db.close());

  it('runs the jobs, then each due callback once, which reads the settled batch', async () => {
    const app = await bootApp(db, { providers: [BatchHandlers] });
    try {
      const jobs = app.get(JobClient);
      const ok = await jobs.enqueueBatch(
        [1, 2, 3, 4].map((n) => batchJob(Part, { n })),
        {
          onSuccess: batchJob(Done, { label: 'all good' }),
          onFailure: batchJob(Failed, { label: 'some failed' }),
        },
      );
      const bad = await jobs.enqueueBatch([batchJob(Part, { n: 5 }), batchJob(Part, { n: -1 })], {
        onComplete: batchJob(Done, { label: 'finished' }),
        onFailure: batchJob(Failed, { label: 'one failed' }),
      });
      await waitFor('both batches to call back', () => seen.length >= 3, {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      const byLabel = Object.fromEntries(seen.map((s) => [s.label, s]));
      expect(Object.keys(byLabel).sort()).toEqual(['all good', 'finished', 'one failed']);
      expect(byLabel['all good']).toMatchObject({
        kind: 'done',
        batchId: ok.batchId,
        batch: { total: 4, succeeded: 4, failed: 0, pending: 0 },
      });
      expect(byLabel['one failed']).toMatchObject({
        kind: 'failed',
        batchId: bad.batchId,
        batch: { total: 2, succeeded: 1, failed: 1, pending: 0 },
      });
      expect(byLabel['finished'].batchId).toBe(bad.batchId);
      // The callbacks ran once each and archived; the ones not due never exist.
      await waitFor('the callbacks to archive', async () => {
        const ids = [ok.callbacks.success!, bad.callbacks.complete!, bad.callbacks.failure!];
        const views = await Promise.all(ids.map((id) => jobs.getJob(id)));
        return views.every((v) => v?.pillar === 'archive');
      });
      expect(await jobs.getJob(ok.callbacks.failure!)).toBeNull();
      expect(seen).toHaveLength(3);
      expect((await jobs.getJob(ok.jobIds[0]))?.batchId).toBe(ok.batchId);
    } catch (error) {
      await app.close();
      throw error;
    }
    await closeAndCheck(app, db);
  });

  it("a callback reads its batch's stored results a page at a time, in enqueue order", async () => {
    const app = await bootApp(db, { providers: [BatchHandlers] });
    try {
      const jobs = app.get(JobClient);
      const made = await jobs.enqueueBatch(
        [3, 1, 4, 1, 5].map((n) => batchJob(Square, { n })),
        { onComplete: batchJob(Tally, { label: 'squares' }) },
      );
      await waitFor('the tally to read the last page', () => tallied.at(-1)?.nextCursor === null, {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      expect(tallied.map((page) => page.items.length)).toEqual([2, 2, 1]);
      expect(tallied.flatMap((page) => page.items)).toEqual(
        made.jobIds.map((id, i) => ({ id, result: { square: [9, 1, 16, 1, 25][i] } })),
      );
      const first = await jobs.getBatchResults<JobResult<typeof Square>>(made.batchId, {
        limit: 1,
      });
      expect(first.items[0].result?.square).toBe(9);
      expect(first.nextCursor).toBe(made.jobIds[0]);
    } catch (error) {
      await app.close();
      throw error;
    }
    await closeAndCheck(app, db);
  });

  it('cancelBatch cancels what is still hot, and the batch calls onFailure', async () => {
    const app = await bootApp(db, {
      providers: [BatchHandlers],
      options: { worker: { enabled: false } },
    });
    try {
      const jobs = app.get(JobClient);
      const admin = app.get(ChokaQAdmin);
      const made = await jobs.enqueueBatch([batchJob(Part, { n: 1 }), batchJob(Part, { n: 2 })], {
        onFailure: batchJob(Failed, { label: 'cancelled' }),
      });
      const result = await admin.cancelBatch(made.batchId, 'ops');
      expect(result.cancelled.sort()).toEqual([...made.jobIds].sort());
      expect(await jobs.getBatch(made.batchId)).toMatchObject({ failed: 2, pending: 0 });
      expect((await jobs.getJob(made.callbacks.failure!))?.pillar).toBe('hot');
      expect(await admin.cancelBatch(made.batchId)).toEqual({ cancelled: [], cancelRequested: [] });
    } catch (error) {
      await app.close();
      throw error;
    }
    await closeAndCheck(app, db);
  });

  it("checks every payload with its definition's schema first, writing nothing on a refusal", async () => {
    const app = await bootApp(db, {
      providers: [BatchHandlers],
      options: { worker: { enabled: false } },
    });
    try {
      const jobs = app.get(JobClient);
      const refused = jobs.enqueueBatch([batchJob(Part, { n: 1 }), batchJob(Part, { n: 1.5 })]);
      await expect(refused).rejects.toBeInstanceOf(ChokaQPayloadValidationError);
      await expect(refused).rejects.toThrow('jobs[1].payload');
      expect(await db.count('hot')).toBe(0);
    } catch (error) {
      await app.close();
      throw error;
    }
    await closeAndCheck(app, db);
  });
});
