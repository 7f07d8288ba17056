import Database from 'better-sqlite3';
import { ChaosDb, ChaosSummary, check } from './chaos/chaos-runner';
import { fakeTable } from './support/fake-tables';
import { runsDdl } from './support/fault-processes';

/**
 * The chaos run's invariant checker must not be vacuous: fed a database that breaks one invariant
 * at a time, it reports exactly that violation (and nothing for a consistent one).
 */

const A = 'aaaaaaaa-0000-7000-8000-000000000001';
const B = 'aaaaaaaa-0000-7000-8000-000000000002';
const C = 'aaaaaaaa-0000-7000-8000-000000000003';
const L1 = 'lease-1';
const L2 = 'lease-2';

function fakeDb(): { db: ChaosDb; raw: Database.Database } {
  const raw = new Database(':memory:');
  raw.exec(`
    CREATE TABLE chokaq_jobs_hot (id TEXT, waiting_on INTEGER);
    CREATE TABLE chokaq_job_dependencies (job_id TEXT, depends_on TEXT, state INTEGER,
      settled_at_utc INTEGER);
    CREATE TABLE chokaq_jobs_archive (id TEXT PRIMARY KEY, worker_id TEXT);
    CREATE TABLE chokaq_jobs_dlq (id TEXT PRIMARY KEY, failure_reason INTEGER);
    CREATE TABLE chokaq_stats_summary (queue TEXT, succeeded_total INTEGER, failed_total INTEGER,
      cancelled_total INTEGER, retried_total INTEGER, resurrected_total INTEGER);
    ${runsDdl('chaos_runs')};
  `);
  const all = async <T>(q: string) => raw.prepare(q).all() as T[];
  return {
    raw,
    db: {
      dialect: 'sqlite',
      storage: { type: 'sqlite' },
      record: { runsTable: 'chaos_runs' },
      table: fakeTable,
      sql: all,
      runs: all,
      close: async () => void raw.close(),
    },
  };
}

