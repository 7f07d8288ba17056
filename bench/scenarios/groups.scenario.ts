import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { NewJob } from '../../libs/chokaq/src/interfaces/job.interface';
import type { StorageOptions } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { benchSchemaName, dropSchema } from '../lib/pg-admin';
import { percentile } from '../lib/stats';
import { timedClaim } from '../lib/timed-claim';

type Log = (message: string) => void;

/** Rows each claim starts: a worker with 50 free slots. */
export const GROUPS_CLAIM = 50;
/** Groups of the grouped queue (issue 30: "the claim's cost with 10,000 groups"). */
export const GROUPS_COUNT = 10_000;
/** Pending rows per group. */
const PER_GROUP = 3;
/** Timed claims per queue (after {@link WARMUP} unmeasured ones). */
const CLAIMS = 200;
const WARMUP = 20;

/** The three queues whose claims are compared. */
const SHAPES = ['plain', 'budgeted', 'grouped'] as const;
type Shape = (typeof SHAPES)[number];

/** One dialect's figures: per shape, the claim's p50 and p95 in ms and the rows per claim. */
export interface GroupsRun {
  dialect: 'postgres' | 'sqlite';
  claims: Record<Shape, { p50: number; p95: number; rows: number }>;
  load: [number, number];
}

/**
 * The `groups` scenario (issue 30, part 2): what a claim costs in a queue with 10,000 groups
 * against one without groups. Three queues get the same 30,000 Pending rows: `plain` (no limits:
 * the one-statement claim), `budgeted` (a `maxWorkers` budget: the claim's transaction with the
 * queue's row lock) and `grouped` (10,000 groups of 3, a group concurrency no group reaches, so
 * every claim walks 50 groups; on PostgreSQL one statement that takes the row lock itself, after
 * the first claim). Each claim starts 50 rows and is
 * timed alone; its rows are archived between claims (not timed). The queues take turns, claim by
 * claim, so drift in the machine's load falls on all three alike. On PostgreSQL the hot table is
 * vacuumed every 10 rounds (untimed), as autovacuum keeps up in a steady drain.
 */
export async function runGroups(
  dialect: 'postgres' | 'sqlite',
  benchUrl: string,
  log: Log,
): Promise<GroupsRun> {
  const schema = benchSchemaName('groups');
  const dir = dialect === 'sqlite' ? mkdtempSync(join(tmpdir(), 'chokaq-bench-groups-')) : '';
  const options: StorageOptions =
    dialect === 'postgres'
      ? { type: 'postgres', url: benchUrl, schema }
      : { type: 'sqlite', database: join(dir, 'groups.db') };
  let storage: JobStorage | undefined;
  try {
    storage = await createJobStorage(options);
    const queues: Record<Shape, string> = {
      plain: 'bench.plain',
      budgeted: 'bench.budgeted',
      grouped: 'bench.grouped',
    };
    await storage.updateQueue(queues.budgeted, { maxWorkers: 1_000_000 });
    await storage.updateQueue(queues.grouped, { groupConcurrency: 1_000 });
    log(
      `groups [${dialect}]: seeding ${(GROUPS_COUNT * PER_GROUP * 3).toLocaleString('en-US')} rows`,
    );
    for (const shape of SHAPES) {
      const jobs: NewJob[] = [];
      for (let i = 0; i < PER_GROUP; i++) {
        for (let g = 0; g < GROUPS_COUNT; g++) {
          jobs.push({
            queue: queues[shape],
            payload: { g },
            ...(shape === 'grouped' ? { group: `tenant-${String(g).padStart(5, '0')}` } : {}),
          });
        }
      }
      for (let i = 0; i < jobs.length; i += 1_000)
        await storage.enqueueMany(jobs.slice(i, i + 1_000));
    }
    const budgetedQueues = [queues.budgeted, queues.grouped];
    const samples: Record<Shape, number[]> = { plain: [], budgeted: [], grouped: [] };
    const rows: Record<Shape, number> = { plain: 0, budgeted: 0, grouped: 0 };
    const workerId = `bench-groups:${process.pid}`;
    const load0 = loadavg()[0];
    for (let i = 0; i < WARMUP + CLAIMS; i++) {
      // PostgreSQL: vacuum the hot table every 10 rounds (not timed), as autovacuum does in a
      // steady drain; otherwise the dead index entries every claim leaves at the head of the
      // queue's index pile up and the plain claim, which always starts there, pays for them.
      if (dialect === 'postgres' && i % 10 === 0) await vacuumHot(benchUrl, schema);
      for (const shape of SHAPES) {
        const claim = await timedClaim(
          storage,
          workerId,
          GROUPS_CLAIM,
          { queues: [queues[shape]], types: [] },
          budgetedQueues,
        );
        if (i >= WARMUP) {
          samples[shape].push(claim.ms);
          rows[shape] += claim.rows;
        }
      }
    }
    const load1 = loadavg()[0];
    const claims = Object.fromEntries(
      SHAPES.map((shape) => {
        const sorted = [...samples[shape]].sort((a, b) => a - b);
        return [
          shape,
          { p50: percentile(sorted, 50), p95: percentile(sorted, 95), rows: rows[shape] / CLAIMS },
        ];
      }),
    ) as GroupsRun['claims'];
    return { dialect, claims, load: [load0, load1] };
  } finally {
    await storage?.close();
    if (dialect === 'postgres') await dropSchema(benchUrl, schema);
    else rmSync(dir, { recursive: true, force: true });
  }
}

/** `VACUUM` of the run's hot table (PostgreSQL). */
async function vacuumHot(url: string, schema: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`VACUUM ${schema}.jobs_hot`);
  } finally {
    await client.end();
  }
}

/** The scenario's table: per dialect and queue, the claim's p50/p95 and its ratio to the plain and budgeted queues. */
export function groupsTable(runs: readonly GroupsRun[]): string {
  const lines = [
    '| dialect | queue | rows per claim | claim p50 (ms) | claim p95 (ms) | p50 ÷ plain | p50 ÷ budgeted |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  for (const run of runs) {
    for (const shape of SHAPES) {
      const c = run.claims[shape];
      lines.push(
        `| ${run.dialect} | ${shape} | ${c.rows.toFixed(0)} | ${c.p50.toFixed(2)} | ${c.p95.toFixed(2)} | ` +
          `${(c.p50 / run.claims.plain.p50).toFixed(2)}× | ${(c.p50 / run.claims.budgeted.p50).toFixed(2)}× |`,
      );
    }
  }
  return lines.join('\n');
}
