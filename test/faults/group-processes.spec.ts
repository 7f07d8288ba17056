import { NewJob } from '../../libs/chokaq/src/interfaces/job.interface';
import { pgAvailable } from '../support/env';
import { waitFor } from '../support/wait-for';
import {
  FaultDatabase,
  FaultWorker,
  killAllFaultWorkers,
  openFaultDatabase,
  startFaultWorker,
} from './support/fault-processes';

/**
 * Group concurrency across real processes (issue 30, part 2): three worker processes with four
 * slots each drain one queue whose groups may run at most two jobs at once. The runs each process
 * records (start before the handler's work, ok after it) must never show a third run of a group
 * overlapping two others, although the workers have slots to spare; and the groups must run side
 * by side (the limit is per group, not per queue). The claim decides it in SQL, under the queue's
 * row lock, so no process memory is involved.
 */
jest.setTimeout(90_000);

const dialects: Array<'sqlite' | 'postgres'> = pgAvailable() ? ['sqlite', 'postgres'] : ['sqlite'];
const GROUPS = ['tenant-a', 'tenant-b', 'tenant-c'];
const PER_GROUP = 12;
const LIMIT = 2;

afterAll(killAllFaultWorkers);

describe.each(dialects)('group concurrency across processes [%s]', (dialect) => {
  let db: FaultDatabase | undefined;
  const workers: FaultWorker[] = [];

  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop(10_000)));
    workers.length = 0;
    await db?.close();
    db = undefined;
  });

  it(`at most ${LIMIT} runs of a group at any instant, while groups run side by side`, async () => {
    const current = (db = await openFaultDatabase(dialect));
    await current.storageHere.updateQueue('faults', { groupConcurrency: LIMIT });
    const jobs: NewJob[] = [];
    for (let i = 0; i < PER_GROUP; i++) {
      for (const group of GROUPS) jobs.push({ queue: 'faults', group, payload: { sleepMs: 60 } });
    }
    const ids = (await current.storageHere.enqueueMany(jobs)).map((r) => r.id);
    const groupOf = new Map(ids.map((id, i) => [id, jobs[i].group!]));

    for (let i = 0; i < 3; i++) {
      workers.push(
        await startFaultWorker({
          ...current.record,
          workerId: `group-${dialect}-${i}`,
          options: {
            storage: current.options,
            worker: { concurrency: 4, pollIntervalMs: 20 },
          },
        }),
      );
    }

    await waitFor(
      'every job to finish',
      async () => (await current.storageHere.getSummary()).succeededTotal >= ids.length,
      { timeoutMs: 60_000, intervalMs: 100 },
    );

    const runs = await current.runs<{ job_id: string; phase: string; at_ms: string | number }>(
      `SELECT job_id, phase, at_ms FROM ${current.record.runsTable} WHERE phase IN ('start', 'ok')`,
    );
    // Sweep the runs' starts and ends in time order (an end before a start at the same instant).
    const events = runs
      .map((r) => ({
        group: groupOf.get(r.job_id)!,
        at: Number(r.at_ms),
        delta: r.phase === 'start' ? 1 : -1,
      }))
      .sort((a, b) => a.at - b.at || a.delta - b.delta);
    const running = new Map<string, number>();
    let mostOfOneGroup = 0;
    let mostAtOnce = 0;
    let total = 0;
    for (const e of events) {
      running.set(e.group, (running.get(e.group) ?? 0) + e.delta);
      total += e.delta;
      mostOfOneGroup = Math.max(mostOfOneGroup, running.get(e.group)!);
      mostAtOnce = Math.max(mostAtOnce, total);
    }
    expect(runs.filter((r) => r.phase === 'ok')).toHaveLength(ids.length);
    expect(mostOfOneGroup).toBe(LIMIT);
    // The limit is per group: more than one group's runs overlapped.
    expect(mostAtOnce).toBeGreaterThan(LIMIT);
  });
});
