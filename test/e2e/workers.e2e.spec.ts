import { INestApplication, Injectable } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  ChokaQAdmin,
  FailureReason,
  JobClient,
  JobEvent,
  OnJobEvent,
  WorkerInfo,
} from '../../libs/chokaq/src';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import { PG_URL } from '../support/env';
import { TestSchema, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';
import { WorkerProcess, startWorkerProcess } from './support/worker-processes';

/**
 * The Workers table across real processes: a producer-only app in this process (no worker, so
 * `workerStats()` is null here) lists the worker of another OS process with its host, pid, library
 * version and load; sees it lost once it is SIGKILLed; and sees a worker stopped once it shut down
 * on SIGTERM. The lost worker's running jobs are rescued by a worker app in this process, which
 * hears one `stalled` event per zombie naming the lost worker, after the move committed.
 */
jest.setTimeout(120_000);

/** The version every worker reports: that of the library's package.json. */
const VERSION = (
  JSON.parse(
    readFileSync(join(__dirname, '..', '..', 'libs', 'chokaq', 'package.json'), 'utf8'),
  ) as { version: string }
).version;

/** Short enough that a killed worker is lost, and its jobs zombies, within about two seconds. */
const RESCUE = { intervalMs: 200, fetchedJobTimeoutMs: 1_500, zombieTimeoutMs: 1_500 };

@Injectable()
class StalledListener {
  readonly heard: JobEvent[] = [];
  /** The pillar a fresh read finds each job in when its event is heard. */
  readonly committed = new Map<string, string | undefined>();

  constructor(private readonly admin: ChokaQAdmin) {}

  @OnJobEvent('stalled')
  async onStalled(event: JobEvent): Promise<void> {
    this.heard.push(event);
    this.committed.set(event.job.id, (await this.admin.getJob(event.job.id))?.pillar);
  }
}

describeEachDialect(
  'the Workers table seen from a producer-only app',
  ({ name: dialect }) => {
    let db: TestSchema;
    let producer: INestApplication | undefined;
    let rescuer: INestApplication | undefined;
    const children: WorkerProcess[] = [];

    beforeEach(() => {
      db = e2eDatabase(dialect);
    });
    afterEach(async () => {
      await Promise.all(children.splice(0).map((c) => c.stop()));
      if (rescuer) await closeAndCheck(rescuer, db);
      if (producer) await closeAndCheck(producer, db);
      rescuer = producer = undefined;
      await db.close();
    });

    function startChild(workerId: string): Promise<WorkerProcess> {
      return startWorkerProcess({
        mode: 'hang',
        runsTable: 'unused',
        ...(dialect === 'sqlite' ? { sqliteFile: db.file } : { pgUrl: PG_URL }),
        options: {
          storage: db.options,
          worker: { workerId, concurrency: 3, pollIntervalMs: 50 },
          heartbeat: { intervalMs: 300 },
          rescue: RESCUE,
        },
      });
    }

    async function workerRow(admin: ChokaQAdmin, id: string): Promise<WorkerInfo | undefined> {
      return (await admin.listWorkers()).find((w) => w.workerId === id);
    }

    it('lists another process’s worker, sees it lost after SIGKILL, its zombies stalled, and a SIGTERM stop', async () => {
      producer = await bootApp(db, { options: { worker: { enabled: false }, rescue: RESCUE } });
      const admin = producer.get(ChokaQAdmin);
      expect(admin.workerStats()).toBeNull();

      const victim = await startChild('victim');
      children.push(victim);
      const seen = await waitFor('the victim in the Workers table', () =>
        workerRow(admin, 'victim'),
      );
      expect(seen).toMatchObject({
        host: hostname(),
        pid: victim.child.pid,
        libraryVersion: VERSION,
        concurrency: 3,
        handled: { queues: ['mp'], types: [] },
        circuits: {},
        draining: false,
        stoppedAtUtc: null,
        state: 'running',
      });

      // Its load is reported with its heartbeat.
      const jobs = producer.get(JobClient);
      const ids = await jobs.enqueueMany('mp', [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
      await waitFor(
        'the victim to report two running jobs',
        async () => (await workerRow(admin, 'victim'))?.running === 2,
      );

      // SIGKILL: no stop is recorded; once the zombie timeout passed it is lost.
      await victim.kill();
      await waitFor(
        'the victim to be lost',
        async () => (await workerRow(admin, 'victim'))?.state === 'lost',
      );
      expect((await workerRow(admin, 'victim'))?.stoppedAtUtc).toBeNull();

      // A worker app in this process rescues its jobs and hears them stall.
      rescuer = await bootApp(db, {
        providers: [StalledListener],
        options: { heartbeat: { intervalMs: 300 }, rescue: RESCUE },
      });
      const listener = rescuer.get(StalledListener);
      // Heard, and each read back by the listener (its read finishes after the event arrived).
      await waitFor('two stalled events read back', () => listener.committed.size === 2);
      expect(listener.heard.map((e) => e.job.id).sort()).toEqual([...ids].sort());
      for (const event of listener.heard) {
        expect(event).toMatchObject({
          name: 'stalled',
          pillar: 'dlq',
          reason: FailureReason.Zombie,
          lostWorkerId: 'victim',
          attempt: 1,
          job: { queue: 'mp', type: 'mp', workerId: 'victim', pillar: 'dlq' },
        });
        // Emitted after the move committed: a fresh read finds the job in the DLQ.
        expect(listener.committed.get(event.job.id)).toBe('dlq');
      }

      // The rescuing worker is listed too, running.
      const rescuerId = rescuer.get(WorkerRegistry).localWorker!.workerId;
      expect((await workerRow(admin, rescuerId))?.state).toBe('running');

      // SIGTERM: the worker drains, and its row says it stopped.
      const graceful = await startChild('graceful');
      children.push(graceful);
      await waitFor(
        'the graceful worker to run',
        async () => (await workerRow(admin, 'graceful'))?.state === 'running',
      );
      await graceful.stop();
      const stopped = await waitFor('the graceful worker to be stopped', async () => {
        const row = await workerRow(admin, 'graceful');
        return row?.state === 'stopped' ? row : undefined;
      });
      expect(stopped).toMatchObject({ running: 0, stoppedAtUtc: expect.any(Date) });

      // Closing the in-process worker app marks its row stopped too.
      await closeAndCheck(rescuer, db);
      rescuer = undefined;
      expect((await workerRow(admin, rescuerId))?.state).toBe('stopped');
      expect((await admin.listWorkers()).map((w) => [w.workerId, w.state]).sort()).toEqual(
        [
          ['graceful', 'stopped'],
          ['victim', 'lost'],
          [rescuerId, 'stopped'],
        ].sort(),
      );
    });
  },
  // The worker-process fixture speaks SQLite and PostgreSQL only.
  { only: ['sqlite', 'postgres'] },
);
