import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import type { JobLease } from '../../libs/chokaq/src/interfaces/job.interface';
import { jobStoreStatements } from '../../libs/chokaq/src/storage/sqlite/sql';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { createTestSchema } from '../support/test-database';

const BATCH = 100;

/**
 * The statements a worker sends with its leases find each row by its primary key, whatever
 * `ANALYZE` saw. The archive's copy joined the leases to the hot table; with statistics gathered
 * while a backlog waited and nothing was claimed, SQLite scanned the claimed rows' partial index
 * and, for each claimed row, the leases: every claimed row read for every lease (108 ms for 100
 * leases beside 1,000 claimed rows; bench `scale`). Each statement's plan here, with 1,200 rows
 * claimed after such an ANALYZE, reads the leases first and searches the hot table by `id`.
 */
describe('SQLite lease statements: one primary-key search per lease', () => {
  const db = createTestSchema('sqlite');
  let storage: JobStorage;
  let raw: Database.Database;
  const leases: JobLease[] = [];
  const workerId = 'lease-plans';

  beforeAll(async () => {
    storage = await db.openStorage();
    for (let i = 0; i < 3; i++) {
      await storage.enqueueMany(Array.from({ length: 1_000 }, () => ({ queue: 'plans' })));
    }
    raw = new Database(db.file);
    // Statistics of an idle moment: a backlog, nothing claimed.
    raw.exec('ANALYZE');
    for (let n = 0; n < 1_200; n += BATCH) {
      const leaseId = randomUUID();
      const rows = await storage.fetchNextBatch({
        workerId,
        leaseId,
        limit: BATCH,
        start: BATCH,
        handled: { queues: ['plans'], types: [] },
      });
      leases.push(...rows.map((r) => ({ id: r.id, workerId, leaseId })));
    }
    expect(leases).toHaveLength(1_200);
  });

  afterAll(async () => {
    raw?.close();
    await db.close();
  });

  /** The plan's steps (`EXPLAIN QUERY PLAN`), as SQLite words them. */
  function plan(sql: string, params: Record<string, unknown>): string[] {
    return (raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as Array<{ detail: string }>).map(
      (r) => r.detail,
    );
  }

  const sql = () => jobStoreStatements(db.schema);
  const params = () => ({
    leases: JSON.stringify(leases.slice(0, BATCH).map((l) => ({ ...l, durationMs: 1 }))),
    workerId,
    delayMs: null,
  });

  it.each([
    'archiveSucceeded',
    'archiveSucceededWithResults',
    'archiveSucceededDelete',
    'keepAlive',
    'moveToDlq',
    'unstart',
  ] as const)('%s searches the hot table by id and never scans it', (name) => {
    const steps = plan(sql()[name], params());
    const hot = `${db.schema}jobs_hot`;
    expect(steps.filter((s) => new RegExp(`^SCAN (h|${hot})\\b`).test(s))).toEqual([]);
    expect(steps.some((s) => /^SEARCH (h|\S+jobs_hot) USING INDEX \S+ \(id=\?\)/.test(s))).toBe(
      true,
    );
  });
});
