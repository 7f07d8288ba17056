import { randomUUID } from 'node:crypto';
import type { ChokaQModuleOptions } from '../../libs/chokaq/src';
import type { NewJob } from '../../libs/chokaq/src/interfaces/job.interface';
import { waitFor } from '../support/wait-for';
import {
  type FaultDatabase,
  type FaultWorker,
  killAllFaultWorkers,
  openFaultDatabase,
  startFaultWorker,
} from './support/fault-processes';

jest.setTimeout(120_000);

afterAll(killAllFaultWorkers);

const CHILDREN = 1_000;

/**
 * A fan-in of 1,000 children drained by four worker processes that finish them at once, one of
 * them SIGKILLed mid-drain (its running children become zombies and reach the DLQ through another
 * process's rescue): the parent, which waits on every child with `ignore`, is released exactly
 * once, by the move of the last child to settle, and runs exactly once after all of them; a
 * second parent waiting with `block` stays Waiting while one child is in the DLQ. Counted by SQL
 * and by the runs each handler recorded, on PostgreSQL and SQLite.
 */
describe.each(['postgres', 'sqlite'] as const)(
  'dependencies across worker processes [%s]',
  (dialect) => {
    let db: FaultDatabase | undefined;
    const workers: FaultWorker[] = [];

    afterEach(async () => {
      await Promise.all(workers.splice(0).map((w) => w.kill()));
      await db?.close();
    });

    function options(current: FaultDatabase): ChokaQModuleOptions {
      return {
        storage: current.options,
        worker: { concurrency: 8, pollIntervalMs: 20 },
        heartbeat: { intervalMs: 200 },
        rescue: { intervalMs: 300, fetchedJobTimeoutMs: 2_000, zombieTimeoutMs: 1_500 },
        retry: { maxAttempts: 1 },
      };
    }

    it('1,000 children in 4 processes, one SIGKILLed: the parent is released and runs once', async () => {
      const current = (db = await openFaultDatabase(dialect));
      // Started together: each takes a second or so to boot, and none needs another.
      workers.push(
        ...(await Promise.all(
          [0, 1, 2, 3].map((n) =>
            startFaultWorker({
              ...current.record,
              workerId: `deps-${dialect}-${n}`,
              options: options(current),
            }),
          ),
        )),
      );
      const children = Array.from({ length: CHILDREN }, () => randomUUID());
      const [parent, blocked] = [randomUUID(), randomUUID()];
      const jobs: NewJob[] = [
        {
          id: parent,
          queue: 'faults',
          type: 'parent',
          dependsOn: children.map((jobId) => ({ jobId, onFailure: 'ignore' as const })),
        },
        { id: blocked, queue: 'faults', type: 'blocked', dependsOn: children },
        ...children.map((id) => ({ id, queue: 'faults', payload: { sleepMs: 10 } })),
      ];
      await current.storageHere.enqueueMany(jobs);

      await waitFor(
        'the drain to be under way',
        async () => (await current.count('archive')) >= 100,
        {
          timeoutMs: 30_000,
          intervalMs: 20,
        },
      );
      // The victim: a worker with jobs running right now, so its crash leaves zombies.
      const victim = await waitFor(
        'a worker with running jobs',
        async () => {
          for (const w of workers) if ((await w.stats()).running > 0) return w;
          return undefined;
        },
        { timeoutMs: 10_000, intervalMs: 5 },
      );
      workers.splice(workers.indexOf(victim), 1);
      await victim.kill();

      await waitFor(
        'the parent to finish',
        async () => (await current.count('archive', 'id = ?', [parent])) === 1,
        {
          timeoutMs: 60_000,
          intervalMs: 100,
        },
      );
      const zombies = await current.count('dlq', 'failure_reason = 2');
      expect(zombies).toBeGreaterThan(0);
      expect((await current.count('archive', `type = 'faults'`)) + zombies).toBe(CHILDREN);

      // Released once, run once: one start recorded by the handlers, after every child settled.
      const starts = await current.runs<{ n: number | string }>(
        `SELECT count(*) AS n FROM ${current.record.runsTable} WHERE job_id = ? AND phase = 'start'`,
        [parent],
      );
      expect(Number(starts[0].n)).toBe(1);
      const [parentView, ...childViews] = await Promise.all(
        [parent, ...children].map((id) => current.storageHere.getJob(id)),
      );
      const lastSettled = Math.max(
        ...childViews.map((c) => (c!.finishedAtUtc ?? c!.failedAtUtc)!.getTime()),
      );
      expect(parentView!.startedAtUtc!.getTime()).toBeGreaterThanOrEqual(lastSettled);
      expect(parentView).toMatchObject({ pillar: 'archive', waitingOn: 0, attemptCount: 1 });

      // `block`: the zombied children keep the other parent Waiting, counting exactly them.
      expect(await current.storageHere.getJob(blocked)).toMatchObject({
        pillar: 'hot',
        status: 7,
        waitingOn: zombies,
      });
      const blockedStarts = await current.runs<{ n: number | string }>(
        `SELECT count(*) AS n FROM ${current.record.runsTable} WHERE job_id = ?`,
        [blocked],
      );
      expect(Number(blockedStarts[0].n)).toBe(0);
    });
  },
);
