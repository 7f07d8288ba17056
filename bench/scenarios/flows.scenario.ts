import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { NewJob } from '../../libs/chokaq/src/interfaces/job.interface';
import type { StorageOptions } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { benchSchemaName, dropSchema } from '../lib/pg-admin';
import { percentile } from '../lib/stats';
import { timedClaim } from '../lib/timed-claim';

type Log = (message: string) => void;

/** Children per fan-in queue, and jobs of the 3-level flow (issue 29: "a fan-in of 10,000"). */
export const FLOW_JOBS = 10_000;
/** Rows each claim starts and each archive moves. */
const CLAIM = 50;

/** The fan-in shapes whose children's archive is compared. */
const FAN_INS = [
  { name: 'plain', width: 0 },
  { name: 'fan-in 10', width: 10 },
  { name: `fan-in ${FLOW_JOBS.toLocaleString('en-US')}`, width: FLOW_JOBS },
] as const;

/** One dialect's figures. */
export interface FlowsRun {
  dialect: 'postgres' | 'sqlite';
  /** Per shape: the archive of 50 children, p50 and p95 in ms. */
  archive: { name: string; p50: number; p95: number }[];
  /** The 3-level flow and a plain set of as many jobs: enqueue and drain, in ms. */
  drains: { name: string; enqueueMs: number; drainMs: number }[];
  load: [number, number];
}

/**
 * The `flows` scenario (issue 29, part 3), at the storage's edge in one process (no worker, so it
 * measures the statements, not the scheduling):
 *
 * 1. What a child's move costs with its parent waiting on it: three queues of 10,000 children
 *    each, none waited on (`plain`), 1,000 parents waiting on 10 each, and one parent waiting on
 *    all 10,000. Claims of 50 (started at once) take turns across the queues; each batch's archive
 *    is timed. The bound: a fan-in of 10,000 within 10 % of a fan-in of 10 (no count over the
 *    children at each move).
 * 2. A 3-level flow of 10,000 jobs (9,900 leaves, 99 joins of 100 leaves each, one root over the
 *    99 joins) enqueued in one call and drained by claims of 50 with their archives, against
 *    10,000 plain jobs drained the same way.
 */
export async function runFlows(
  dialect: 'postgres' | 'sqlite',
  benchUrl: string,
  log: Log,
): Promise<FlowsRun> {
  const schema = benchSchemaName('flows');
  const dir = dialect === 'sqlite' ? mkdtempSync(join(tmpdir(), 'chokaq-bench-flows-')) : '';
  const options: StorageOptions =
    dialect === 'postgres'
      ? { type: 'postgres', url: benchUrl, schema }
      : { type: 'sqlite', database: join(dir, 'flows.db') };
  let storage: JobStorage | undefined;
  try {
    storage = await createJobStorage(options);
    const load0 = loadavg()[0];
    const archive = await fanIns(storage, log, dialect);
    const drains = [
      await drainOf(storage, 'plain', 'bench.flat', plainJobs('bench.flat')),
      await drainOf(storage, '3-level flow', 'bench.flow', flowJobs('bench.flow')),
    ];
    return { dialect, archive, drains, load: [load0, loadavg()[0]] };
  } finally {
    await storage?.close();
    if (dialect === 'postgres') await dropSchema(benchUrl, schema);
    else rmSync(dir, { recursive: true, force: true });
  }
}

