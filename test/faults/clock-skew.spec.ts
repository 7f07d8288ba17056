import { join } from 'node:path';
import { pgAvailable } from '../support/env';
import { waitFor } from '../support/wait-for';
import {
  FaultDatabase,
  openFaultDatabase,
  FaultWorker,
  killAllFaultWorkers,
  startFaultWorker,
} from './support/fault-processes';

/**
 * Clock skew (issue 6, part 5): worker processes whose wall clock is an hour ahead of or behind the
 * database (fixtures/clock-skew.ts, preloaded with `node -r`; timers and performance.now() are not
 * shifted). Every comparison ChokaQ makes uses the database clock, so delays, retries, heartbeats
 * and rescue behave exactly as without skew. On SQLite the "database clock" is the machine clock
 * read inside SQLite, which the JS patch does not move — the correct analogue.
 *
 * Times below are measured on the database clock (stored timestamps) or with the real clock of
 * this process and the runs table (recorded from performance.timeOrigin + performance.now()).
 */
jest.setTimeout(90_000);

const SKEW = join(__dirname, 'fixtures', 'clock-skew.ts');
const HOUR = 3_600_000;

afterAll(killAllFaultWorkers);

const dialects: Array<'sqlite' | 'postgres'> = pgAvailable() ? ['sqlite', 'postgres'] : ['sqlite'];

describe.each(dialects.flatMap((d) => [[d, +HOUR] as const, [d, -HOUR] as const]))(
  'application clock skewed [%s, %d ms]',
  (dialect, skewMs) => {
    let db: FaultDatabase | undefined;
    const workers: FaultWorker[] = [];

    afterEach(async () => {
      await Promise.all(workers.splice(0).map((w) => w.stop(10_000)));
      await db?.close();
    });

    function start(workerId: string): Promise<FaultWorker> {
      return startFaultWorker(
        {
          ...db!.record,
          workerId,
          options: {
            storage: db!.options,
            worker: { concurrency: 4, pollIntervalMs: 50 },
            heartbeat: { intervalMs: 200 },
            rescue: { intervalMs: 200, fetchedJobTimeoutMs: 2_000, zombieTimeoutMs: 2_000 },
            retry: { maxAttempts: 3, baseDelayMs: 1_000, multiplier: 2, jitterMs: 0 },
          },
        },
        { preload: [SKEW], env: { CHOKAQ_CLOCK_SKEW_MS: String(skewMs) } },
      );
    }

    async function runs(jobId: string) {
      return db!.runs<{ attempt: number; phase: string; at_ms: number | string }>(
        `SELECT attempt, phase, at_ms FROM ${db!.record.runsTable} WHERE job_id = ? ORDER BY at_ms`,
        [jobId],
      );
    }

    it('delays, retries, heartbeats and rescue all follow the database clock', async () => {
      db = await openFaultDatabase(dialect);
      const current = db;
      const a = await start('skewed-a');
      workers.push(a);
      // The patch is really in effect in the worker (and only there).
      expect(Math.abs((await a.clockOffsetMs()) - skewMs)).toBeLessThan(1_000);

      // Enqueued by the skewed process itself, so a JS-computed due time would be an hour off.
      const delayed = await a.enqueue('faults', {}, { delayMs: 1_500 });
      const retried = await a.enqueue('faults', { failAttempts: 1 });
      const longRun = await a.enqueue('faults', { sleepMs: 3_500 });

      // A live worker's long job is never a zombie: another process's rescue (this one, unskewed,
      // with the same 2 s timeout) keeps looking while the job runs 3.5 s.
      const zombies: string[] = [];
      await waitFor(
        'the three jobs to be archived',
        async () => {
          zombies.push(...(await current.storageHere.archiveZombies(2_000)).dlq);
          return (await current.count('archive')) === 3;
        },
        { timeoutMs: 20_000, intervalMs: 100 },
      );
      expect(zombies).toEqual([]);
      expect(await current.count('dlq')).toBe(0);

      // Not run early, run soon after it was due (database clock: created → started).
      const [d] = await current.query<{ created: unknown; started: unknown }>(
        `SELECT created_at_utc AS created, started_at_utc AS started FROM ${current.table('archive')} WHERE id = ?`,
        [delayed],
      );
      // SQLite stores epoch ms, PostgreSQL timestamptz (a Date from pg).
      const ms = (v: unknown) => (typeof v === 'number' ? v : new Date(v as string).getTime());
      const waitedMs = ms(d.started) - ms(d.created);
      expect(waitedMs).toBeGreaterThanOrEqual(1_500);
      expect(waitedMs).toBeLessThan(3_500);

      // The first retry waits about baseDelayMs (1 s), measured on the real clock of the records.
      const r = await runs(retried);
      const failedAt = Number(r.find((x) => x.phase === 'error' && Number(x.attempt) === 1)!.at_ms);
      const restartedAt = Number(
        r.find((x) => x.phase === 'start' && Number(x.attempt) === 2)!.at_ms,
      );
      expect(restartedAt - failedAt).toBeGreaterThanOrEqual(900);
      expect(restartedAt - failedAt).toBeLessThan(3_000);
      expect((await runs(longRun)).map((x) => x.phase)).toEqual(['start', 'ok']);

      // A killed worker's job is rescued after the zombie timeout: not at once, not never.
      const hang = await a.enqueue('faults', { sleepMs: 60_000 });
      await waitFor(
        'the hang job to run',
        async () => (await current.count('hot', `id = '${hang}' AND status = 2`)) === 1,
      );
      const b = await start('skewed-b');
      workers.push(b);
      // Make sure the heartbeat covered the job recently, then kill its owner.
      await waitFor(
        'a fresh heartbeat',
        async () =>
          (await current.count('hot', `id = '${hang}' AND heartbeat_utc IS NOT NULL`)) === 1,
      );
      await a.kill();
      const killedAt = Date.now();
      await waitFor(
        'the killed job to be rescued as a zombie',
        async () => (await current.count('dlq', `id = '${hang}' AND status = 6`)) === 1,
        { timeoutMs: 15_000, intervalMs: 50 },
      );
      const rescuedAfter = Date.now() - killedAt;
      // The heartbeat was at most one interval (200 ms ±20 %) old at the kill: ≥ ~1.7 s to go.
      expect(rescuedAfter).toBeGreaterThanOrEqual(1_500);
      expect(rescuedAfter).toBeLessThan(8_000);
    });
  },
);
