/**
 * What the drain's two statements cost PostgreSQL per row, and what leaner forms of them would
 * cost: the decomposition behind "Issue 26: what the remaining gap is made of" in RESULTS.md.
 *
 *   node -r @swc-node/register bench/statement-cost.ts [--pg-url URL] [--jobs N] [--rounds N]
 *
 * One connection, one fresh schema (migrated by the library) per round: `--jobs` Pending jobs,
 * then claims of 128 rows (50 of them started, the rest started ahead) each followed by the
 * archive of what it claimed, until the queue is empty. Each comparison alternates the statement
 * as shipped (A) with one variant (B) claim by claim on the same backend, so both see the same
 * table, and reads the backend's CPU time (`/proc/<pid>/schedstat`) around every statement: run it
 * on the machine that runs PostgreSQL. The shipped texts are the golden files of
 * test/golden/postgres (which pin, byte for byte, what the store sends); the variants are built
 * from them, and the script stops if a golden no longer has the part a variant removes.
 *
 * Variants are measurements, not features: they drop what ChokaQ records or returns per job.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { createJobStorage } from '../libs/chokaq/src/storage/create-storage';
import { pgUrlOf } from './lib/args';
import { benchSchemaName, dropSchema, ensureBenchDatabase } from './lib/pg-admin';
import { scheduledCpuMs } from './lib/proc-cpu';
import { quietLogger } from './lib/quiet-logger';
import { summarize } from './lib/stats';

const GOLDEN = join(__dirname, '..', 'test', 'golden', 'postgres');
const CLAIM_ROWS = 128;
const STARTED = 50;

function golden(name: string): string {
  return readFileSync(join(GOLDEN, `${name}.sql`), 'utf8')
    .replace(/^-- \[1\/1\] query\n/, '')
    .trim();
}

function cut(text: string, from: string, to: string, replacement: string, what: string): string {
  const start = text.indexOf(from);
  const end = start < 0 ? -1 : text.indexOf(to, start);
  if (start < 0 || end < 0) throw new Error(`the golden text no longer has ${what}`);
  return text.slice(0, start) + replacement + text.slice(end + to.length);
}

export const claimShipped = golden('claim-start');
export const archiveShipped = golden('archive-succeeded');
const FOUR_COLUMNS = 'SELECT c.id, c.type, c.payload, c.attempt_count FROM claimed c\n';

export const claimVariants: Record<string, string> = {
  'claim returning id, type, payload and attempt only': cut(
    claimShipped,
    'SELECT c.id,\n       c.queue',
    'FROM claimed c',
    FOUR_COLUMNS,
    "the claim's column list",
  ),
  'claim without the lag metric': cut(
    claimShipped,
    ',\nbucket AS (',
    ')\nSELECT c.id,',
    '\nSELECT c.id,',
    "the claim's lag metric",
  ),
  'claim, minimal: the same rows locked and updated by ctid, 4 columns returned': `WITH picked AS (
  SELECT j.id, j.ctid AS tid FROM "chokaq".jobs_hot j
  WHERE j.status = 0 AND j.queue = ($3::text[])[1]
    AND coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now()
    AND cardinality($4::text[]) + cardinality($5::text[]) + cardinality($8::int[])
        + cardinality($9::int[]) >= 0
  ORDER BY j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"
  LIMIT $6 FOR UPDATE SKIP LOCKED
)
UPDATE "chokaq".jobs_hot j
SET status = CASE WHEN $7::int > 0 THEN 2 ELSE 1 END, attempt_count = j.attempt_count + 1,
    started_at_utc = statement_timestamp(), heartbeat_utc = statement_timestamp(),
    worker_id = $1, lease_id = $2, last_updated_utc = statement_timestamp()
FROM picked p WHERE j.ctid = p.tid AND j.id = p.id
RETURNING j.id, j.type, j.payload, j.attempt_count`,
};

export const archiveVariants: Record<string, string> = {
  'archive: the rows deleted only (no Archive row, no counters)': cut(
    archiveShipped,
    '  RETURNING j.*, l.duration_ms AS run_ms\n),',
    'SELECT id, lease_id FROM src',
    '  RETURNING j.id, j.lease_id\n)\nSELECT id, lease_id FROM moved',
    "the archive's move",
  ),
};

interface Args {
  pgUrl: string;
  jobs: number;
  rounds: number;
}

function parse(argv: string[]): Args {
  const args: Args = {
    pgUrl: pgUrlOf(undefined),
    jobs: 40_000,
    rounds: 3,
  };
  for (const arg of argv) {
    const [key, value] = arg.replace(/^--/, '').split('=');
    if (key === 'pg-url') args.pgUrl = value;
    else if (key === 'jobs') args.jobs = Number(value);
    else if (key === 'rounds') args.rounds = Number(value);
    else throw new Error(`unknown flag ${arg} (--pg-url=URL --jobs=N --rounds=N)`);
  }
  if (!Number.isInteger(args.jobs) || args.jobs < CLAIM_ROWS * 4)
    throw new Error(`--jobs must be an integer of at least ${CLAIM_ROWS * 4}`);
  if (!Number.isInteger(args.rounds) || args.rounds < 1)
    throw new Error('--rounds must be a positive integer');
  return args;
}

/** Server CPU in µs per row of the claim and the archive, for A (even claims) and B (odd ones). */
interface Round {
  claim: [number, number];
  archive: [number, number];
}

