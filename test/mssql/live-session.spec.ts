import { randomBytes, randomUUID } from 'node:crypto';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import {
  createTestSchema,
  dialectAvailable,
  openTestDatabase,
  TestDatabase,
  TestSchema,
} from '../support/test-database';

/**
 * Live checks of the SQL Server session state (runs only with CHOKAQ_MSSQL_URL, against SQL Server
 * 2019+ or Azure SQL; skipped everywhere else):
 * - a SERIALIZABLE and a SNAPSHOT transaction on a borrowed DataSource leave their level on the
 *   pooled connection, and the next claim on it still works (every ChokaQ batch pins READ
 *   COMMITTED for itself), while the application's session keeps its level;
 * - purge by filter and retention (`READPAST` with `READCOMMITTEDLOCK`), and the `UPDLOCK, READPAST`
 *   claim and rescue reads, on a database with READ_COMMITTED_SNAPSHOT on;
 * - an error inside a caller's transaction leaves that transaction to the caller (no XACT_ABORT).
 *
 * They need a database with READ_COMMITTED_SNAPSHOT and ALLOW_SNAPSHOT_ISOLATION on (Azure SQL's
 * defaults). When the database of CHOKAQ_MSSQL_URL has either off, a scratch database with both on
 * is created for this file and dropped at the end (CREATE DATABASE permission needed): switching
 * READ_COMMITTED_SNAPSHOT on the shared test database would need every other session out of it.
 * The schema, the storage and every connection come from the one test fixture, on the scratch
 * database when there is one.
 */
const describeMssql = dialectAvailable('mssql') ? describe : describe.skip;

/** `sys.dm_exec_sessions.transaction_isolation_level` values. */
const LEVEL = { readCommitted: 2, serializable: 4, snapshot: 5 } as const;

