import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { compileWorkers } from '../lib/worker-process';

const REPO_ROOT = join(__dirname, '..', '..');
/** The compiled bench tree (`compileWorkers`), where the ChokaQ worker's modules are. */
const COMPILED = join(REPO_ROOT, '.tmp', 'bench-worker');

/** Runs per row; the row is their median. */
const RUNS = 5;

/** One row: what a fresh process requires, and what it then holds. */
export interface FootprintRow {
  what: string;
  /** Median RSS after the requires and a full garbage collection, MB. */
  rssMb: number;
  /** Modules in `require.cache` (files of the packages and of ChokaQ). */
  modules: number;
}

/**
 * Node ≥ 21 defines `navigator`; Node 20 does not, and then pg's runtime check (`isCloudflareRuntime`
 * in pg/lib/stream.js, run when pg is required) reads the global `Response`, which makes Node 20
 * load its fetch implementation (undici). The rows marked "as on Node ≥ 21" define `navigator` as
 * Node 21 does before requiring, to show what that check costs on the Node this bench runs.
 */
const AS_ON_NODE_21 = "globalThis.navigator ??= { userAgent: 'Node.js' };";

/** What a ChokaQ worker on PostgreSQL requires: the bench's runner and the dialect it loads. */
const CHOKAQ_WORKER = [
  join(COMPILED, 'bench', 'worker', 'chokaq-runner.js'),
  join(COMPILED, 'libs', 'chokaq', 'src', 'storage', 'postgres', 'index.js'),
];

/**
 * The `footprint` scenario (issue 26, part 3): the memory a worker process holds once it has
 * required its modules, before it connects or runs a job, against bare Node and `pg` alone. Each
 * row is a fresh `node` process that requires the modules, collects garbage and reports its RSS.
 */
export function runFootprint(log: (message: string) => void): FootprintRow[] {
  compileWorkers();
  const rows: Array<[string, string, readonly string[]]> = [
    ['bare Node', '', []],
    ["require('pg')", '', ['pg']],
    ["require('pg'), as on Node ≥ 21", AS_ON_NODE_21, ['pg']],
    ['ChokaQ worker (PostgreSQL)', '', CHOKAQ_WORKER],
    ['ChokaQ worker (PostgreSQL), as on Node ≥ 21', AS_ON_NODE_21, CHOKAQ_WORKER],
  ];
  return rows.map(([what, prelude, modules]) => {
    const samples = Array.from({ length: RUNS }, () => measure(prelude, modules));
    const rss = samples.map((s) => s.rssMb).sort((a, b) => a - b);
    const row = { what, rssMb: rss[Math.floor(RUNS / 2)], modules: samples[0].modules };
    log(`footprint: ${what}: ${row.rssMb.toFixed(1)} MB, ${row.modules} modules`);
    return row;
  });
}

function measure(prelude: string, modules: readonly string[]): Omit<FootprintRow, 'what'> {
  const script = `
    ${prelude}
    for (const m of ${JSON.stringify(modules)}) require(m);
    global.gc();
    setTimeout(() => {
      global.gc();
      process.stdout.write(JSON.stringify({
        rssMb: process.memoryUsage().rss / 1048576,
        modules: Object.keys(require.cache).length,
      }));
    }, 100);
  `;
  const out = execFileSync(process.execPath, ['--expose-gc', '-e', script], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  return JSON.parse(out) as Omit<FootprintRow, 'what'>;
}

/** The scenario's table. */
export function footprintTable(rows: readonly FootprintRow[]): string {
  const bare = rows[0].rssMb;
  return [
    '| process requires | RSS (MB) | over bare Node (MB) | modules |',
    '|---|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.what} | ${r.rssMb.toFixed(1)} | ${(r.rssMb - bare).toFixed(1)} | ${r.modules} |`,
    ),
  ].join('\n');
}