async function fanIns(
  storage: JobStorage,
  log: Log,
  dialect: string,
): Promise<FlowsRun['archive']> {
  log(`flows [${dialect}]: seeding ${FAN_INS.length} × ${FLOW_JOBS} children and their parents`);
  for (const [i, shape] of FAN_INS.entries()) {
    const children = Array.from({ length: FLOW_JOBS }, () => randomUUID());
    for (let at = 0; at < children.length; at += 1_000) {
      await storage.enqueueMany(
        children.slice(at, at + 1_000).map((id) => ({ id, queue: `bench.children.${i}` })),
      );
    }
    if (shape.width === 0) continue;
    const parents: NewJob[] = [];
    for (let at = 0; at < children.length; at += shape.width) {
      parents.push({ queue: 'bench.parents', dependsOn: children.slice(at, at + shape.width) });
    }
    for (let at = 0; at < parents.length; at += 100)
      await storage.enqueueMany(parents.slice(at, at + 100));
  }
  const samples = FAN_INS.map(() => [] as number[]);
  const workerId = `bench-flows:${process.pid}`;
  for (let round = 0; round < FLOW_JOBS / CLAIM; round++) {
    for (const [i] of FAN_INS.entries()) {
      const claim = await timedClaim(
        storage,
        workerId,
        CLAIM,
        { queues: [`bench.children.${i}`], types: [] },
        [],
      );
      if (round >= 10) samples[i].push(claim.archiveMs);
    }
  }
  return FAN_INS.map((shape, i) => {
    const sorted = samples[i].sort((a, b) => a - b);
    return { name: shape.name, p50: percentile(sorted, 50), p95: percentile(sorted, 95) };
  });
}

function plainJobs(queue: string): NewJob[] {
  return Array.from({ length: FLOW_JOBS }, () => ({ queue }));
}

/** 9,900 leaves, 99 joins of 100 leaves each, one root over the joins: 10,000 jobs. */
function flowJobs(queue: string): NewJob[] {
  const leaves = Array.from({ length: 9_900 }, () => randomUUID());
  const joins = Array.from({ length: 99 }, () => randomUUID());
  return [
    ...leaves.map((id) => ({ id, queue, type: 'leaf' })),
    ...joins.map((id, j) => ({
      id,
      queue,
      type: 'join',
      dependsOn: leaves.slice(j * 100, (j + 1) * 100),
    })),
    { queue, type: 'root', dependsOn: joins },
  ];
}

/** Enqueues `jobs` in one call, then claims and archives 50 at a time until none is left. */
async function drainOf(
  storage: JobStorage,
  name: string,
  queue: string,
  jobs: NewJob[],
): Promise<FlowsRun['drains'][number]> {
  const enqueued = performance.now();
  await storage.enqueueMany(jobs);
  const started = performance.now();
  let done = 0;
  const workerId = `bench-flows:${process.pid}`;
  while (done < jobs.length) {
    const claim = await timedClaim(storage, workerId, CLAIM, { queues: [queue], types: [] }, []);
    if (claim.rows === 0) throw new Error(`${name}: nothing to claim after ${done} jobs`);
    done += claim.rows;
  }
  return { name, enqueueMs: started - enqueued, drainMs: performance.now() - started };
}

/** The scenario's tables. */
export function flowsTable(runs: readonly FlowsRun[]): string {
  const lines = [
    '| dialect | children | archive of 50, p50 (ms) | p95 (ms) | p50 ÷ plain | p50 ÷ fan-in 10 |',
    '|---|---|---:|---:|---:|---:|',
  ];
  for (const run of runs) {
    const [plain, ten] = run.archive;
    for (const a of run.archive) {
      lines.push(
        `| ${run.dialect} | ${a.name} | ${a.p50.toFixed(2)} | ${a.p95.toFixed(2)} | ` +
          `${(a.p50 / plain.p50).toFixed(2)}× | ${(a.p50 / ten.p50).toFixed(2)}× |`,
      );
    }
  }
  lines.push(
    '',
    `| dialect | ${FLOW_JOBS.toLocaleString('en-US')} jobs | enqueue (ms) | drain (ms) | jobs/s | drain ÷ plain |`,
    '|---|---|---:|---:|---:|---:|',
  );
  for (const run of runs) {
    const plain = run.drains[0];
    for (const d of run.drains) {
      lines.push(
        `| ${run.dialect} | ${d.name} | ${d.enqueueMs.toFixed(0)} | ${d.drainMs.toFixed(0)} | ` +
          `${((FLOW_JOBS / d.drainMs) * 1000).toFixed(0)} | ${(d.drainMs / plain.drainMs).toFixed(2)}× |`,
      );
    }
  }
  return lines.join('\n');
}
