import { randomUUID } from 'node:crypto';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { NewJob } from '../../libs/chokaq/src/interfaces/job.interface';
import { MSSQL_TABLES } from '../../libs/chokaq/src/storage/mssql/mssql.schema';
import * as SQL from '../../libs/chokaq/src/storage/mssql/sql';
import { dialectAvailable, openTestDatabase, TestDatabase } from '../support/test-database';

/**
 * Live checks of plan reuse, lock footprint and column-explicit statements (runs only with
 * CHOKAQ_MSSQL_URL, against SQL Server 2019+ or Azure SQL; skipped everywhere else):
 * - after 1,000 enqueues with values of every length (and claims, starts, archives and DLQ moves
 *   with worker ids and error texts of every length), each distinct statement text has ONE entry
 *   in the plan cache (`sys.dm_exec_cached_plans` × `sys.dm_exec_sql_text`): parameters are
 *   declared with fixed widths, not their values' lengths;
 * - `sys.dm_tran_locks` of a claim held open (the claim's batch inside an outer transaction)
 *   over 20 queues, 5 of them budgeted, with a 20,000-row backlog of types no worker runs and
 *   delayed rows of a higher priority: U locks on exactly the budgeted `Queues` rows, row locks on
 *   the hot table bounded by the batch (never the backlog), no table lock;
 * - a column added to every table (as a DBA's audit column would be) breaks neither a claim nor
 *   any move.
 *
 * The plan-cache check needs VIEW SERVER STATE (VIEW SERVER PERFORMANCE STATE on SQL Server 2022,
 * VIEW DATABASE STATE on Azure SQL Database); the lock check needs the same to read
 * `sys.dm_tran_locks` of another session.
 *
 * Each test opens its own database (a fresh schema with a storage on it) through the one test
 * fixture; `db.sql` runs on the fixture's raw connection, a session of its own.
 */
const describeMssql = dialectAvailable('mssql') ? describe : describe.skip;

/** A text of exactly `n` characters (n ≥ 1). */
function text(prefix: string, n: number): string {
  return (prefix + 'x'.repeat(n)).slice(0, n);
}

