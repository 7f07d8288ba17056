import { INestApplication, Injectable } from '@nestjs/common';
import { ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { JobHandler, RecurringJob } from '../../libs/chokaq/src';
import { CHOKAQ_STORAGE } from '../../libs/chokaq/src/chokaq.constants';
import { ChokaQOrchestrator } from '../../libs/chokaq/src/chokaq.orchestrator';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';
import { TestSchema, describeEachDialect } from '../support/test-database';

/** Slots far from now, so no slot fires while the registry is observed. */
@Injectable()
class Reports {
  @RecurringJob('nightly', '0 3 * * *', { timeZone: 'Europe/Paris' })
  @JobHandler('reports')
  async nightly(): Promise<void> {}

  @RecurringJob('yearly', '0 0 1 1 *')
  @JobHandler('archives')
  async yearly(): Promise<void> {}
}

/** The `chokaq:` entries among the registry's timeouts, sorted. */
function chokaqTimeouts(registry: SchedulerRegistry): string[] {
  return registry
    .getTimeouts()
    .filter((name) => name.startsWith('chokaq:'))
    .sort();
}

describeEachDialect('recurring jobs in @nestjs/schedule SchedulerRegistry', ({ name: dialect }) => {
  let db: TestSchema;
  const apps: INestApplication[] = [];
  beforeEach(() => (db = e2eDatabase(dialect)));
  afterEach(async () => {
    for (const app of apps.splice(0)) await closeAndCheck(app, db);
    await db.close();
  });

  const bootWorker = async () => {
    const app = await bootApp(db, { providers: [Reports], imports: [ScheduleModule.forRoot()] });
    apps.push(app);
    return { app, registry: app.get(SchedulerRegistry) };
  };
  /** Another process that changes the definitions in the database: producer-only, no loops. */
  const bootOther = async () => {
    const app = await bootApp(db, { options: { worker: { enabled: false } } });
    apps.push(app);
    return app.get<JobStorage>(CHOKAQ_STORAGE);
  };
  const paused = (value: boolean) =>
    db.dialect === 'postgres' ? String(value).toUpperCase() : value ? '1' : '0';

  it('lists each recurring job as chokaq:<name> after start', async () => {
    const { registry } = await bootWorker();
    await waitFor('both recurring timers listed', () => chokaqTimeouts(registry).length === 2);
    expect(chokaqTimeouts(registry)).toEqual(['chokaq:nightly', 'chokaq:yearly']);
  });

  it('follows removals, re-adds, pauses and re-schedules made in the database by another process', async () => {
    const { registry } = await bootWorker();
    const other = await bootOther();
    await waitFor('both recurring timers listed', () => chokaqTimeouts(registry).length === 2);
    const [yearly] = (await other.getRecurringJobs()).filter((r) => r.name === 'yearly');

    await db.query(`DELETE FROM ${db.table('recurring')} WHERE name = 'yearly'`);
    await waitFor('the removed job gone from the registry', () =>
      chokaqTimeouts(registry).every((name) => name !== 'chokaq:yearly'),
    );
    expect(chokaqTimeouts(registry)).toEqual(['chokaq:nightly']);

    await other.upsertRecurringJob(yearly);
    await waitFor('the re-added job listed again', () =>
      chokaqTimeouts(registry).includes('chokaq:yearly'),
    );

    await db.query(
      `UPDATE ${db.table('recurring')} SET is_paused = ${paused(true)} WHERE name = 'nightly'`,
    );
    await waitFor('the paused job gone from the registry', () =>
      chokaqTimeouts(registry).every((name) => name !== 'chokaq:nightly'),
    );
    await db.query(
      `UPDATE ${db.table('recurring')} SET is_paused = ${paused(false)} WHERE name = 'nightly'`,
    );
    await waitFor('the resumed job listed again', () =>
      chokaqTimeouts(registry).includes('chokaq:nightly'),
    );

    // A new cron moves the next slot, so the listed timer is replaced by one armed for it.
    const before = registry.getTimeout('chokaq:yearly') as NodeJS.Timeout;
    const now = await other.now();
    await other.upsertRecurringJob({
      ...yearly,
      cron: '0 0 1 7 *',
      nextSlotUtc: new Date(now.getTime() + 3_600_000),
    });
    await waitFor(
      'the re-scheduled job re-armed',
      () =>
        registry.doesExist('timeout', 'chokaq:yearly') &&
        registry.getTimeout('chokaq:yearly') !== before,
    );
  });

  it('removes its entries when ChokaQ stops, and leaves the application’s own', async () => {
    const { app, registry } = await bootWorker();
    const own = setTimeout(() => undefined, 60_000);
    registry.addTimeout('app-timeout', own);
    await waitFor('both recurring timers listed', () => chokaqTimeouts(registry).length === 2);

    // What beforeApplicationShutdown awaits, run before ScheduleModule clears every timeout itself.
    await app.get(ChokaQOrchestrator).stop();
    expect(chokaqTimeouts(registry)).toEqual([]);
    expect(registry.getTimeouts()).toEqual(['app-timeout']);
    clearTimeout(own);
  });
});