/** A consistent history: A archived by w1 under L1, B failed once (DLQ), resurrected, then DLQ again; C archived. */
function consistent(raw: Database.Database): void {
  const run = raw.prepare(
    'INSERT INTO chaos_runs (job_id, worker_id, lease_id, attempt, phase, detail, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  run.run(A, 'w1', L1, 1, 'start', null, 100);
  run.run(A, 'w1', L1, 1, 'ok', null, 200);
  run.run(A, 'w1', null, 1, 'outcome', 'succeeded:1', 210);
  run.run(B, 'w2', L2, 1, 'start', null, 100);
  run.run(B, 'w2', L2, 1, 'error', 'x', 150);
  run.run(B, 'w2', null, 1, 'outcome', 'failed:1', 160);
  run.run(B, 'w2', 'lease-3', 1, 'start', null, 300);
  run.run(B, 'w2', 'lease-3', 1, 'error', 'x', 350);
  run.run(B, 'w2', null, 1, 'outcome', 'failed:1', 360);
  run.run(C, 'w2', 'lease-4', 1, 'start', null, 100);
  run.run(C, 'w2', 'lease-4', 1, 'ok', null, 120);
  raw.prepare('INSERT INTO chokaq_jobs_archive VALUES (?, ?)').run(A, 'w1');
  raw.prepare('INSERT INTO chokaq_jobs_archive VALUES (?, ?)').run(C, 'w2');
  raw.prepare('INSERT INTO chokaq_jobs_dlq VALUES (?, ?)').run(B, 0);
  raw.prepare('INSERT INTO chokaq_stats_summary VALUES (?, ?, ?, ?, ?, ?)').run('q', 2, 2, 0, 0, 1);
  // A flow: C waited on A, its edge settled at 90, before C's run started at 100.
  raw.prepare('INSERT INTO chokaq_job_dependencies VALUES (?, ?, ?, ?)').run(C, A, 1, 90);
}

function summary(resurrects: number): ChaosSummary {
  return {
    dialect: 'sqlite',
    seconds: 0,
    workers: 0,
    seed: 0,
    jobs: 3,
    enqueueCalls: 0,
    enqueueErrors: 0,
    archive: 0,
    dlq: 0,
    dlqByReason: {},
    hot: 0,
    runs: 0,
    kills: 0,
    restarts: 0,
    pauses: 0,
    cancels: 0,
    resurrects,
    flows: 1,
    flowParentsRan: 0,
    counters: {},
    conflicts: 0,
    lateResults: 0,
    drainMs: 0,
    violations: [],
  };
}

async function violations(
  breakIt: (raw: Database.Database) => void,
  resurrects = 1,
): Promise<string[]> {
  const { db, raw } = fakeDb();
  consistent(raw);
  breakIt(raw);
  const s = summary(resurrects);
  await check(db, s, [A, B, C], new Map([[B, 1]]), new Map([[C, [A]]]));
  await db.close();
  return s.violations;
}

describe('chaos invariant checker', () => {
  it('finds nothing wrong with a consistent history', async () => {
    expect(await violations(() => undefined)).toEqual([]);
  });

  it.each<[string, (raw: Database.Database) => void, RegExp]>([
    ['a lost job', (raw) => raw.exec(`DELETE FROM chokaq_jobs_archive WHERE id = '${C}'`), /lost/],
    [
      'a job left hot',
      (raw) => raw.exec(`INSERT INTO chokaq_jobs_hot VALUES ('${C}', NULL)`),
      /hot/,
    ],
    [
      'a job in two pillars',
      (raw) => raw.exec(`INSERT INTO chokaq_jobs_dlq VALUES ('${A}', 2)`),
      /Archive and DLQ/,
    ],
    [
      'a row nobody enqueued',
      (raw) => raw.exec(`INSERT INTO chokaq_jobs_dlq VALUES ('zzz', 2)`),
      /nobody enqueued/,
    ],
    [
      'a success counted twice',
      (raw) => raw.exec(`UPDATE chokaq_stats_summary SET succeeded_total = 3`),
      /SucceededTotal/,
    ],
    [
      'a DLQ move not counted',
      (raw) => raw.exec(`UPDATE chokaq_stats_summary SET failed_total = 1`),
      /FailedTotal/,
    ],
    [
      'a second lease started while the owner ran',
      (raw) =>
        raw.exec(`INSERT INTO chaos_runs VALUES ('${A}', 'w9', 'lease-9', 1, 'start', NULL, 150)`),
      /started while/,
    ],
    [
      'a lease started twice',
      (raw) =>
        raw.exec(`INSERT INTO chaos_runs VALUES ('${C}', 'w2', 'lease-4', 1, 'start', NULL, 110)`),
      /started twice/,
    ],
    [
      'an archive without a successful run of its owner',
      (raw) => raw.exec(`UPDATE chokaq_jobs_archive SET worker_id = 'w7' WHERE id = '${C}'`),
      /without a successful run/,
    ],
    [
      'two accepted finalisations of one job',
      (raw) =>
        raw.exec(
          `INSERT INTO chaos_runs VALUES ('${A}', 'w3', NULL, 1, 'outcome', 'failed:1', 400)`,
        ),
      /accepted finalisations/,
    ],
    [
      'a parent that ran before its last child settled',
      (raw) => raw.exec(`UPDATE chokaq_job_dependencies SET settled_at_utc = 101`),
      /before its last edge settled/,
    ],
    [
      'an archived parent with an edge still waiting',
      (raw) => raw.exec(`UPDATE chokaq_job_dependencies SET state = 0, settled_at_utc = NULL`),
      /still waiting/,
    ],
    [
      'a parent with an edge lost',
      (raw) => raw.exec(`DELETE FROM chokaq_job_dependencies`),
      /0 edge\(s\) for 1 children/,
    ],
    [
      'a count below zero',
      (raw) => raw.exec(`INSERT INTO chokaq_jobs_hot VALUES ('${B}', -1)`),
      /waiting_on < 0/,
    ],
  ])('reports %s', async (_name, breakIt, expected) => {
    const found = await violations(breakIt);
    expect(found.length).toBeGreaterThan(0);
    expect(found.join('\n')).toMatch(expected);
  });

  it('reports a resurrect count that does not match ResurrectedTotal', async () => {
    expect((await violations(() => undefined, 2)).join('\n')).toMatch(/ResurrectedTotal/);
  });
});
