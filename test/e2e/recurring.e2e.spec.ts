import { INestApplication, Injectable } from '@nestjs/common';
import {
  ChokaQAdmin,
  ChokaQRecurringJobNotFoundError,
  ChokaQValidationError,
  JobContext,
  JobHandler,
  JobStatus,
  RecurringJob,
} from '../../libs/chokaq/src';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';
import { TestSchema, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';

@Injectable()
class Ticks {
  readonly runs: string[] = [];

  @RecurringJob('every-second', '* * * * * *', { payload: { source: 'cron' } })
  @JobHandler('tick')
  async tick(payload: { source: string }, ctx: JobContext): Promise<void> {
    expect(payload).toEqual({ source: 'cron' });
    this.runs.push(ctx.id);
  }
}

@Injectable()
class Reports {
  readonly runs: Array<{ id: string; payload: unknown }> = [];

  @RecurringJob('declared-nightly', '0 3 * * *', {
    queue: 'reports',
    payload: { from: 'decorator' },
  })
  @JobHandler('reports')
  async run(payload: unknown, ctx: JobContext): Promise<void> {
    this.runs.push({ id: ctx.id, payload });
  }
}

describeEachDialect('recurring jobs operated through ChokaQAdmin', ({ name: dialect }) => {
  let db: TestSchema;
  const apps: INestApplication[] = [];
  beforeEach(() => (db = e2eDatabase(dialect)));
  afterEach(async () => {
    for (const app of apps.splice(0)) await closeAndCheck(app, db);
    await db.close();
  });

  const find = async (admin: ChokaQAdmin, name: string) =>
    (await admin.getRecurringJobs()).find((r) => r.name === name);

  it('upserts, triggers, pauses, resumes and removes; a declared job comes back at the next start', async () => {
    const app = await bootApp(db, { providers: [Reports] });
    apps.push(app);
    const admin = app.get(ChokaQAdmin);
    const reports = app.get(Reports);

    await admin.upsertRecurringJob({
      name: 'runtime-hourly',
      cron: '0 * * * *',
      queue: 'reports',
      payload: { from: 'data' },
    });
    const runtime = await find(admin, 'runtime-hourly');
    expect(runtime).toMatchObject({
      source: 'runtime',
      timeZone: 'UTC',
      type: 'reports',
      misfirePolicy: 'skip',
      isPaused: false,
      lastSlotUtc: null,
      lastRun: null,
    });
    await waitFor(
      'the declared job registered',
      async () => !!(await find(admin, 'declared-nightly')),
    );
    expect(await find(admin, 'declared-nightly')).toMatchObject({
      source: 'decorator',
      lastRun: null,
    });

    const id = await admin.triggerRecurringJob('runtime-hourly', 'ops@example.com');
    await waitFor('the triggered run', async () => reports.runs.some((r) => r.id === id));
    expect(reports.runs.find((r) => r.id === id)?.payload).toEqual({ from: 'data' });
    expect((await admin.getJob(id))?.createdBy).toBe('ops@example.com');
    await waitFor(
      'the last run archived',
      async () => (await find(admin, 'runtime-hourly'))?.lastRun?.pillar === 'archive',
    );
    expect(await find(admin, 'runtime-hourly')).toMatchObject({
      lastJobId: id,
      lastRun: { id, pillar: 'archive', status: JobStatus.Succeeded },
      nextSlotUtc: runtime!.nextSlotUtc,
    });
    const byDefault = await admin.triggerRecurringJob('declared-nightly');
    expect((await admin.getJob(byDefault))?.createdBy).toBe('chokaq:recurring-trigger');

    await admin.pauseRecurringJob('runtime-hourly');
    expect((await find(admin, 'runtime-hourly'))?.isPaused).toBe(true);
    await admin.resumeRecurringJob('runtime-hourly');
    expect((await find(admin, 'runtime-hourly'))?.isPaused).toBe(false);

    // Checked by the rules of @RecurringJob, issue paths named by the spec's keys.
    const invalid = await admin
      .upsertRecurringJob({ name: 'bad', cron: '61 * * * *', queue: '', misfire: 'all' as never })
      .catch((error: unknown) => error);
    expect(invalid).toBeInstanceOf(ChokaQValidationError);
    expect((invalid as ChokaQValidationError).issues.map((i) => i.path).sort()).toEqual(
      ['cron', 'misfire', 'queue'].sort(),
    );
    expect(await find(admin, 'bad')).toBeUndefined();

    for (const action of [
      () => admin.pauseRecurringJob('missing'),
      () => admin.resumeRecurringJob('missing'),
      () => admin.removeRecurringJob('missing'),
      () => admin.triggerRecurringJob('missing'),
    ]) {
      const error = await action().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ChokaQRecurringJobNotFoundError);
    }

    await admin.removeRecurringJob('runtime-hourly');
    await admin.removeRecurringJob('declared-nightly');
    expect(await admin.getRecurringJobs()).toEqual([]);

    // A runtime job survives a restart; a removed declared job is back once a process that
    // declares it starts, with the decorator's definition.
    await admin.upsertRecurringJob({ name: 'runtime-hourly', cron: '0 * * * *', queue: 'reports' });
    await admin.upsertRecurringJob({
      name: 'declared-nightly',
      cron: '0 4 * * *',
      queue: 'reports',
      payload: { from: 'data' },
    });
    await closeAndCheck(apps.pop()!, db);
    const again = await bootApp(db, { providers: [Reports] });
    apps.push(again);
    const admin2 = again.get(ChokaQAdmin);
    await waitFor(
      'the declared job re-asserted',
      async () => (await find(admin2, 'declared-nightly'))?.source === 'decorator',
    );
    expect(await find(admin2, 'declared-nightly')).toMatchObject({
      cron: '0 3 * * *',
      payload: { from: 'decorator' },
    });
    expect((await find(admin2, 'runtime-hourly'))?.source).toBe('runtime');
  });
});

