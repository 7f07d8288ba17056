import { INestApplication, Injectable } from '@nestjs/common';
import * as v from 'valibot';
import { z } from 'zod';
import {
  ChokaQAdmin,
  ChokaQPayloadValidationError,
  ChokaQValidationError,
  FailureReason,
  JobClient,
  JobContext,
  JobHandler,
  JobStatus,
  defineJob,
} from '../../libs/chokaq/src';
import { TestSchema, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';

/**
 * Payloads checked through Standard Schema, on real storage and a real worker: `enqueue` and
 * `enqueueMany` refuse a payload their definition's schema (zod or valibot) rejects before anything
 * is written; a stored payload that fails the handler's schema goes to the DLQ at once as
 * FatalError (one attempt, the issues in its error text) without the handler being called; a valid
 * one reaches the handler as the schema's output while the caller's payload is what was stored.
 */

/** zod: `to` trimmed and lower-cased, `lang` defaulted; what the handler receives differs from the input. */
const Welcome = defineJob('schema-e2e', 'welcome.v1', {
  schema: z.object({
    to: z.string().trim().toLowerCase(),
    lang: z.string().default('en'),
  }),
});
/** The same queue and type without a schema: a producer that skips the check (an older release). */
const UncheckedWelcome = defineJob<unknown>('schema-e2e', 'welcome.v1');
const Resize = defineJob('schema-e2e', 'resize.v1', {
  schema: v.object({ width: v.pipe(v.number(), v.integer(), v.minValue(1)) }),
});
/** An async refinement: zod's `validate` then returns a promise. */
const Even = defineJob('schema-e2e', 'even.v1', {
  schema: z.object({ n: z.number().refine(async (n) => n % 2 === 0, 'must be even') }),
});
const Dated = defineJob('schema-e2e', 'dated.v1', { schema: z.object({ at: z.date() }) });

@Injectable()
class Handlers {
  readonly received: Array<{ type: string; payload: unknown }> = [];

  @JobHandler(Welcome)
  async welcome(payload: { to: string; lang: string }, ctx: JobContext): Promise<void> {
    this.received.push({ type: ctx.type, payload });
  }

  @JobHandler(Resize)
  async resize(payload: { width: number }, ctx: JobContext): Promise<void> {
    this.received.push({ type: ctx.type, payload });
  }

  @JobHandler(Even)
  async even(payload: { n: number }, ctx: JobContext): Promise<void> {
    this.received.push({ type: ctx.type, payload });
  }
}

describeEachDialect('payloads checked through Standard Schema', ({ name: dialect }) => {
  let db: TestSchema;
  let app: INestApplication;
  let jobs: JobClient;
  let handlers: Handlers;

  beforeEach(async () => {
    db = e2eDatabase(dialect);
    app = await bootApp(db, { providers: [Handlers] });
    jobs = app.get(JobClient);
    handlers = app.get(Handlers);
  });

  afterEach(async () => {
    await closeAndCheck(app, db);
    await db.close();
  });

  const settled = (id: string) =>
    waitFor(`job ${id} to leave the hot table`, async () => {
      const job = await jobs.getJob(id);
      return job && job.pillar !== 'hot' ? job : undefined;
    });

  /** Every table a job could be written to is empty. */
  async function nothingWritten(): Promise<void> {
    expect(await db.count('hot')).toBe(0);
    expect(await db.count('archive')).toBe(0);
    expect(await db.count('dlq')).toBe(0);
  }

  it('refuses a payload the zod schema rejects at enqueue, writing nothing', async () => {
    const error = await jobs.enqueue(Welcome, { to: 42 } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChokaQPayloadValidationError);
    expect(error).toBeInstanceOf(ChokaQValidationError);
    expect(error).toMatchObject({
      queue: 'schema-e2e',
      type: 'welcome.v1',
      stage: 'enqueue',
      issues: [{ path: 'payload.to', message: expect.stringMatching(/string/), value: 42 }],
    });
    expect((error as Error).message).toMatch(
      /^Payload of schema-e2e\/welcome\.v1 does not match its schema \(nothing was written\): payload\.to: /,
    );
    // schedule goes through the same check.
    await expect(jobs.schedule(Welcome, {} as never, new Date())).rejects.toMatchObject({
      issues: [{ path: 'payload.to', value: undefined }],
    });
    await nothingWritten();
  });

  it('refuses a payload the valibot schema rejects at enqueue, writing nothing', async () => {
    await expect(jobs.enqueue(Resize, { width: 0 })).rejects.toMatchObject({
      name: 'ChokaQPayloadValidationError',
      issues: [{ path: 'payload.width', message: expect.stringMatching(/1/), value: 0 }],
    });
    await expect(jobs.enqueue(Resize, { width: 'wide' } as never)).rejects.toBeInstanceOf(
      ChokaQPayloadValidationError,
    );
    await nothingWritten();
  });

  it('checks the payload as it will be stored: a Date is an ISO string after the JSON round trip', async () => {
    await expect(jobs.enqueue(Dated, { at: new Date() })).rejects.toMatchObject({
      issues: [{ path: 'payload.at', value: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) }],
    });
    await nothingWritten();
  });

  it('refuses a whole enqueueMany when one payload fails, naming its index, writing nothing', async () => {
    await expect(
      jobs.enqueueMany(Welcome, [
        { payload: { to: 'a@b.c' } },
        { payload: { to: null } as never },
        { payload: { to: 'd@e.f', lang: 7 } as never },
      ]),
    ).rejects.toMatchObject({
      issues: [
        { path: 'items[1].payload.to', value: null },
        { path: 'items[2].payload.lang', value: 7 },
      ],
    });
    // An async schema is awaited for every item before anything is written.
    await expect(
      jobs.enqueueMany(Even, [{ payload: { n: 2 } }, { payload: { n: 4 } }, { payload: { n: 5 } }]),
    ).rejects.toMatchObject({
      issues: [{ path: 'items[2].payload.n', message: 'must be even', value: 5 }],
    });
    await nothingWritten();
  });

  it('moves a stored payload that fails the handler’s schema to the DLQ at once as FatalError', async () => {
    const id = await jobs.enqueue(UncheckedWelcome, { to: ['not', 'a', 'string'] });
    const job = await settled(id);
    expect(job).toMatchObject({
      pillar: 'dlq',
      status: JobStatus.Failed,
      failureReason: FailureReason.FatalError,
      attemptCount: 1,
      payload: { to: ['not', 'a', 'string'] },
    });
    expect(job.errorDetails).toContain(
      'ChokaQPayloadValidationError: Payload of schema-e2e/welcome.v1 does not match its schema',
    );
    expect(job.errorDetails).toMatch(/payload\.to: .*string.* \(got array\(3\)\)/);
    expect(handlers.received).toEqual([]);
  });

  it('runs a valid payload with the schema’s output, and stores what the caller passed', async () => {
    const [welcome, even] = await Promise.all([
      jobs.enqueue(Welcome, { to: '  Ada@Example.COM ' }),
      jobs.enqueue(Even, { n: 8 }),
    ]);
    const welcomed = await settled(welcome);
    expect(welcomed).toMatchObject({
      pillar: 'archive',
      attemptCount: 1,
      payload: { to: '  Ada@Example.COM ' },
    });
    expect((await settled(even)).pillar).toBe('archive');
    expect(handlers.received).toEqual(
      expect.arrayContaining([
        { type: 'welcome.v1', payload: { to: 'ada@example.com', lang: 'en' } },
        { type: 'even.v1', payload: { n: 8 } },
      ]),
    );
    expect(handlers.received).toHaveLength(2);
  });

  it('checks an edited payload by the schema, through the definition and through the admin', async () => {
    const admin = app.get(ChokaQAdmin);
    const id = await jobs.enqueue(Welcome, { to: 'A@B.C' }, { delayMs: 3_600_000 });
    const refused = await jobs
      .updatePending(Welcome, id, { payload: { to: 42 } as never })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ChokaQPayloadValidationError);
    expect(refused).toMatchObject({ issues: [{ path: 'edits.payload.to', value: 42 }] });
    // The process registers the handler of welcome.v1, so the admin checks by its schema too.
    await expect(admin.updatePending(id, { payload: { to: 42 } })).rejects.toMatchObject({
      name: 'ChokaQPayloadValidationError',
      issues: [{ path: 'edits.payload.to', value: 42 }],
    });
    // Another definition's job is not this one's to edit.
    await expect(jobs.updatePending(Resize, id, { priority: 1 })).rejects.toMatchObject({
      name: 'ChokaQValidationError',
      issues: [{ path: 'id', message: expect.stringMatching(/welcome\.v1/) }],
    });
    expect((await jobs.getJob(id))?.payload).toEqual({ to: 'A@B.C' });

    // A valid payload, and run now: the worker runs the edited job at once.
    await jobs.updatePending(Welcome, id, { payload: { to: ' X@Y.Z ' }, runAt: 'now' });
    expect((await settled(id)).pillar).toBe('archive');
    expect(handlers.received).toEqual([
      { type: 'welcome.v1', payload: { to: 'x@y.z', lang: 'en' } },
    ]);
    await expect(jobs.updatePending(Welcome, id, { priority: 2 })).rejects.toMatchObject({
      name: 'ChokaQJobNotPendingError',
      jobId: id,
      status: JobStatus.Succeeded,
    });
  });
});
