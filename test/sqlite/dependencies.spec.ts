import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import type { JobLease, NewJob } from '../../libs/chokaq/src/interfaces/job.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { jobStoreStatements } from '../../libs/chokaq/src/storage/sqlite/sql';
import { SQLITE_MIGRATIONS } from '../../libs/chokaq/src/storage/sqlite/sqlite.schema';
import { createTestSchema } from '../support/test-database';
import { claim, startJob, uniqueQueue } from '../contract/helpers';

const P = 'chokaq_';

/** Applies the migrations of `versions` in one write transaction, as `ensureSchema` does. */
function migrate(db: Database.Database, versions: (v: number) => boolean): void {
  db.exec('BEGIN IMMEDIATE');
  for (const m of SQLITE_MIGRATIONS.filter((x) => versions(x.version))) {
    for (const statement of m.statements(P)) db.exec(statement);
  }
  db.exec('COMMIT');
}

/** The hot table's indexes: `PRAGMA index_list` (name, unique, origin, partial) and each one's DDL. */
function hotIndexes(db: Database.Database) {
  const list = db.prepare(`PRAGMA index_list(${P}jobs_hot)`).all() as Array<{
    name: string;
    unique: number;
    origin: string;
    partial: number;
  }>;
  const ddl = new Map(
    (
      db
        .prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?`)
        .all(`${P}jobs_hot`) as Array<{ name: string; sql: string | null }>
    ).map((r) => [r.name, r.sql === null ? null : r.sql.replace(/\s+/g, ' ')]),
  );
  return list
    .map(({ name, unique, origin, partial }) => ({
      name,
      unique,
      origin,
      partial,
      sql: ddl.get(name)?.replace('IF NOT EXISTS ', '') ?? null,
      columns: (db.prepare(`PRAGMA index_xinfo(${name})`).all() as Array<Record<string, unknown>>)
        .filter((c) => c.key === 1)
        .map((c) => [c.name, c.desc]),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Schema version 17 rebuilds the hot table for its wider status check (SQLite cannot alter a
 * CHECK): the rows, the columns and every index of version 16 come through it unchanged, with the
 * dependencies' index added and the active index still the last one created.
 */
describe('SQLite schema version 17: the hot table rebuilt for status 7', () => {
  let db: Database.Database;
  beforeEach(() => {
    db = new Database(':memory:');
  });
  afterEach(() => db.close());

  it('keeps every row, column and index of version 16, adds the waiting index, and checks status 7', () => {
    migrate(db, (v) => v < 17);
    const columnsBefore = db.prepare(`PRAGMA table_info(${P}jobs_hot)`).all();
    const before = hotIndexes(db);
    db.exec(
      `INSERT INTO ${P}jobs_hot (id, queue, type, payload, status, created_at_utc, enqueued_at_utc,
         last_updated_utc, idempotency_key, group_key, batch_id, held_since_utc, payload_version)
       VALUES ('a', 'q', 't', '{}', 0, 1, 1, 1, 'k', 'g', 'b', 5, 2),
              ('b', 'q', 't', '{}', 2, 1, 1, 1, NULL, NULL, NULL, NULL, 1)`,
    );
    const rowsBefore = db.prepare(`SELECT * FROM ${P}jobs_hot ORDER BY id`).all();

    migrate(db, (v) => v === 17);

    const columnsAfter = db.prepare(`PRAGMA table_info(${P}jobs_hot)`).all() as Array<{
      name: string;
    }>;
    expect(columnsAfter.slice(0, columnsBefore.length)).toEqual(columnsBefore);
    expect(columnsAfter.slice(columnsBefore.length).map((c) => c.name)).toEqual([
      'waiting_on',
      'has_dependents',
    ]);
    expect(
      db
        .prepare(`SELECT * FROM ${P}jobs_hot ORDER BY id`)
        .all()
        .map((r) => {
          const { waiting_on, has_dependents, ...rest } = r as Record<string, unknown>;
          expect([waiting_on, has_dependents]).toEqual([null, 0]);
          return rest;
        }),
    ).toEqual(rowsBefore);

    const after = hotIndexes(db);
    const waiting = after.find((i) => i.name === `${P}jobs_hot_waiting_ix`);
    expect(waiting).toMatchObject({ unique: 0, partial: 1 });
    expect(after.filter((i) => i !== waiting)).toEqual(before);
    // Created last: the planner's tie-break of version 16 still picks it (see there).
    const created = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?`)
      .all(`${P}jobs_hot`) as Array<{ name: string }>;
    expect(created[created.length - 1].name).toBe(`${P}jobs_hot_active_ix`);

    expect(db.pragma('integrity_check')).toEqual([{ integrity_check: 'ok' }]);
    expect(db.pragma('foreign_key_check')).toEqual([]);
    expect(
      db.prepare(`SELECT name FROM sqlite_master WHERE name LIKE '%jobs_hot_next%'`).all(),
    ).toEqual([]);

    db.exec(`UPDATE ${P}jobs_hot SET status = 7 WHERE id = 'a'`);
    expect(() => db.exec(`UPDATE ${P}jobs_hot SET status = 3 WHERE id = 'a'`)).toThrow(
      /CHECK constraint failed/,
    );
  });
});

