import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { pgAvailable } from '../support/env';
import { waitFor } from '../support/wait-for';
import {
  FaultDatabase,
  openFaultDatabase,
  pillarViolations,
  FaultWorker,
  killAllFaultWorkers,
  startFaultWorker,
} from './support/fault-processes';

/**
 * A stale run and its successor in one real worker process. The first run of a job blocks its
 * process's event loop, so its heartbeat stops; this test process rescues the job as a zombie (the
 * queue has `RetryZombies`, so it returns to Pending) and then unblocks it. The same worker claims
 * the job again under a new lease, and then the stale run succeeds: its completion is refused. The
 * new run must stay covered by the heartbeat: while it waits (cooperatively) this process keeps
 * rescuing zombies for several zombie timeouts and must find none, and the job ends in the Archive
 * after exactly two runs.
 *
 * The deterministic version, without processes or timing, is test/runtime/run-fencing.spec.ts.
 */
jest.setTimeout(60_000);

/** Heartbeat of the worker process: frequent, so the zombie timeout can be short. */
const HEARTBEAT_MS = 100;
/** Zombie timeout of both processes' rescue: 8 heartbeats, ample margin on a busy machine. */
const ZOMBIE_MS = 800;
/**
 * How long the second run is watched for being declared a zombie. A window is acceptable here
 * because it asserts an absence: several zombie timeouts of a run whose heartbeat was dropped.
 */
const WATCH_MS = 4 * ZOMBIE_MS;

const dialects: Array<'sqlite' | 'postgres'> = pgAvailable() ? ['sqlite', 'postgres'] : ['sqlite'];

afterAll(killAllFaultWorkers);

describe.each(dialects)('a stale run and its successor in one worker process [%s]', (dialect) => {
  let db: FaultDatabase | undefined;
  let worker: FaultWorker | undefined;
  let markers: string | undefined;

  afterEach(async () => {
    // Release whatever still waits on a marker, so a failed test's worker stops at once.
    if (markers) {
      for (const marker of ['unblock', 'stale-done', 'finish'])
        writeFileSync(join(markers, marker), '');
    }
    await worker?.stop(10_000);
    await db?.close();
    if (markers) rmSync(markers, { recursive: true, force: true });
    db = worker = markers = undefined;
  });

  it("finishing the stale run keeps the new run's heartbeat: no second rescue, two runs, archived", async () => {
    const current = (db = await openFaultDatabase(dialect));
    markers = mkdtempSync(join(tmpdir(), 'chokaq-stale-run-'));
    const unblock = join(markers, 'unblock');
    const staleDone = join(markers, 'stale-done');
    const finish = join(markers, 'finish');
    await current.storageHere.updateQueue('faults', { retryZombies: true });
    const started = (worker = await startFaultWorker({
      ...current.record,
      workerId: `stale-${dialect}`,
      recordOutcomes: true,
      options: {
        storage: current.options,
        // Two slots: the re-claim need not wait for the stale run's slot, and a third run (the
        // symptom of a dropped heartbeat) could start while the second one still waits.
        worker: { concurrency: 2, pollIntervalMs: 20 },
        heartbeat: { intervalMs: HEARTBEAT_MS },
        rescue: { intervalMs: 100, fetchedJobTimeoutMs: 60_000, zombieTimeoutMs: ZOMBIE_MS },
      },
    }));

    const { id } = await current.storageHere.enqueue({
      queue: 'faults',
      payload: { stallUntilFile: unblock, afterStallAwaitFile: staleDone, awaitFile: finish },
    });
    const runs = async (phase: string) =>
      current.runs<{ lease_id: string; detail: string | null }>(
        `SELECT lease_id, detail FROM ${current.record.runsTable} WHERE job_id = ? AND phase = ? ` +
          `ORDER BY at_ms`,
        [id, phase],
      );
    const hotRow = async () =>
      (
        await current.query<{ status: number | string; lease_id: string | null }>(
          `SELECT status, lease_id FROM ${current.table('hot')} WHERE id = ?`,
          [id],
        )
      )[0];

    const [first] = await waitFor('the first run to start', async () => {
      const rows = await runs('start');
      return rows.length > 0 ? rows : undefined;
    });

    // The worker's event loop is blocked: only this process can rescue the job, once its heartbeat
    // is older than the zombie timeout by the database clock.
    const rescued: string[] = [];
    await waitFor(
      'the stalled run to be rescued as a zombie',
      async () => {
        const result = await current.storageHere.archiveZombies(ZOMBIE_MS);
        rescued.push(...result.dlq);
        return result.retried.includes(id);
      },
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    expect(rescued).toEqual([]);
    expect(Number((await hotRow()).status)).toBe(JobStatus.Pending);

    writeFileSync(unblock, '');
    const second = await waitFor('the same worker to run the job again', async () =>
      (await runs('start')).find((r) => r.lease_id !== first.lease_id),
    );
    // Only now does the stale run return its success: the order in which finishing it used to drop
    // the new run's lease (whether a re-claim beats the stale completion is otherwise luck).
    writeFileSync(staleDone, '');
    // Its completion is refused, as the row carries the new lease.
    await waitFor('the stale completion to be refused', async () =>
      (await runs('outcome')).some(
        (o) => o.lease_id === first.lease_id && o.detail === 'succeeded:0',
      ),
    );

    // Rescue for several zombie timeouts: the new run's heartbeat must keep it alive throughout.
    const watchUntil = Date.now() + WATCH_MS;
    while (Date.now() < watchUntil && rescued.length === 0) {
      const result = await current.storageHere.archiveZombies(ZOMBIE_MS);
      rescued.push(...result.dlq, ...result.retried);
      await new Promise((r) => setTimeout(r, 50)); // pacing of the rescue, not a synchronisation
    }
    expect({ rescuedAgain: rescued }).toEqual({ rescuedAgain: [] });
    const row = await hotRow();
    expect({ status: Number(row.status), lease: row.lease_id }).toEqual({
      status: JobStatus.Processing,
      lease: second.lease_id,
    });

    writeFileSync(finish, '');
    await waitFor(
      'the job to be archived',
      async () => (await current.count('archive', `id = '${id}'`)) === 1,
    );
    // The worker records its outcomes asynchronously, after the archive is committed.
    await waitFor('the archive to be reported', async () =>
      (await runs('outcome')).some((o) => o.lease_id === second.lease_id),
    );
    expect((await runs('start')).map((r) => r.lease_id)).toEqual([first.lease_id, second.lease_id]);
    expect((await runs('outcome')).map((o) => ({ lease: o.lease_id, outcome: o.detail }))).toEqual([
      { lease: first.lease_id, outcome: 'succeeded:0' },
      { lease: second.lease_id, outcome: 'succeeded:1' },
    ]);
    expect(await current.count('dlq')).toBe(0);
    expect(await pillarViolations(current, [id])).toEqual([]);
    expect((await started.stats()).conflicts).toBeGreaterThanOrEqual(1);
  });
});
