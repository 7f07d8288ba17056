import { Injectable } from '@nestjs/common';
import {
  ChokaQMiddleware,
  ChokaQValidationError,
  FailureReason,
  JobClient,
  JobContext,
  JobHandler,
  defineJob,
} from '../../libs/chokaq/src';
import { describeEachDialect, TestSchema } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';

const Report = defineJob<{ month: string }, { month: string; rows: number }>(
  'results',
  'report.v1',
);
const Unrecorded = defineJob<{ n: number }, { n: number }>('results', 'unrecorded.v1');
const TooBig = defineJob<{ size: number }, string>('results', 'too-big.v1');
const NotJson = defineJob<Record<string, never>, bigint>('results', 'not-json.v1');
const Nothing = defineJob<Record<string, never>>('results', 'nothing.v1');

@Injectable()
class ResultHandlers {
  @JobHandler(Report, { recordResult: true })
  async report(payload: { month: string }): Promise<{ month: string; rows: number }> {
    return { month: payload.month, rows: 42 };
  }

  @JobHandler(Unrecorded)
  async unrecorded(payload: { n: number }): Promise<{ n: number }> {
    return payload;
  }

  @JobHandler(TooBig, { recordResult: true })
  async tooBig(payload: { size: number }): Promise<string> {
    return 'x'.repeat(payload.size);
  }

  @JobHandler(NotJson, { recordResult: true })
  async notJson(): Promise<bigint> {
    return 1n;
  }

  @JobHandler(Nothing, { recordResult: true })
  async nothing(_payload: unknown, ctx: JobContext): Promise<void> {
    void ctx;
  }
}

/** Passes the handler's value on, as a middleware must for results to be stored. */
@Injectable()
class PassThrough implements ChokaQMiddleware {
  static calls = 0;
  async use(_ctx: JobContext, _payload: unknown, next: () => Promise<unknown>): Promise<unknown> {
    PassThrough.calls++;
    return next();
  }
}

/**
 * Stored results end to end: a handler with `recordResult` has its return value in the archive
 * row (through a middleware), typed by its definition through `getResult`; a handler without it
 * stores nothing; a value that cannot be stored whole fails the run at once (DLQ `FatalError`,
 * `ChokaQResultError`, one attempt) rather than being cut.
 */
describeEachDialect('stored results (recordResult)', ({ name: dialect }) => {
  let db: TestSchema;
  beforeEach(() => (db = e2eDatabase(dialect)));
  afterEach(async () => db.close());

  it('stores what a recording handler returns, and only that', async () => {
    const app = await bootApp(db, {
      providers: [ResultHandlers, PassThrough],
      options: { payload: { maxBytes: 2_000 }, middleware: [PassThrough] },
    });
    try {
      const jobs = app.get(JobClient);
      const report = await jobs.enqueue(Report, { month: '2026-11' });
      const unrecorded = await jobs.enqueue(Unrecorded, { n: 7 });
      const nothing = await jobs.enqueue(Nothing, {});
      const tooBig = await jobs.enqueue(TooBig, { size: 3_000 });
      const notJson = await jobs.enqueue(NotJson, {});
      const ids = [report, unrecorded, nothing, tooBig, notJson];
      await waitFor(
        'every job to leave the hot table',
        async () => {
          for (const id of ids) if ((await jobs.getJob(id))?.pillar === 'hot') return false;
          return true;
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );

      expect(PassThrough.calls).toBeGreaterThanOrEqual(ids.length);
      const result = await jobs.getResult(Report, report);
      expect(result).toEqual({ month: '2026-11', rows: 42 });
      expect((await jobs.getJob(report))?.result).toEqual({ month: '2026-11', rows: 42 });
      expect(await jobs.getResult(Unrecorded, unrecorded)).toBeNull();
      expect((await jobs.getJob(nothing))?.result).toBeNull();
      await expect(jobs.getResult(Unrecorded, report)).rejects.toBeInstanceOf(
        ChokaQValidationError,
      );

      for (const [id, problem] of [
        [tooBig, 'must be at most 2000 bytes of JSON (was 3002)'],
        [notJson, 'must be JSON-serialisable'],
      ]) {
        const job = await jobs.getJob(id);
        expect(job).toMatchObject({ pillar: 'dlq', failureReason: FailureReason.FatalError });
        expect(job?.attemptCount).toBe(1);
        expect(job?.errorDetails).toContain('ChokaQResultError');
        expect(job?.errorDetails).toContain(problem);
        expect(await jobs.getResult(TooBig, id)).toBeUndefined();
      }
    } catch (error) {
      await app.close();
      throw error;
    }
    await closeAndCheck(app, db);
  });
});
