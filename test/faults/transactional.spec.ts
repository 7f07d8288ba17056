import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChokaQModuleOptions } from '../../libs/chokaq/src';
import { describePostgres } from '../support/test-database';
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
 * Exactly-once database effects of transactional handlers (`@JobHandler(…, { transactional: true
 * })`), with real worker processes on PostgreSQL. The handler of queue `txn`
 * (fixtures/fault-worker.ts) inserts an effect row `(job_id, lease_id, attempt)` and adds 1 to a
 * counter in its run's transaction; a run that dies, throws or lost its lease must leave neither,
 * and the run that archives the job must leave both, once.
 */
jest.setTimeout(90_000);

const HEARTBEAT_MS = 100;
/** Zombie timeout of the workers' rescue: 8 heartbeats, ample margin on a busy machine. */
const ZOMBIE_MS = 800;

afterAll(killAllFaultWorkers);

describePostgres('transactional handlers in worker processes [postgres]', () => {
  let db: FaultDatabase | undefined;
  let markers: string | undefined;
  const workers: FaultWorker[] = [];
  let effects = '';
  let counters = '';

  beforeEach(async () => {
    db = await openFaultDatabase('postgres');
    markers = mkdtempSync(join(tmpdir(), 'chokaq-txn-'));
    effects = `"${db.schema}".txn_effects`;
    counters = `"${db.schema}".txn_counters`;
    await db.sql(`CREATE TABLE ${effects} (job_id text NOT NULL, lease_id text, attempt int)`);
    await db.sql(`CREATE TABLE ${counters} (id int PRIMARY KEY, n int NOT NULL)`);
    await db.sql(`INSERT INTO ${counters} (id, n) VALUES (1, 0)`);
  });

  afterEach(async () => {
    // Release whatever still waits on a marker, so a failed test's worker stops at once.
    if (markers) {
      for (const marker of ['go', 'unblock', 'stale-done'])
        writeFileSync(join(markers, marker), '');
    }
    await Promise.all(workers.splice(0).map((w) => w.stop(10_000)));
    await db?.close();
    if (markers) rmSync(markers, { recursive: true, force: true });
    db = markers = undefined;
  });

  async function start(
    name: string,
    overrides: Partial<ChokaQModuleOptions> = {},
  ): Promise<FaultWorker> {
    const worker = await startFaultWorker({
      ...db!.record,
      workerId: name,
      recordOutcomes: true,
      transactional: { effectsTable: effects, countersTable: counters },
      options: {
        storage: db!.options,
        worker: { concurrency: 2, pollIntervalMs: 20 },
        heartbeat: { intervalMs: HEARTBEAT_MS },
        rescue: { intervalMs: 100, fetchedJobTimeoutMs: 60_000, zombieTimeoutMs: ZOMBIE_MS },
        retry: { baseDelayMs: 10, jitterMs: 0 },
        ...overrides,
      },
    });
    workers.push(worker);
    return worker;
  }

  const effectRows = (id?: string) =>
    db!.sql<{ job_id: string; lease_id: string; attempt: number }>(
      `SELECT job_id, lease_id, attempt FROM ${effects}${id ? ' WHERE job_id = $1' : ''}`,
      id ? [id] : [],
    );
  const counter = async () =>
    Number((await db!.sql<{ n: number }>(`SELECT n FROM ${counters} WHERE id = 1`))[0].n);
  const recorded = (id: string, phase: string) =>
    db!.runs<{ lease_id: string; detail: string | null }>(
      `SELECT lease_id, detail FROM ${db!.record.runsTable} WHERE job_id = $1 AND phase = $2 ` +
        `ORDER BY at_ms`,
      [id, phase],
    );
  const archived = async (id: string) => (await db!.count('archive', 'id = ?', [id])) === 1;

  it('SIGKILL during the handler leaves none of its rows; the rerun commits them once', async () => {
    await db!.storageHere.updateQueue('txn', { retryZombies: true });
    const go = join(markers!, 'go');
    const first = await start('txn-killed');
    const { id } = await db!.storageHere.enqueue({ queue: 'txn', payload: { awaitFile: go } });
    const [written] = await waitFor('the handler to write in its transaction', async () => {
      const rows = await recorded(id, 'written');
      return rows.length > 0 ? rows : undefined;
    });
    // Written but not committed: invisible to others, and gone with the process.
    expect(await effectRows(id)).toEqual([]);
    await first.kill();
    expect(await effectRows(id)).toEqual([]);
    expect(await counter()).toBe(0);

    writeFileSync(go, '');
    await start('txn-rescuer');
    await waitFor('the rescued job to run again and be archived', () => archived(id), {
      timeoutMs: 30_000,
    });
    const rows = await effectRows(id);
    expect(rows).toHaveLength(1);
    expect(rows[0].lease_id).not.toBe(written.lease_id);
    expect(await counter()).toBe(1);
  });

  it('a stale run (zombie, resurrected, run again) commits nothing; the new run commits', async () => {
    const unblock = join(markers!, 'unblock');
    const staleDone = join(markers!, 'stale-done');
    const worker = await start('txn-stale');
    const { id } = await db!.storageHere.enqueue({
      queue: 'txn',
      payload: { stallUntilFile: unblock, afterStallAwaitFile: staleDone },
    });
    const [stale] = await waitFor('the first run to write and stall', async () => {
      const rows = await recorded(id, 'start');
      return rows.length > 0 ? rows : undefined;
    });
    // Its process is blocked: this process declares the run a zombie (DLQ) and resurrects it.
    await waitFor(
      'the stalled run to be dead-lettered as a zombie',
      async () => (await db!.storageHere.archiveZombies(ZOMBIE_MS)).dlq.includes(id),
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    expect(await db!.storageHere.resurrect(id)).toBe(1);

    writeFileSync(unblock, '');
    await waitFor('the new run to commit', () => archived(id), { timeoutMs: 20_000 });
    const fresh = (await effectRows(id)).map((r) => r.lease_id);
    expect(fresh).toHaveLength(1);
    expect(fresh[0]).not.toBe(stale.lease_id);

    // Only now does the stale run return: its archive finds the row gone, and it rolls back.
    writeFileSync(staleDone, '');
    await waitFor('the stale run to be refused', async () =>
      (await recorded(id, 'outcome')).some(
        (o) => o.lease_id === stale.lease_id && o.detail === 'succeeded:0',
      ),
    );
    expect((await effectRows(id)).map((r) => r.lease_id)).toEqual(fresh);
    expect(await counter()).toBe(1);
    expect((await worker.stats()).conflicts).toBeGreaterThanOrEqual(1);
  });

  it('a throw after a write leaves no write, and the retry commits once', async () => {
    await start('txn-throws');
    const { id } = await db!.storageHere.enqueue({ queue: 'txn', payload: { failAttempts: 1 } });
    await waitFor('the retry to commit', () => archived(id), { timeoutMs: 20_000 });
    expect((await recorded(id, 'written')).length).toBe(2);
    expect(await effectRows(id)).toEqual([
      { job_id: id, lease_id: expect.any(String), attempt: 2 },
    ]);
    expect(await counter()).toBe(1);
  });

  it('1,000 jobs each adding 1 to a counter end at exactly 1,000 across SIGKILLs', async () => {
    await db!.storageHere.updateQueue('txn', { retryZombies: true });
    // A small prefetch and a short Fetched timeout: the rows a killed worker had claimed but not
    // started are back within 2 s, not the 60 s of the other tests.
    const options: Partial<ChokaQModuleOptions> = {
      worker: { concurrency: 8, prefetch: 16, batchSize: 8, pollIntervalMs: 20 },
      rescue: { intervalMs: 100, fetchedJobTimeoutMs: 2_000, zombieTimeoutMs: ZOMBIE_MS },
    };
    const [a, b] = await Promise.all([start('txn-a', options), start('txn-b', options)]);
    const accepted = (
      await db!.storageHere.enqueueMany(
        Array.from({ length: 1_000 }, () => ({ queue: 'txn', payload: { sleepMs: 5 } })),
      )
    ).map((r) => r.id);
    const done = () => db!.count('archive');
    // Kill a worker mid-flight three times (each time with runs open), restarting it each time.
    let victim = a;
    for (const [i, threshold] of [250, 500, 750].entries()) {
      await waitFor(`${threshold} jobs archived`, async () => (await done()) >= threshold, {
        timeoutMs: 30_000,
      });
      await victim.kill();
      workers.splice(workers.indexOf(victim), 1);
      victim = await start(`txn-restarted-${i}`, options);
    }
    void b;
    await waitFor('every job archived', async () => (await done()) === 1_000, {
      timeoutMs: 60_000,
    });
    expect(await pillarViolations(db!, accepted)).toEqual([]);
    const [row] = await db!.sql<{ rows: number; jobs: number }>(
      `SELECT count(*)::int AS rows, count(DISTINCT job_id)::int AS jobs FROM ${effects}`,
    );
    expect(row).toEqual({ rows: 1_000, jobs: 1_000 });
    expect(await counter()).toBe(1_000);
    // The kills did land mid-run: some runs wrote in their transaction and never committed.
    const [written] = await db!.runs<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${db!.record.runsTable} WHERE phase = 'written'`,
    );
    expect(written.n).toBeGreaterThan(1_000);
  });
});
