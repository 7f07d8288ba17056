import Database from 'better-sqlite3';
import { SoakDb, SoakSummary, checkSoak } from './chaos/soak-runner';
import { fakeTable } from './support/fake-tables';
import { runsDdl } from './support/fault-processes';

/**
 * The short soak's checks must not be vacuous: fed a history that breaks one of them at a time,
 * they report exactly that (and nothing for a consistent history).
 */

const A = 'aaaaaaaa-0000-7000-8000-000000000001';
const B = 'aaaaaaaa-0000-7000-8000-000000000002';
const C = 'aaaaaaaa-0000-7000-8000-000000000003';

function fakeDb(): { db: SoakDb; raw: Database.Database } {
  const raw = new Database(':memory:');
  raw.exec(`
    CREATE TABLE chokaq_jobs_hot (id TEXT, status INTEGER);
    CREATE TABLE chokaq_jobs_archive (id TEXT PRIMARY KEY);
    CREATE TABLE chokaq_jobs_dlq (id TEXT PRIMARY KEY);
    CREATE TABLE chokaq_stats_summary (queue TEXT, succeeded_total INTEGER);
    ${runsDdl('soak_runs')};
  `);
  const all = async <T>(q: string) => raw.prepare(q).all() as T[];
  return {
    raw,
    db: {
      record: { runsTable: 'soak_runs' },
      table: fakeTable,
      sql: all,
      runs: all,
    } as SoakDb,
  };
}

/** A consistent soak: A, B and C each ran once and were archived; retention has removed A since. */
function consistent(raw: Database.Database): void {
  const run = raw.prepare(
    'INSERT INTO soak_runs (job_id, worker_id, lease_id, attempt, phase, detail, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  for (const [i, id] of [A, B, C].entries()) {
    run.run(id, 'w1', `lease-${i}`, 1, 'start', null, 100 + i);
    run.run(id, 'w1', `lease-${i}`, 1, 'ok', null, 110 + i);
  }
  raw.prepare('INSERT INTO chokaq_jobs_archive VALUES (?)').run(B);
  raw.prepare('INSERT INTO chokaq_jobs_archive VALUES (?)').run(C);
  raw.prepare('INSERT INTO chokaq_stats_summary VALUES (?, ?)').run('chaos.a', 3);
}

async function violations(breakIt: (raw: Database.Database) => void): Promise<string[]> {
  const { db, raw } = fakeDb();
  consistent(raw);
  breakIt(raw);
  const summary: SoakSummary = {
    dialect: 'sqlite',
    seconds: 0,
    workers: 0,
    rate: 0,
    jobs: 3,
    succeeded: 0,
    retained: 0,
    windows: [],
    drainMs: 0,
    violations: [],
  };
  await checkSoak(db, summary, [A, B, C]);
  raw.close();
  return summary.violations;
}

describe('soak checker', () => {
  it('finds nothing wrong with a consistent history', async () => {
    expect(await violations(() => undefined)).toEqual([]);
  });

  it.each<[string, (raw: Database.Database) => void, RegExp]>([
    ['a job left hot', (raw) => raw.exec(`INSERT INTO chokaq_jobs_hot VALUES ('${C}', 0)`), /hot/],
    ['a job in the DLQ', (raw) => raw.exec(`INSERT INTO chokaq_jobs_dlq VALUES ('${C}')`), /DLQ/],
    [
      'a job counted twice',
      (raw) => raw.exec(`UPDATE chokaq_stats_summary SET succeeded_total = 4`),
      /SucceededTotal 4/,
    ],
    [
      'a job started twice',
      (raw) =>
        raw.exec(`INSERT INTO soak_runs VALUES ('${B}', 'w2', 'lease-9', 1, 'start', NULL, 300)`),
      /started more than once/,
    ],
    [
      'a job that never ran',
      (raw) => raw.exec(`DELETE FROM soak_runs WHERE job_id = '${A}'`),
      /never ran to success/,
    ],
    [
      'retention that removed nothing',
      (raw) => raw.exec(`INSERT INTO chokaq_jobs_archive VALUES ('${A}')`),
      /retention removed no archived row/,
    ],
  ])('reports %s', async (_name, breakIt, expected) => {
    const found = await violations(breakIt);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(expected);
  });
});