/**
 * What the storage contract leaves to the dialect: SQLite's settle, remove and check steps in the
 * corners a single cancel, purge or retention batch reaches, the waiting counts of the reads, and
 * the plans of the updates that release waiting jobs from a JSON list.
 */
describe('SQLite dependencies', () => {
  const db = createTestSchema('sqlite');
  let storage: JobStorage;
  beforeAll(async () => {
    storage = await db.openStorage();
  });
  afterAll(() => db.close());

  const started = (queue: string) => startJob(storage, queue);
  const archive = (leases: readonly JobLease[]) =>
    storage.archiveSucceeded(leases.map((l) => ({ ...l, durationMs: 1 })));
  async function waiter(queue: string, dependsOn: NewJob['dependsOn']): Promise<string> {
    return (await storage.enqueue({ queue, type: 'waiter', dependsOn })).id;
  }
  const edges = async () =>
    db.sql<{ depends_on: string; job_id: string; state: number; needs_check: number }>(
      `SELECT depends_on, job_id, state, needs_check FROM ${db.schema}job_dependencies`,
    );

  it('one cancel of a dependency and its dependent settles the edge and finds no hot row to release', async () => {
    const queue = uniqueQueue('dep.both');
    const { id: a } = await storage.enqueue({ queue });
    const b = await waiter(queue, [{ jobId: a, onFailure: 'cancel' }]);
    const c = await waiter(queue, [{ jobId: b, onFailure: 'ignore' }]);
    const d = await waiter(queue, [{ jobId: a, onFailure: 'ignore' }, b]);

    const result = await storage.cancel([a, b]);
    expect(result.cancelled.sort()).toEqual([a, b].sort());
    expect(await storage.getJob(b)).toMatchObject({ pillar: 'dlq', waitingOn: 1 });
    // b's own edge failed (for the check), c's ignored (released), d's: one ignored, one blocked.
    expect(await storage.getJob(c)).toMatchObject({ status: JobStatus.Pending, waitingOn: 0 });
    expect(await storage.getJob(d)).toMatchObject({ status: JobStatus.Waiting, waitingOn: 1 });
    // The check finds b no longer waiting: nothing moves, the mark goes.
    expect(await storage.checkDependencies()).toEqual({ settled: 0, cancelled: [] });
    expect((await edges()).filter((e) => e.needs_check === 1)).toEqual([]);
    expect(await storage.getJob(b)).toMatchObject({
      pillar: 'dlq',
      failureReason: FailureReason.Cancelled,
    });
  });

  it('counts waiting jobs in the summary and the queue stats, and lists them by status 7', async () => {
    const queue = uniqueQueue('dep.counts');
    const a = await started(queue);
    const before = (await storage.getSummary()).waiting;
    const ids = [await waiter(queue, [a.id]), await waiter(queue, [a.id])];
    expect((await storage.getSummary()).waiting).toBe(before + 2);
    const stats = (await storage.getQueueStats()).find((q) => q.queue === queue);
    expect(stats).toMatchObject({ pending: 0, processing: 1, waiting: 2 });
    const page = await storage.listActive({ filter: { queue, status: JobStatus.Waiting } });
    expect(page.items.map((j) => j.id).sort()).toEqual([...ids].sort());
    expect((await storage.listActive({ filter: { queue } })).items).toHaveLength(3);
    expect(
      await storage.countExactly({ pillar: 'hot', filter: { queue, status: JobStatus.Waiting } }),
    ).toBe(2);
    await archive([a]);
    expect((await storage.getQueueStats()).find((q) => q.queue === queue)).toMatchObject({
      pending: 2,
      waiting: 0,
    });
  });

  it('a purge of a waiting job deletes its own edges; its dependency keeps no dependent', async () => {
    const queue = uniqueQueue('dep.purge');
    const a = await started(queue);
    const b = await waiter(queue, [a.id]);
    await storage.cancel([b]);
    expect(await storage.purgeDlq([b])).toBe(1);
    expect((await storage.getDependencies(a.id)).dependents).toEqual([]);
    expect(await storage.checkDependencies()).toEqual({ settled: 0, cancelled: [] });
  });

  it('retention of a blocked dependency sends its dependent to the DLQ; of settled ones, only edges go', async () => {
    const queue = uniqueQueue('dep.retention');
    const dead = await started(queue);
    await storage.moveToDlq(dead, { reason: FailureReason.FatalError, error: 'boom' });
    const blocked = await waiter(queue, [dead.id]);
    const done = await started(queue);
    const released = await waiter(queue, [done.id]);
    await archive([done]);
    const run = (await claim(storage, queue, 10)).leases;
    expect(run.map((l) => l.id)).toEqual([released]);
    await storage.markAsProcessing(run);
    await archive(run);

    const hour = 3_600_000;
    await db.sql(
      `UPDATE ${db.schema}jobs_dlq SET failed_at_utc = failed_at_utc - ${2 * hour} WHERE id = ?`,
      [dead.id],
    );
    await db.sql(
      `UPDATE ${db.schema}jobs_archive SET finished_at_utc = finished_at_utc - ${2 * hour}
       WHERE id IN (?, ?)`,
      [done.id, released],
    );
    const removed = await storage.applyRetention({ archiveMs: hour, dlqMs: hour, metricsMs: hour });
    expect(removed).toMatchObject({ archive: 2, dlq: 1 });
    // The archived pair: the dependent's own edge went with it.
    expect((await edges()).filter((e) => e.depends_on === done.id)).toEqual([]);
    // The blocked edge is marked removed, and the check sends its dependent to the DLQ.
    expect((await edges()).filter((e) => e.depends_on === dead.id)).toEqual([
      { depends_on: dead.id, job_id: blocked, state: 4, needs_check: 1 },
    ]);
    expect((await storage.checkDependencies()).cancelled).toEqual([blocked]);
    expect(await storage.getJob(blocked)).toMatchObject({
      pillar: 'dlq',
      status: JobStatus.Cancelled,
      failureReason: FailureReason.DependencyFailed,
    });
    expect((await storage.getQueueStats()).find((q) => q.queue === queue)).toMatchObject({
      cancelledTotal: 1,
    });
  });

  it('an enqueue that refers to no table rolls back its jobs in the caller transaction too', async () => {
    const queue = uniqueQueue('dep.caller');
    const dataSource = await db.openDataSource();
    const own = await createJobStorage({ dataSource, schema: db.schema, autoCreateSchema: false });
    const runner = dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    const kept = randomUUID();
    await own.enqueue({ id: kept, queue }, { transaction: runner });
    await expect(
      own.enqueueMany([{ queue }, { queue, dependsOn: [randomUUID()] }], { transaction: runner }),
    ).rejects.toThrow(/dependsOn/);
    await runner.commitTransaction();
    await runner.release();
    expect((await own.listActive({ filter: { queue } })).items.map((j) => j.id)).toEqual([kept]);
    await own.close();
  });

  it('updates waiting jobs by their primary keys after an ANALYZE that saw few of them', async () => {
    const queue = uniqueQueue('dep.plans');
    // Statistics of a backlog beside two waiting jobs.
    await storage.enqueueMany(Array.from({ length: 3_000 }, () => ({ queue })));
    const a = await started(queue);
    await waiter(queue, [a.id]);
    await waiter(queue, [a.id]);
    const raw = new Database(db.file);
    try {
      raw.exec('ANALYZE');
      const sql = jobStoreStatements(db.schema);
      const plan = (statement: string) =>
        (
          raw.prepare(`EXPLAIN QUERY PLAN ${statement}`).all({ ids: '[]', n: 1 }) as {
            detail: string;
          }[]
        ).map((r) => r.detail);
      for (const statement of [sql.dependencyRelease, sql.insertDependenciesWaits]) {
        expect(plan(statement)).toEqual([
          expect.stringMatching(
            /^SEARCH \S+jobs_hot USING INDEX sqlite_autoindex_\S+_1 \(id=\?\)$/,
          ),
          'LIST SUBQUERY 1',
          expect.stringMatching(/^SCAN json_each VIRTUAL TABLE/),
        ]);
      }
    } finally {
      raw.close();
    }
  });
});