describeEachDialect('recurring jobs across two app instances', ({ name: dialect }) => {
  let db: TestSchema;
  const apps: INestApplication[] = [];
  beforeEach(() => (db = e2eDatabase(dialect)));
  afterEach(async () => {
    for (const app of apps.splice(0)) await closeAndCheck(app, db);
    await db.close();
  });

  it('enqueues each slot of an every-second cron once, however many processes run', async () => {
    apps.push(await bootApp(db, { providers: [Ticks] }));
    apps.push(await bootApp(db, { providers: [Ticks] }));
    const started = Date.now();
    await waitFor(
      'four recurring jobs archived',
      async () => (await db.count('archive', "queue = 'tick'")) >= 4,
      {
        timeoutMs: 20_000,
      },
    );
    const elapsedSlots = Math.ceil((Date.now() - started) / 1_000) + 1;
    for (const app of apps.splice(0)) await closeAndCheck(app, db);

    const rows = [
      ...(await db.query<{ k: string }>(
        `SELECT idempotency_key AS k FROM ${db.table('archive')} WHERE queue = 'tick'`,
      )),
      ...(await db.query<{ k: string }>(
        `SELECT idempotency_key AS k FROM ${db.table('hot')} WHERE queue = 'tick'`,
      )),
      ...(await db.query<{ k: string }>(
        `SELECT idempotency_key AS k FROM ${db.table('dlq')} WHERE queue = 'tick'`,
      )),
    ];
    const slots = rows.map((r) => r.k);
    expect(slots.every((k) => k?.startsWith('recurring:every-second:'))).toBe(true);
    expect(new Set(slots).size).toBe(slots.length); // no slot twice
    expect(slots.length).toBeLessThanOrEqual(elapsedSlots + 1);
    const [record] = await db.query<{ name: string }>(`SELECT name FROM ${db.table('recurring')}`);
    expect(record.name).toBe('every-second');
  });
});
