import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STORED_TEXT } from '../../libs/chokaq/src/common/stored-text';
import type { ChokaQModuleOptions } from '../../libs/chokaq/src';
import { JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { pgAvailable } from '../support/env';
import { waitFor } from '../support/wait-for';
import {
  FaultDatabase,
  FaultWorker,
  killAllFaultWorkers,
  openFaultDatabase,
  pillarViolations,
  startFaultWorker,
} from './support/fault-processes';

/**
 * Starting ahead (`worker.startAhead`, PostgreSQL) with real worker processes: a claim starts more
 * rows than the process has free slots, and they wait in the process, Processing, for a slot. What
 * may change is one bound (a crash zombies at most `concurrency + startAhead` rows that never ran);
 * what may not: no job lost, run twice or run after it was cancelled or rescued, a graceful stop
 * hands back every row it did not run with the attempt refunded, and one slot runs jobs in order.
 *
 * The process starts ahead only what its recent rate needs, so each test that needs rows waiting at
 * a given moment checks afterwards that there were some, and runs again on a fresh database when
 * there were not (at most {@link TRIES} times).
 */
jest.setTimeout(90_000);

const TRIES = 3;
const HEARTBEAT_MS = 100;
const ZOMBIE_MS = 800;
const START_AHEAD = 128;

const run = pgAvailable() ? describe : describe.skip;

afterAll(killAllFaultWorkers);

run('starting ahead with real worker processes [postgres]', () => {
  let db: FaultDatabase | undefined;
  let workers: FaultWorker[] = [];
  let markers: string | undefined;

  afterEach(async () => {
    if (markers) writeFileSync(join(markers, 'unblock'), '');
    await Promise.all(workers.map((w) => w.stop(10_000)));
    await db?.close();
    if (markers) rmSync(markers, { recursive: true, force: true });
    db = markers = undefined;
    workers = [];
  });

  /** A fresh database (closing the previous try's) and a worker on queue `faults`. */
  async function open(
    name: string,
    concurrency: number,
    extra: Partial<ChokaQModuleOptions> = {},
  ): Promise<{ db: FaultDatabase; worker: FaultWorker }> {
    await Promise.all(workers.map((w) => w.kill()));
    workers = [];
    await db?.close();
    const current = (db = await openFaultDatabase('postgres'));
    const worker = await startWorker(current, name, concurrency, extra);
    return { db: current, worker };
  }

  async function startWorker(
    current: FaultDatabase,
    name: string,
    concurrency: number,
    extra: Partial<ChokaQModuleOptions> = {},
  ): Promise<FaultWorker> {
    const worker = await startFaultWorker({
      ...current.record,
      workerId: `${name}-${workers.length}`,
      recordOutcomes: true,
      options: {
        storage: current.options,
        worker: { concurrency, pollIntervalMs: 20, startAhead: START_AHEAD, prefetch: START_AHEAD },
        heartbeat: { intervalMs: HEARTBEAT_MS },
        // This process rescues when a test wants it; the workers' own rescue stays out of the way.
        rescue: { intervalMs: 60_000, fetchedJobTimeoutMs: 60_000, zombieTimeoutMs: ZOMBIE_MS },
        ...extra,
      },
    });
    workers.push(worker);
    return worker;
  }

  async function enqueue(current: FaultDatabase, payloads: object[]): Promise<string[]> {
    const results = await current.storageHere.enqueueMany(
      payloads.map((payload) => ({ queue: 'faults', payload })),
    );
    return results.map((r) => r.id);
  }

  /** `(job, lease)` pairs whose handler recorded a start. */
  async function startedRuns(current: FaultDatabase): Promise<Set<string>> {
    const rows = await current.runs<{ job_id: string; lease_id: string }>(
      `SELECT job_id, lease_id FROM ${current.record.runsTable} WHERE phase = 'start'`,
    );
    return new Set(rows.map((r) => `${r.job_id}/${r.lease_id}`));
  }

  /** Starts recorded per job (a job run twice shows two). */
  async function startsPerJob(current: FaultDatabase): Promise<Map<string, number>> {
    const rows = await current.runs<{ job_id: string; n: number | string }>(
      `SELECT job_id, count(*) AS n FROM ${current.record.runsTable} WHERE phase = 'start' ` +
        `GROUP BY job_id`,
    );
    return new Map(rows.map((r) => [r.job_id, Number(r.n)]));
  }

  /** The jobs whose runs began at or after `sinceMs` (the worker's real clock, as it recorded them). */
  async function startsSince(current: FaultDatabase, sinceMs: number): Promise<Set<string>> {
    const rows = await current.runs<{ job_id: string }>(
      `SELECT DISTINCT job_id FROM ${current.record.runsTable} WHERE phase = 'start' AND at_ms >= ?`,
      [sinceMs],
    );
    return new Set(rows.map((r) => r.job_id));
  }

  /** Hot rows of `workerId` in `status`, with their lease. */
  async function rowsOf(current: FaultDatabase, workerId: string, status: JobStatus) {
    return current.query<{ id: string; lease_id: string }>(
      `SELECT id, lease_id FROM ${current.table('hot')} WHERE worker_id = ? AND status = ?`,
      [workerId, status],
    );
  }

  /** Rescues zombies and abandoned rows, whatever their age, until none is left. */
  async function rescueAll(current: FaultDatabase): Promise<void> {
    for (;;) {
      const zombies = await current.storageHere.archiveZombies(1);
      const recovered = await current.storageHere.recoverAbandoned(1);
      if (zombies.dlq.length + zombies.retried.length + recovered === 0) return;
    }
  }

  it('SIGKILL mid-drain: zombies that never ran stay within concurrency + startAhead, and every job ends once', async () => {
    const concurrency = 4;
    for (let attempt = 1; ; attempt++) {
      const { db: current, worker } = await open('crash', concurrency);
      const ids = await enqueue(
        current,
        Array.from({ length: 600 }, () => ({})),
      );
      await waitFor('rows started ahead', async () => (await worker.stats()).startedAhead > 0, {
        intervalMs: 5,
      });
      await worker.kill();
      const started = await rowsOf(current, worker.workerId, JobStatus.Processing);
      const ran = await startedRuns(current);
      const neverRan = started.filter((r) => !ran.has(`${r.id}/${r.lease_id}`));
      if (neverRan.length === 0 && attempt < TRIES) continue;
      expect(neverRan.length).toBeGreaterThan(0);
      expect(neverRan.length).toBeLessThanOrEqual(concurrency + START_AHEAD);

      await rescueAll(current);
      await startWorker(current, 'crash-finisher', concurrency);
      await waitFor(
        'every job finished',
        async () => (await current.count('archive')) + (await current.count('dlq')) === ids.length,
        { timeoutMs: 30_000 },
      );
      expect(await pillarViolations(current, ids)).toEqual([]);
      // A zombie is not run again, and nothing else runs twice.
      expect([...(await startsPerJob(current)).values()].filter((n) => n > 1)).toEqual([]);
      const zombies = await current.query<{ id: string }>(
        `SELECT id FROM ${current.table('dlq')} WHERE failure_reason = 2`,
      );
      expect(zombies.map((z) => z.id).sort()).toEqual(started.map((r) => r.id).sort());
      return;
    }
  });

  it('a graceful stop hands back every row it did not run, with the attempt refunded', async () => {
    for (let attempt = 1; ; attempt++) {
      const { db: current, worker } = await open('graceful', 2);
      await enqueue(
        current,
        Array.from({ length: 600 }, () => ({})),
      );
      await waitFor('rows started ahead', async () => (await worker.stats()).startedAhead > 0, {
        intervalMs: 5,
      });
      await worker.stop();
      const released = await current.runs(
        `SELECT job_id FROM ${current.record.runsTable} WHERE phase = 'outcome' AND detail LIKE 'released%'`,
      );
      if (released.length === 0 && attempt < TRIES) continue;
      expect(released.length).toBeGreaterThan(0);
      expect(await rowsOf(current, worker.workerId, JobStatus.Processing)).toEqual([]);
      expect(await rowsOf(current, worker.workerId, JobStatus.Fetched)).toEqual([]);
      expect(await current.count('dlq')).toBe(0);
      // Every job still hot counts exactly the attempts that ran: 0 for those handed back unrun.
      const starts = await startsPerJob(current);
      const hot = await current.query<{ id: string; attempt_count: number | string }>(
        `SELECT id, attempt_count FROM ${current.table('hot')}`,
      );
      const wrong = hot.filter((r) => Number(r.attempt_count) !== (starts.get(r.id) ?? 0));
      expect(wrong).toEqual([]);
      return;
    }
  });

  it('a stalled owner runs none of the rows a rescue took from it while it stalled', async () => {
    for (let attempt = 1; ; attempt++) {
      const { db: current, worker } = await open('stall', 4);
      markers = mkdtempSync(join(tmpdir(), 'chokaq-start-ahead-'));
      const unblock = join(markers, 'unblock');
      // Fast jobs first (so the process starts ahead), then one that stalls its event loop, then
      // more fast ones: those started ahead of it wait while it stalls (jobs enter in claim order).
      const fast = Array.from({ length: 200 }, () => ({}));
      const ids = await enqueue(current, [...fast, { stallUntilFile: unblock }, ...fast]);
      const stall = ids[fast.length];
      await waitFor('the stalling run to start', async () =>
        (await startsPerJob(current)).has(stall),
      );
      // While it stalls, this process rescues every row the worker holds: each is a zombie now.
      await waitFor(
        'the stalled worker to be rescued',
        async () => {
          await current.storageHere.archiveZombies(ZOMBIE_MS);
          return (await rowsOf(current, worker.workerId, JobStatus.Processing)).length === 0;
        },
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      const ranBefore = await startsPerJob(current);
      const zombies = await current.query<{ id: string }>(
        `SELECT id FROM ${current.table('dlq')} WHERE failure_reason = 2`,
      );
      expect(zombies.map((z) => z.id)).toContain(stall);
      const unrun = zombies.map((z) => z.id).filter((id) => !ranBefore.has(id));
      // A run that began just before the stall may have its start record sent only once the
      // event loop is free again; its `at_ms` (taken when the run began) still says when it ran.
      const woke = Date.now();
      writeFileSync(unblock, '');
      if (unrun.length === 0 && attempt < TRIES) continue;
      expect(unrun.length).toBeGreaterThan(0);
      // Awake, it renews what waited too long, finds it gone and drops it.
      await waitFor(
        'the worker to drop what it lost',
        async () => (await worker.stats()).conflicts >= unrun.length,
      );
      const ranAfter = await startsSince(current, woke);
      expect(unrun.filter((id) => ranAfter.has(id))).toEqual([]);
      return;
    }
  });

  it('a cancel that reaches a row started ahead before a slot does moves it to the DLQ unrun', async () => {
    for (let attempt = 1; ; attempt++) {
      // Instant jobs on four slots: how many rows wait ahead follows the rate (two claim round
      // trips of work), and one slot on a loaded machine can enter less than half a job per round
      // trip, which keeps none ahead at all (a try saw none in 15 s so, in a fresh-clone CI run).
      const { db: current, worker } = await open('cancel', 4);
      const ids = await enqueue(
        current,
        Array.from({ length: 2_000 }, () => ({})),
      );
      const sawAhead = await waitFor(
        'rows started ahead',
        async () => (await worker.stats()).startedAhead > 0,
        { intervalMs: 5 },
      ).then(
        () => true,
        (error: Error) => error,
      );
      if (sawAhead !== true && attempt < TRIES) continue;
      expect(sawAhead).toBe(true);
      const finished = async () =>
        (await current.count('archive')) + (await current.count('dlq')) === ids.length;
      // Cancel what this worker has started, again and again while the drain lasts: each round
      // may reach rows that are still waiting ahead.
      const requested: string[] = [];
      for (let i = 0; i < 200 && !(await finished()); i++) {
        const started = await rowsOf(current, worker.workerId, JobStatus.Processing);
        const result = await current.storageHere.cancel(started.map((r) => r.id));
        requested.push(...result.cancelRequested);
      }
      // A liveness bound, not a speed target: 2,000 jobs under a loaded machine (the test run
      // starts its heaviest suites together) took longer than 30 s once, on one slot.
      await waitFor('every job finished', finished, { timeoutMs: 120_000 });
      const unrun = await current.query<{ id: string }>(
        `SELECT id FROM ${current.table('dlq')} WHERE error_details = ?`,
        [STORED_TEXT.cancelledBeforeRun],
      );
      if (unrun.length === 0 && attempt < TRIES) continue;
      expect(unrun.length).toBeGreaterThan(0);
      expect(await pillarViolations(current, ids)).toEqual([]);
      const starts = await startsPerJob(current);
      // Exactly one outcome each: moved unrun (no start), or started and then cancelled or done.
      expect(unrun.filter((r) => starts.has(r.id))).toEqual([]);
      expect([...starts.values()].filter((n) => n > 1)).toEqual([]);
      expect(requested.length).toBeGreaterThan(0);
      return;
    }
  }, 300_000);

  it('a poison pill that kills its process: each crash counts an attempt with RetryZombies, one crash sends it to the DLQ without', async () => {
    const { db: current, worker: first } = await open('poison', 4);
    await current.storageHere.updateQueue('faults', { retryZombies: true });
    const fillers = Array.from({ length: 50 }, () => ({}));
    const ids = await enqueue(current, [...fillers, { killProcess: true }, ...fillers]);
    const poison = ids[fillers.length];
    const crashAndRescue = async (worker: FaultWorker) => {
      await waitFor(
        'the worker to die',
        () => worker.child.exitCode !== null || worker.child.signalCode !== null,
      );
      await rescueAll(current);
    };
    const poisonRow = async () =>
      (
        await current.query<{ attempt_count: number | string; status: number | string }>(
          `SELECT attempt_count, status FROM ${current.table('hot')} WHERE id = ?`,
          [poison],
        )
      ).map((r) => ({ status: Number(r.status), attempt_count: Number(r.attempt_count) }))[0];
    await crashAndRescue(first);
    expect(await poisonRow()).toEqual({ status: JobStatus.Pending, attempt_count: 1 });
    await crashAndRescue(await startWorker(current, 'poison', 4));
    expect(await poisonRow()).toEqual({ status: JobStatus.Pending, attempt_count: 2 });
    expect((await startsPerJob(current)).get(poison)).toBe(2);
    // Without RetryZombies one crash is the end: the DLQ, as a Zombie, its third attempt counted.
    await current.storageHere.updateQueue('faults', { retryZombies: false });
    await crashAndRescue(await startWorker(current, 'poison', 4));
    expect(await poisonRow()).toBeUndefined();
    const [dead] = await current.query<{
      failure_reason: number | string;
      attempt_count: number | string;
    }>(`SELECT failure_reason, attempt_count FROM ${current.table('dlq')} WHERE id = ?`, [poison]);
    expect({ reason: Number(dead.failure_reason), attempts: Number(dead.attempt_count) }).toEqual({
      reason: 2,
      attempts: 3,
    });
    expect((await startsPerJob(current)).get(poison)).toBe(3);
  });

  it('one slot runs the jobs of one priority in the order they were enqueued', async () => {
    const { db: current } = await open('fifo', 1);
    const ids = await enqueue(
      current,
      Array.from({ length: 300 }, () => ({})),
    );
    await waitFor(
      'every job archived',
      async () => (await current.count('archive')) === ids.length,
      {
        timeoutMs: 30_000,
      },
    );
    const order = await current.runs<{ job_id: string }>(
      `SELECT job_id FROM ${current.record.runsTable} WHERE phase = 'start' ORDER BY at_ms, job_id`,
    );
    expect(order.map((r) => r.job_id)).toEqual(ids);
  });
});