describeMssql('SQL Server plans, locks and added columns [live]', () => {
  const databases: TestDatabase[] = [];

  async function freshDatabase(): Promise<TestDatabase> {
    const db = await openTestDatabase('mssql');
    databases.push(db);
    return db;
  }

  afterAll(async () => {
    for (const db of databases) await db.close();
  }, 120_000);

  it('one plan-cache entry per statement text after 1,000 enqueues of every length', async () => {
    const db = await freshDatabase();
    const { schema, storage } = db;
    const queue = 'live.plans';
    for (let i = 0; i < 1_000; i++) {
      const n = 1 + (i % 250);
      await storage.enqueue({
        queue,
        type: text('t', n),
        payload: { body: 'p'.repeat(i * 7) },
        idempotencyKey: i % 2 === 0 ? `${text('k', n)}${i}`.slice(-255) : undefined,
        tags: i % 3 === 0 ? [text('g', 1 + (i % 100))] : undefined,
        createdBy: text('c', 1 + (i % 100)),
      });
    }
    // Claims, starts, archives and DLQ moves with worker ids and errors of every length too.
    for (let i = 0; i < 40; i++) {
      const workerId = text('w', 1 + i * 6);
      const rows = await storage.fetchNextBatch({
        workerId,
        leaseId: randomUUID(),
        limit: 10,
        handled: { queues: [queue], types: [] },
      });
      const leases = rows.map((r) => ({ id: r.id, workerId, leaseId: r.leaseId! }));
      await storage.markAsProcessing(leases);
      await storage.keepAlive(workerId, leases);
      const [first, ...rest] = leases;
      if (first) {
        await storage.moveToDlq(first, {
          reason: FailureReason.FatalError,
          error: `Error: ${'e'.repeat(i * 97)}`,
        });
      }
      await storage.archiveSucceeded(rest.map((l, j) => ({ ...l, durationMs: j })));
    }

    const rows = await db.sql<{ text: string; uses: number }>(
      `SELECT st.text AS text, cp.usecounts AS uses
       FROM sys.dm_exec_cached_plans AS cp
       CROSS APPLY sys.dm_exec_sql_text(cp.plan_handle) AS st
       WHERE st.text LIKE @0`,
      [`%[[]${schema}]%`],
    );
    // A prepared batch is cached as "(@0 nvarchar(255),…)<batch text>": one entry per distinct
    // declaration list. Group by the batch text alone.
    const byBody = new Map<string, { entries: number; uses: number }>();
    for (const row of rows) {
      const start = row.text.indexOf(')SET TRANSACTION ISOLATION LEVEL');
      const body = start >= 0 ? row.text.slice(start + 1) : row.text;
      const group = byBody.get(body) ?? { entries: 0, uses: 0 };
      group.entries += 1;
      group.uses += Number(row.uses);
      byBody.set(body, group);
    }
    const duplicated = [...byBody.entries()]
      .filter(([, g]) => g.entries > 1)
      .map(([body, g]) => `${g.entries} entries: ${body.slice(0, 160).replace(/\s+/g, ' ')}`);
    expect(duplicated).toEqual([]);
    // The enqueue statements were cached and reused, not compiled once per call.
    const enqueues = [...byBody.entries()].filter(([body]) =>
      body.includes(`INSERT INTO [${schema}].[JobsHot] (Id, Queue, Type`),
    );
    expect(enqueues.length).toBeGreaterThan(0);
    expect(enqueues.reduce((n, [, g]) => n + g.uses, 0)).toBeGreaterThanOrEqual(900);
  }, 600_000);

  it('a claim over 20 queues and a 20,000-row backlog of unrunnable types locks O(batch) rows', async () => {
    const db = await freshDatabase();
    const { schema, storage } = db;
    const queues = Array.from({ length: 20 }, (_, i) => `live.locks.${String(i).padStart(2, '0')}`);
    const budgeted = queues.slice(0, 5);
    const backlog: NewJob[] = queues.flatMap((queue) =>
      Array.from({ length: 1_000 }, () => ({ queue, type: 'live.nobody-runs-this', priority: 50 })),
    );
    for (let i = 0; i < backlog.length; i += 10_000) {
      await storage.enqueueMany(backlog.slice(i, i + 10_000));
    }
    for (const queue of queues) {
      // Delayed rows ahead of the runnable ones in index order (higher priority, not yet due).
      await storage.enqueueMany(
        Array.from({ length: 50 }, () => ({
          queue,
          type: 'live.runnable',
          priority: 90,
          delayMs: 3_600_000,
        })),
      );
      await storage.enqueueMany(
        Array.from({ length: 3 }, () => ({ queue, type: 'live.runnable', priority: 10 })),
      );
    }
    for (const queue of budgeted) await storage.updateQueue(queue, { maxWorkers: 2 });

    // The claim's session holds its locks; the fixture's raw connection reads them.
    const runner = (await db.openDataSource()).createQueryRunner();
    await runner.connect();
    try {
      const [{ spid }] = (await runner.query('SELECT @@SPID AS spid')) as Array<{ spid: number }>;
      await runner.startTransaction('READ COMMITTED');
      // The claim's own batch, inside an outer transaction: its COMMIT only ends the nested
      // level, so every lock it took is still held when the locks are read below.
      const limit = 100;
      const statement = SQL.fetchNextBatch(schema, {
        workerId: 'live-locks',
        leaseId: randomUUID(),
        limit,
        queues: [],
        types: queues.map((queue) => ({ queue, type: 'live.runnable' })),
        start: 0,
      });
      const claimed = (await runner.query(statement.sql, [...statement.params])) as Array<{
        Id: string;
        Queue: string;
        Status: number;
      }>;
      // 15 unbudgeted queues × 3 due rows + 5 budgeted queues × 2 (MaxWorkers).
      expect(claimed).toHaveLength(15 * 3 + 5 * 2);
      expect(claimed.every((r) => Number(r.Status) === JobStatus.Fetched)).toBe(true);

      const locks = await db.sql<{
        resourceType: string;
        mode: string;
        n: string | number;
        tableName: string;
      }>(
        `SELECT l.resource_type AS resourceType, l.request_mode AS mode, COUNT_BIG(*) AS n,
                OBJECT_NAME(COALESCE(p.object_id, CASE WHEN l.resource_type = 'OBJECT' THEN l.resource_associated_entity_id END)) AS tableName
         FROM sys.dm_tran_locks AS l
         LEFT JOIN sys.partitions AS p
           ON l.resource_type IN ('KEY', 'PAGE', 'RID', 'HOBT') AND p.hobt_id = l.resource_associated_entity_id
         WHERE l.request_session_id = @0 AND l.resource_database_id = DB_ID()
         GROUP BY l.resource_type, l.request_mode,
                  OBJECT_NAME(COALESCE(p.object_id, CASE WHEN l.resource_type = 'OBJECT' THEN l.resource_associated_entity_id END))`,
        [spid],
      );
      const count = (table: string, type: string, modes: readonly string[]) =>
        locks
          .filter((l) => l.tableName === table && l.resourceType === type && modes.includes(l.mode))
          .reduce((n, l) => n + Number(l.n), 0);
      const summary = locks.map((l) => `${l.tableName} ${l.resourceType} ${l.mode} ×${l.n}`);

      // Queues: U locks on the 5 budgeted rows only, by key.
      expect([count(MSSQL_TABLES.queues, 'KEY', ['U']), summary]).toEqual([
        budgeted.length,
        summary,
      ]);
      // The hot table: row and key locks bounded by the batch (claimed rows × their index keys,
      // plus at most the picked rows that lost the final cut), never the 20,000-row backlog.
      const hotKeys = count(MSSQL_TABLES.hot, 'KEY', ['U', 'X', 'S', 'RangeS-U', 'RangeS-S']);
      expect([hotKeys < 8 * limit, summary]).toEqual([true, summary]);
      // No table lock (an escalation) on the hot table: intent locks only.
      const tableLocks = locks.filter(
        (l) => l.tableName === MSSQL_TABLES.hot && l.resourceType === 'OBJECT',
      );
      expect(tableLocks.every((l) => l.mode.startsWith('I'))).toBe(true);
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      await runner.release();
    }
  }, 600_000);

  it('a column added to every table breaks neither a claim nor a move', async () => {
    const db = await freshDatabase();
    const { schema, storage } = db;
    for (const table of Object.values(MSSQL_TABLES)) {
      await db.sql(
        `ALTER TABLE [${schema}].[${table}] ADD DbaAudit datetime2(3) NULL CONSTRAINT [DF_${table}_DbaAudit] DEFAULT SYSUTCDATETIME()`,
      );
    }
    const queue = 'live.columns';
    await storage.enqueue({ queue, type: 'a', idempotencyKey: 'live-key' });
    await storage.enqueueMany([
      { queue, type: 'a', idempotencyKey: 'live-key-2' },
      { queue, type: 'a' },
      { queue, type: 'a' },
      { queue, type: 'a' },
    ]);
    const workerId = 'live-columns';
    const claim = () =>
      storage.fetchNextBatch({
        workerId,
        leaseId: randomUUID(),
        limit: 5,
        start: 5,
        handled: { queues: [queue], types: [] },
      });
    const rows = await claim();
    expect(rows).toHaveLength(5);
    const [a, b, c, d, e] = rows.map((r) => ({ id: r.id, workerId, leaseId: r.leaseId! }));
    expect(await storage.archiveSucceeded([{ ...a, durationMs: 1 }])).toHaveLength(1);
    expect(
      await storage.moveToDlq(b, { reason: FailureReason.FatalError, error: 'Error: x' }),
    ).toBe(1);
    expect(await storage.rescheduleForRetry(c, 0, 'Error: retry')).toBe(1);
    await db.sql(
      `UPDATE [${schema}].[JobsHot] SET HeartbeatUtc = DATEADD(HOUR, -1, HeartbeatUtc) WHERE Id = @0`,
      [d.id],
    );
    expect((await storage.archiveZombies(60_000)).dlq).toEqual([d.id]);
    expect((await storage.cancel([e.id])).cancelRequested).toEqual([e.id]);
    expect(await storage.resurrectMany([b.id])).toEqual([b.id]);
    expect(await storage.resurrectByFilter({ queue }, 10)).toEqual([d.id]);
    expect(await storage.recoverAbandoned(0)).toBe(0);
    // The resurrected and retried rows are claimable again.
    expect((await claim()).map((r) => r.id).sort()).toEqual([b.id, c.id, d.id].sort());
    expect(await storage.getJob(a.id)).toMatchObject({ id: a.id });
    expect((await storage.getSummary()).archived).toBeGreaterThanOrEqual(1);
  }, 300_000);
});
