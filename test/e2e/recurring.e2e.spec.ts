import { INestApplication, Injectable } from '@nestjs/common';
import { JobContext, JobHandler, RecurringJob } from '../../libs/chokaq/src';
import { bootApp, closeAndCheck } from './support/e2e-app';
import { E2eDatabase, createE2eDatabase, describeEachE2e } from './support/e2e-database';
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

describeEachE2e('recurring jobs across two app instances', (dialect) => {
  let db: E2eDatabase;
  const apps: INestApplication[] = [];
  beforeEach(async () => (db = await createE2eDatabase(dialect)));
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
      async () => (await db.count('jobs_archive', "queue = 'tick'")) >= 4,
      {
        timeoutMs: 20_000,
      },
    );
    const elapsedSlots = Math.ceil((Date.now() - started) / 1_000) + 1;
    for (const app of apps.splice(0)) await closeAndCheck(app, db);

    const rows = [
      ...(await db.sql<{ k: string }>(
        `SELECT idempotency_key AS k FROM ${db.table('jobs_archive')} WHERE queue = 'tick'`,
      )),
      ...(await db.sql<{ k: string }>(
        `SELECT idempotency_key AS k FROM ${db.table('jobs_hot')} WHERE queue = 'tick'`,
      )),
      ...(await db.sql<{ k: string }>(
        `SELECT idempotency_key AS k FROM ${db.table('jobs_dlq')} WHERE queue = 'tick'`,
      )),
    ];
    const slots = rows.map((r) => r.k);
    expect(slots.every((k) => k?.startsWith('recurring:every-second:'))).toBe(true);
    expect(new Set(slots).size).toBe(slots.length); // no slot twice
    expect(slots.length).toBeLessThanOrEqual(elapsedSlots + 1);
    const [record] = await db.sql<{ name: string }>(
      `SELECT name FROM ${db.table('recurring_jobs')}`,
    );
    expect(record.name).toBe('every-second');
  });
});
