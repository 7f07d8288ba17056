import type { ChokaQModuleOptions } from '../../libs/chokaq/src';
import type { BatchEnqueued } from '../../libs/chokaq/src/interfaces/batch.interface';
import { waitFor } from '../support/wait-for';
import {
  type FaultDatabase,
  type FaultWorker,
  killAllFaultWorkers,
  openFaultDatabase,
  pillarViolations,
  startFaultWorker,
} from './support/fault-processes';

jest.setTimeout(120_000);

afterAll(killAllFaultWorkers);

const BATCHES = 4;
const JOBS_PER_BATCH = 60;

/**
 * Batches drained by worker processes that race to finish their last jobs, one of them SIGKILLed
 * mid-drain so that its running jobs become zombies and reach the DLQ through another process's
 * rescue: every batch settles with counts equal to its jobs' pillars, and each callback due runs
 * exactly once (recorded by the handler that ran it), on PostgreSQL and SQLite.
 */
describe.each(['postgres', 'sqlite'] as const)(
  'batches across worker processes [%s]',
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
        worker: { concurrency: 4, pollIntervalMs: 20 },
        heartbeat: { intervalMs: 200 },
        rescue: { intervalMs: 300, fetchedJobTimeoutMs: 2_000, zombieTimeoutMs: 1_500 },
        retry: { maxAttempts: 1 },
      };
    }

    it('a SIGKILL mid-drain: every batch settles once, each due callback runs exactly once', async () => {
      const current = (db = await openFaultDatabase(dialect));
      for (let n = 0; n < 3; n++) {
        workers.push(
          await startFaultWorker({
            ...current.record,
            workerId: `batch-${dialect}-${n}`,
            options: options(current),
          }),
        );
      }
      // Enqueued once every worker is up, so that each takes part in the drain.
      const batches: BatchEnqueued[] = [];
      for (let b = 0; b < BATCHES; b++) {
        batches.push(
          await current.storageHere.enqueueBatch({
            jobs: Array.from({ length: JOBS_PER_BATCH }, () => ({
              queue: 'faults',
              payload: { sleepMs: 100 },
            })),
            callbacks: {
              onComplete: { queue: 'faults', type: 'complete' },
              onSuccess: { queue: 'faults', type: 'success' },
              onFailure: { queue: 'faults', type: 'failure' },
            },
          }),
        );
      }
      await waitFor(
        'the drain to be under way',
        async () => (await current.count('archive')) >= 40,
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

      const members = batches.flatMap((b) => b.jobIds);
      const callbacks = batches.flatMap((b) => Object.values(b.callbacks));
      await waitFor(
        'every batch to settle',
        async () => {
          for (const b of batches) {
            if ((await current.storageHere.getBatch(b.batchId))?.settledAtUtc == null) return false;
          }
          return true;
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      await waitFor('the hot table to empty', async () => (await current.count('hot')) === 0, {
        timeoutMs: 30_000,
        intervalMs: 100,
      });
      expect(await pillarViolations(current, members, { allowExtra: callbacks })).toEqual([]);

      // The killed worker's running jobs were zombied (a run takes 100 ms, far longer than the
      // kill takes to follow its stats), and count as failed in their batches.
      const zombies = await current.count('dlq', 'failure_reason = 2');
      expect(zombies).toBeGreaterThan(0);
      for (const b of batches) {
        const view = (await current.storageHere.getBatch(b.batchId))!;
        const inDlq = await current.count(
          'dlq',
          `batch_id = ? AND id NOT IN (${callbacks.map(() => '?').join(', ')})`,
          [b.batchId, ...callbacks],
        );
        expect(view).toMatchObject({
          total: JOBS_PER_BATCH,
          succeeded: JOBS_PER_BATCH - inDlq,
          failed: inDlq,
          pending: 0,
        });
        // The callbacks due, and only those, exist; each ran once.
        const due = ['complete', inDlq === 0 ? 'success' : 'failure'];
        const firedKinds = view.callbacks.filter((c) => c.fired).map((c) => c.kind);
        expect(firedKinds.sort()).toEqual(due.sort());
        for (const c of view.callbacks) {
          const starts = await current.runs<{ n: number | string }>(
            `SELECT count(*) AS n FROM ${current.record.runsTable} WHERE job_id = ? AND phase = 'start'`,
            [c.jobId],
          );
          expect([c.kind, Number(starts[0].n)]).toEqual([c.kind, c.fired ? 1 : 0]);
        }
      }
      let failed = 0;
      for (const b of batches) failed += (await current.storageHere.getBatch(b.batchId))!.failed;
      expect(failed).toBe(zombies);
    });
  },
);
