import { INestApplication, Injectable } from '@nestjs/common';
import { JobContext, JobHandler, RecurringJob } from '../../libs/chokaq/src';
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