async function round(
  url: string,
  jobs: number,
  claims: [string, string],
  archives: [string, string],
): Promise<Round> {
  const schema = benchSchemaName('stmt');
  // The library creates the schema (every migration) as a starting worker would.
  await (
    await createJobStorage(
      { type: 'postgres', url, schema, autoCreateSchema: true },
      { logger: () => quietLogger },
    )
  ).close();
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const cpuUs = () => {
      const ms = scheduledCpuMs(pid);
      if (ms === undefined)
        throw new Error(`cannot read backend ${pid}'s CPU: run on PostgreSQL's host`);
      return ms * 1_000;
    };
    const inSchema = (text: string) => text.replaceAll('"chokaq".', `${schema}.`);
    await client.query(`INSERT INTO ${schema}.queues (name) VALUES ('q')`);
    await client.query(
      `INSERT INTO ${schema}.jobs_hot (id, queue, type, payload, priority, status,
         created_at_utc, enqueued_at_utc, last_updated_utc)
       SELECT gen_random_uuid()::text, 'q', 'noop', '{"i":' || g || '}', 10, 0,
              now(), clock_timestamp(), now()
       FROM generate_series(1, $1::int) g`,
      [jobs],
    );
    const spent = { claim: [0, 0], archive: [0, 0], rows: [0, 0] };
    for (let i = 0; ; i++) {
      const side = i % 2;
      const lease = `lease-${i}`;
      let before = cpuUs();
      const claimed = await client.query<{ id: string }>({
        name: `claim${side}`,
        text: inSchema(claims[side]),
        values: ['bench:1:w', lease, ['q'], [], [], CLAIM_ROWS, STARTED, [], []],
      });
      spent.claim[side] += cpuUs() - before;
      if (claimed.rows.length === 0) break;
      const ids = claimed.rows.map((r) => r.id);
      before = cpuUs();
      const archived = await client.query({
        name: `archive${side}`,
        text: inSchema(archives[side]),
        values: [ids, ids.map(() => 'bench:1:w'), ids.map(() => lease), ids.map(() => 1)],
      });
      spent.archive[side] += cpuUs() - before;
      // A statement that moved less than it was given would measure less work, not less cost.
      if (archived.rowCount !== ids.length)
        throw new Error(`archive ${side ? 'B' : 'A'} moved ${archived.rowCount} of ${ids.length}`);
      spent.rows[side] += ids.length;
    }
    const per = (us: number[], side: number) => us[side] / spent.rows[side];
    return {
      claim: [per(spent.claim, 0), per(spent.claim, 1)],
      archive: [per(spent.archive, 0), per(spent.archive, 1)],
    };
  } finally {
    await client.end();
    await dropSchema(url, schema);
  }
}

async function main(): Promise<void> {
  const args = parse(process.argv.slice(2));
  const url = await ensureBenchDatabase(args.pgUrl);
  const lines = [
    `Server CPU per row, µs: median of ${args.rounds} rounds of ${args.jobs.toLocaleString('en-US')} jobs, claims of ${CLAIM_ROWS} (${STARTED} started); A = as shipped, B = the variant, alternated claim by claim`,
    '',
    '| B | claim A | claim B | archive A | archive B |',
    '| - | ------: | ------: | --------: | --------: |',
  ];
  const comparisons: Array<[string, [string, string], [string, string]]> = [
    ['A again (the noise floor)', [claimShipped, claimShipped], [archiveShipped, archiveShipped]],
    ...Object.entries(claimVariants).map(
      ([name, text]): [string, [string, string], [string, string]] => [
        name,
        [claimShipped, text],
        [archiveShipped, archiveShipped],
      ],
    ),
    ...Object.entries(archiveVariants).map(
      ([name, text]): [string, [string, string], [string, string]] => [
        name,
        [claimShipped, claimShipped],
        [archiveShipped, text],
      ],
    ),
  ];
  for (const [name, claims, archives] of comparisons) {
    const rounds: Round[] = [];
    for (let r = 0; r < args.rounds; r++)
      rounds.push(await round(url, args.jobs, claims, archives));
    const cell = (of: 'claim' | 'archive', side: 0 | 1) =>
      summarize(rounds.map((x) => x[of][side])).median.toFixed(1);
    const line = `| ${name} | ${cell('claim', 0)} | ${cell('claim', 1)} | ${cell('archive', 0)} | ${cell('archive', 1)} |`;
    lines.push(line);
    console.error(line);
  }
  console.log(lines.join('\n'));
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