describeMssql('SQL Server session state and READ_COMMITTED_SNAPSHOT [live]', () => {
  /** The scratch database, or null when the URL's database already has both options on. */
  let scratch: string | null = null;
  /**
   * The URL's own database, for what is said to the server (its options, the scratch database);
   * no ChokaQ schema is created there.
   */
  let admin: TestSchema;
  /** The database under test, with its storage. */
  let db: TestDatabase;
  let storage: JobStorage;
  let schema: string;
  const cleanups: Array<() => Promise<unknown>> = [];

  /** A hot job of `queue` claimed by a fresh lease and started. */
  async function startOne(queue: string) {
    const { id } = await storage.enqueue({ queue, type: 'live.v1' });
    const workerId = 'live-session';
    const leaseId = randomUUID();
    const rows = await storage.fetchNextBatch({
      workerId,
      leaseId,
      limit: 1,
      start: 1,
      handled: { queues: [queue], types: [] },
    });
    expect(rows.map((r) => [r.id, r.status])).toEqual([[id, JobStatus.Processing]]);
    return { id, workerId, leaseId };
  }

  beforeAll(async () => {
    admin = createTestSchema('mssql');
    const [current] = await admin.sql<{ rcsi: boolean | number; si: number }>(
      'SELECT is_read_committed_snapshot_on AS rcsi, snapshot_isolation_state AS si FROM sys.databases WHERE name = DB_NAME()',
    );
    if (!(Number(current.rcsi) === 1 && Number(current.si) === 1)) {
      scratch = `chokaq_live_${process.pid}_${randomBytes(4).toString('hex')}`;
      await admin.sql(`CREATE DATABASE [${scratch}]`);
      await admin.sql(`ALTER DATABASE [${scratch}] SET READ_COMMITTED_SNAPSHOT ON`);
      await admin.sql(`ALTER DATABASE [${scratch}] SET ALLOW_SNAPSHOT_ISOLATION ON`);
    }
    db = await openTestDatabase('mssql', { database: scratch ?? undefined });
    ({ storage, schema } = db);
  }, 120_000);

  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    // Closes the storages and connections it opened and drops the schema.
    await db?.close();
    if (admin) {
      if (scratch !== null) {
        await admin
          .sql(`ALTER DATABASE [${scratch}] SET SINGLE_USER WITH ROLLBACK IMMEDIATE`)
          .catch(() => undefined);
        await admin.sql(`DROP DATABASE IF EXISTS [${scratch}]`).catch(() => undefined);
      }
      // Best effort, as the drops above: cleanup never hides the test's own failure.
      await admin.close().catch(() => undefined);
    }
  }, 120_000);

  it('runs on a database with READ_COMMITTED_SNAPSHOT and snapshot isolation on', async () => {
    expect(
      await db.sql(
        'SELECT CAST(is_read_committed_snapshot_on AS int) AS rcsi, snapshot_isolation_state AS si FROM sys.databases WHERE name = DB_NAME()',
      ),
    ).toEqual([{ rcsi: 1, si: 1 }]);
  });

  it.each([
    ['SERIALIZABLE', LEVEL.serializable],
    ['SNAPSHOT', LEVEL.snapshot],
  ] as const)(
    'a %s transaction on a borrowed DataSource, then a claim on the same connection',
    async (isolation, level) => {
      // One pooled connection: the application's transaction and ChokaQ's claim share the session.
      const borrowed = await db.openDataSource({ poolSize: 1 });
      const shared = await createJobStorage({
        dataSource: borrowed,
        schema,
        autoCreateSchema: false,
      });
      const queue = `live.borrowed.${isolation.toLowerCase()}`;
      const { id } = await shared.enqueue({ queue, type: 'live.v1' });

      const runner = borrowed.createQueryRunner();
      await runner.startTransaction(isolation);
      await runner.query(`SELECT COUNT_BIG(*) AS n FROM [${schema}].[Queues]`);
      await runner.commitTransaction();
      await runner.release();
      const sessionLevel = async () =>
        Number(
          (
            (await borrowed.query(
              'SELECT transaction_isolation_level AS level FROM sys.dm_exec_sessions WHERE session_id = @@SPID',
            )) as Array<{ level: number }>
          )[0].level,
        );
      // The premise: the level outlives the transaction on the pooled connection.
      expect(await sessionLevel()).toBe(level);

      const claimed = await shared.fetchNextBatch({
        workerId: 'live-borrowed',
        leaseId: randomUUID(),
        limit: 5,
        handled: { queues: [queue], types: [] },
      });
      expect(claimed.map((r) => r.id)).toEqual([id]);
      expect(await shared.recoverAbandoned(0)).toBeGreaterThanOrEqual(0);
      // ChokaQ's READ COMMITTED ended with its batch: the application's session is as it left it.
      expect(await sessionLevel()).toBe(level);
    },
  );

  it('purge by filter and retention delete under READ_COMMITTED_SNAPSHOT', async () => {
    const queue = 'live.rcsi.purge';
    const archived = await startOne(queue);
    expect(await storage.archiveSucceeded([{ ...archived, durationMs: 1 }])).toHaveLength(1);
    const failed = await startOne(queue);
    await storage.moveToDlq(failed, { reason: FailureReason.FatalError, error: 'Error: live' });
    const purged = await startOne(queue);
    await storage.moveToDlq(purged, { reason: FailureReason.FatalError, error: 'Error: purge me' });

    expect(await storage.purgeDlqByFilter({ queue, ids: [purged.id] }, 10)).toBe(1);
    // Age the remaining rows instead of waiting for them to get old.
    await db.sql(
      `UPDATE [${schema}].[JobsArchive] SET FinishedAtUtc = DATEADD(DAY, -2, FinishedAtUtc) WHERE Id = @0`,
      [archived.id],
    );
    await db.sql(
      `UPDATE [${schema}].[JobsDLQ] SET FailedAtUtc = DATEADD(DAY, -2, FailedAtUtc) WHERE Id = @0`,
      [failed.id],
    );
    const day = 86_400_000;
    const result = await storage.applyRetention({ archiveMs: day, dlqMs: day, metricsMs: day });
    expect(result).toMatchObject({ archive: 1, dlq: 1 });
    expect(await storage.getJob(archived.id)).toBeNull();
    expect(await storage.getJob(failed.id)).toBeNull();
  });

  it('history rows without a payload version (dead-lettered before schema version 12) read as version 1 and resurrect as version 1', async () => {
    const nullable = await db.sql<{ table: string; nullable: boolean | number }>(
      `SELECT OBJECT_NAME(object_id) AS [table], is_nullable AS nullable FROM sys.columns WHERE name = N'PayloadVersion' AND object_id IN (OBJECT_ID(N'[${schema}].[JobsArchive]'), OBJECT_ID(N'[${schema}].[JobsDLQ]')) ORDER BY [table]`,
    );
    expect(nullable.map((r) => [r.table, Number(r.nullable)])).toEqual([
      ['JobsArchive', 1],
      ['JobsDLQ', 1],
    ]);
    const queue = 'live.history.version';
    const dead = await startOne(queue);
    await storage.moveToDlq(dead, { reason: FailureReason.FatalError, error: 'Error: old' });
    await db.sql(`UPDATE [${schema}].[JobsDLQ] SET PayloadVersion = NULL WHERE Id = @0`, [dead.id]);
    expect(await storage.getJob(dead.id)).toMatchObject({ pillar: 'dlq', payloadVersion: 1 });
    expect(await storage.resurrect(dead.id)).toBe(1);
    expect(await storage.getJob(dead.id)).toMatchObject({ pillar: 'hot', payloadVersion: 1 });
  });

  it('keys that differ only by case are different keys on a new install (binary key columns)', async () => {
    const queue = 'live.keys.case';
    const lower = await storage.enqueue({ queue, type: 'invoice.v2', idempotencyKey: 'order-7' });
    const upper = await storage.enqueue({ queue, type: 'Invoice.V2', idempotencyKey: 'Order-7' });
    expect(upper.id).not.toBe(lower.id);
    expect(upper.created).toBe(true);
    const rows = await storage.fetchNextBatch({
      workerId: 'live-keys',
      leaseId: randomUUID(),
      limit: 10,
      start: 0,
      handled: { queues: [], types: [{ queue, type: 'Invoice.V2' }] },
    });
    expect(rows.map((r) => r.id)).toEqual([upper.id]);
  });

  it('claim, rescue and bulk resurrect (UPDLOCK, READPAST) under READ_COMMITTED_SNAPSHOT', async () => {
    const queue = 'live.rcsi.rescue';
    const zombie = await startOne(queue);
    await db.sql(
      `UPDATE [${schema}].[JobsHot] SET HeartbeatUtc = DATEADD(HOUR, -1, HeartbeatUtc) WHERE Id = @0`,
      [zombie.id],
    );
    expect((await storage.archiveZombies(60_000)).dlq).toEqual([zombie.id]);
    expect(await storage.resurrectByFilter({ queue }, 10)).toEqual([zombie.id]);
    expect(await storage.recoverAbandoned(0)).toBe(0);
  });

  it("an error inside a caller's transaction leaves the transaction to the caller", async () => {
    const borrowed = await db.openDataSource({ poolSize: 2 });
    const shared = await createJobStorage({
      dataSource: borrowed,
      schema,
      autoCreateSchema: false,
    });
    const hot = `[${schema}].[JobsHot]`;
    await db.sql(`ALTER TABLE ${hot} ADD CONSTRAINT CK_live_no_boom CHECK (Type <> N'boom')`);
    cleanups.push(() => db.sql(`ALTER TABLE ${hot} DROP CONSTRAINT CK_live_no_boom`));

    const runner = borrowed.createQueryRunner();
    await runner.startTransaction('SERIALIZABLE');
    const kept = await shared.enqueue(
      { queue: 'live.caller', type: 'ok' },
      { transaction: runner },
    );
    // 547 ends the failing INSERT only; without XACT_ABORT the caller's transaction stays open.
    await expect(
      shared.enqueueMany([{ queue: 'live.caller', type: 'boom' }], { transaction: runner }),
    ).rejects.toThrow(/CK_live_no_boom/);
    await runner.commitTransaction();
    await runner.release();
    expect(await shared.getJob(kept.id)).toMatchObject({ id: kept.id });
  });
});
