import { randomUUID } from 'node:crypto';
import type { JobStorage } from '../../libs/chokaq/src/storage';
import {
  MSSQL_TABLES,
  PARTITION_COLUMNS,
  partitionFunctionName,
  partitionLockResource,
  partitionSchemeName,
  type MssqlPartitionedTable,
} from '../../libs/chokaq/src/storage/mssql/mssql.schema';
import { boundariesAhead } from '../../libs/chokaq/src/storage/mssql/mssql-partitions';
import { nextPeriod, periodStart } from '../../libs/chokaq/src/storage/shared/partitions';
import { RecordingLogger, recordingInto } from '../runtime/support/silent-logger';
import {
  archiveDirectly,
  archivedAfterRetry,
  archivedDependent,
} from '../support/archive-directly';
import { type TestSchema, createTestSchema, dialectAvailable } from '../support/test-database';

/*
 * `storage.partitioning` on SQL Server, live (runs only with CHOKAQ_MSSQL_URL, against SQL Server
 * 2016 SP1+ or Azure SQL; skipped everywhere else): the Archive and the DLQ on partition schemes of
 * their own, boundaries made ahead and expired partitions truncated whole by retention with their
 * rows' attempts and edges, the conversion of a plain schema with rows in every pillar, and a
 * partition change that gives up on a lock another session holds. The partition functions and
 * schemes are database-scoped, so each suite drops the ones its schema made after the fixture
 * dropped the tables.
 */
const describeMssql = dialectAvailable('mssql') ? describe : describe.skip;

const DAY = 86_400_000;
const WORKER = 'partition-test-worker';
const TABLES: readonly MssqlPartitionedTable[] = ['archive', 'dlq'];
const RETENTION = { archiveMs: 5 * DAY, dlqMs: 5 * DAY, metricsMs: DAY };

/** The database clock. */
async function dbNow(db: TestSchema): Promise<Date> {
  const [{ now }] = await db.sql<{ now: string }>(
    "SELECT CONVERT(varchar(33), SYSUTCDATETIME(), 126) + 'Z' AS now",
  );
  return new Date(now);
}

/** Where `table` stands: its scheme, its function's boundaries, and its indexes' data spaces. */
async function layoutOf(db: TestSchema, table: MssqlPartitionedTable) {
  const name = db.table(table);
  const [clustered] = await db.sql<{ scheme: string | null }>(
    `SELECT ps.name AS scheme FROM sys.indexes AS c LEFT JOIN sys.partition_schemes AS ps ON ps.data_space_id = c.data_space_id
     WHERE c.object_id = OBJECT_ID(@0) AND c.index_id IN (0, 1)`,
    [name],
  );
  const bounds = await db.sql<{ at: string }>(
    `SELECT CONVERT(varchar(33), CAST(v.value AS datetime2(3)), 126) + 'Z' AS at
     FROM sys.partition_range_values AS v INNER JOIN sys.partition_functions AS f ON f.function_id = v.function_id
     WHERE f.name = @0 ORDER BY v.boundary_id`,
    [partitionFunctionName(db.schema, table)],
  );
  const unaligned = await db.sql<{ name: string }>(
    `SELECT i.name FROM sys.indexes AS i INNER JOIN sys.indexes AS c ON c.object_id = i.object_id AND c.index_id IN (0, 1)
     WHERE i.object_id = OBJECT_ID(@0) AND i.index_id > 1 AND i.data_space_id <> c.data_space_id`,
    [name],
  );
  const key = await db.sql<{ col: string }>(
    `SELECT COL_NAME(ic.object_id, ic.column_id) AS col FROM sys.index_columns AS ic
     WHERE ic.object_id = OBJECT_ID(@0) AND ic.index_id = 1 AND ic.key_ordinal > 0 ORDER BY ic.key_ordinal`,
    [name],
  );
  return {
    scheme: clustered?.scheme ?? null,
    boundaries: bounds.map((b) => new Date(b.at)),
    unaligned: unaligned.map((u) => u.name),
    key: key.map((k) => k.col),
  };
}

/** The partition number of a row of `table`, by the table's own function. */
async function partitionOf(db: TestSchema, table: MssqlPartitionedTable, id: string) {
  const [row] = await db.sql<{ n: number }>(
    `SELECT $PARTITION.[${partitionFunctionName(db.schema, table)}](${PARTITION_COLUMNS[table]}) AS n FROM ${db.table(table)} WHERE Id = @0`,
    [id],
  );
  return row?.n;
}

/** Closes the schema's fixture, then drops the partition schemes and functions it left. */
async function closeAndDropPartitions(db: TestSchema): Promise<void> {
  const schema = db.schema;
  await db.close();
  const admin = createTestSchema('mssql');
  try {
    for (const table of TABLES) {
      await admin
        .sql(`DROP PARTITION SCHEME [${partitionSchemeName(schema, table)}]`)
        .catch(() => undefined);
      await admin
        .sql(`DROP PARTITION FUNCTION [${partitionFunctionName(schema, table)}]`)
        .catch(() => undefined);
    }
  } finally {
    await admin.close().catch(() => undefined);
  }
}

describeMssql('SQL Server partitioned Archive and DLQ [live]', () => {
  describe('a new schema', () => {
    const db = createTestSchema('mssql', { overrides: { partitioning: { period: 'day' } } });
    let storage: JobStorage;

    beforeAll(async () => {
      storage = await db.openStorage();
    }, 120_000);
    afterAll(() => closeAndDropPartitions(db), 120_000);

    it('puts both tables on schemes of their own, by day from today to a week ahead, every index aligned, the key (Id, time)', async () => {
      const now = await dbNow(db);
      for (const table of TABLES) {
        const layout = await layoutOf(db, table);
        expect(layout.scheme).toBe(partitionSchemeName(db.schema, table));
        expect(layout.boundaries).toEqual(boundariesAhead(now, 'day'));
        expect(layout.unaligned).toEqual([]);
        expect(layout.key).toEqual(['Id', PARTITION_COLUMNS[table]]);
      }
    });

    it("archives into today's partition, and an enqueue of the archived id again is refused", async () => {
      const id = await archiveDirectly(storage, 'p-new', WORKER);
      // Partition 2: [today, tomorrow); partition 1 holds what is older than today.
      expect(await partitionOf(db, 'archive', id)).toBe(2);
      expect((await storage.getJob(id))?.pillar).toBe('archive');
      const again = await storage.enqueue({ id, queue: 'p-new', type: 'x', payload: {} });
      expect(again).toEqual({ id, created: false });
      expect(await db.count('hot', 'id = ?', [id])).toBe(0);
    });

    it('opens again without changing anything; two processes’ maintenance at once makes a missing boundary once', async () => {
      const before = await layoutOf(db, 'dlq');
      const last = before.boundaries[before.boundaries.length - 1];
      await db.sql(
        `DECLARE @b datetime2(3) = CONVERT(datetime2(3), @0, 126);
         ALTER PARTITION FUNCTION [${partitionFunctionName(db.schema, 'dlq')}]() MERGE RANGE (@b)`,
        [last.toISOString().slice(0, 23)],
      );
      const other = await db.openStorage();
      await Promise.all([storage.applyRetention(RETENTION), other.applyRetention(RETENTION)]);
      const after = await layoutOf(db, 'dlq');
      // One of the two may have met the other's applock and left it to its next pass.
      if (after.boundaries.length < before.boundaries.length)
        await storage.applyRetention(RETENTION);
      expect((await layoutOf(db, 'dlq')).boundaries).toEqual(before.boundaries);
    });
  });

  describe('retention', () => {
    const db = createTestSchema('mssql', { overrides: { partitioning: { period: 'day' } } });
    let storage: JobStorage;

    beforeAll(async () => {
      storage = await db.openStorage();
    }, 120_000);
    afterAll(() => closeAndDropPartitions(db), 120_000);

    it('truncates an expired partition whole with its rows’ attempts and edges and merges its boundary; the rows before the first boundary go one by one', async () => {
      const now = await dbNow(db);
      // A partition of ten days ago, as maintenance made it then: split into the empty leftmost.
      const from = periodStart(new Date(now.getTime() - 10 * DAY), 'day');
      const to = nextPeriod(from, 'day');
      const pf = partitionFunctionName(db.schema, 'archive');
      for (const at of [from, to]) {
        await db.sql(
          `DECLARE @b datetime2(3) = CONVERT(datetime2(3), @0, 126);
           ALTER PARTITION SCHEME [${partitionSchemeName(db.schema, 'archive')}] NEXT USED [PRIMARY];
           ALTER PARTITION FUNCTION [${pf}]() SPLIT RANGE (@b)`,
          [at.toISOString().slice(0, 23)],
        );
      }

      const retried = await archivedAfterRetry(storage, 'p-ret', WORKER);
      const dependency = await archiveDirectly(storage, 'p-ret', WORKER);
      const dependent = await archivedDependent(storage, 'p-ret', dependency, WORKER);
      const kept = await archiveDirectly(storage, 'p-ret', WORKER);
      expect(await db.count('attempts', 'job_id = ?', [retried])).toBe(1);
      expect(await db.count('dependencies', 'job_id = ?', [dependent])).toBe(1);

      // Ten days ago: the three move into the old partition (an UPDATE of the partitioning
      // column moves a row between partitions); `kept` stays in today's.
      for (const id of [retried, dependency, dependent]) {
        await db.sql(`UPDATE ${db.table('archive')} SET FinishedAtUtc = @0 WHERE Id = @1`, [
          new Date(from.getTime() + 3_600_000).toISOString().slice(0, 23),
          id,
        ]);
      }
      expect(await partitionOf(db, 'archive', retried)).toBe(2);
      // A row older than every boundary: the leftmost partition holds it, deleted row by row.
      const stray = await archiveDirectly(storage, 'p-ret', WORKER);
      await db.sql(`UPDATE ${db.table('archive')} SET FinishedAtUtc = @0 WHERE Id = @1`, [
        new Date(now.getTime() - 30 * DAY).toISOString().slice(0, 23),
        stray,
      ]);
      expect(await partitionOf(db, 'archive', stray)).toBe(1);

      const removed = await storage.applyRetention(RETENTION, {
        action: 'retention.run',
        actor: 'system',
      });

      expect(removed.archive).toBe(4);
      const layout = await layoutOf(db, 'archive');
      expect(layout.boundaries).not.toContainEqual(from);
      expect(layout.boundaries[0]).toEqual(to);
      for (const id of [retried, dependency, dependent, stray]) {
        expect(await storage.getJob(id)).toBeNull();
      }
      expect((await storage.getJob(kept))?.pillar).toBe('archive');
      expect(await db.count('attempts', 'job_id = ?', [retried])).toBe(0);
      expect(await db.count('dependencies', 'job_id = ?', [dependent])).toBe(0);
      const [audit] = await db.sql<{ details: string }>(
        `SELECT TOP (1) Details AS details FROM ${db.table('audit')} WHERE Action = 'retention.run' ORDER BY AtUtc DESC`,
      );
      expect(JSON.parse(audit.details).removed.archive).toBe(4);
    });

    it('a change that meets the partitions applock held elsewhere is logged and left to the next pass, and the pass goes on', async () => {
      const now = await dbNow(db);
      const from = periodStart(new Date(now.getTime() - 20 * DAY), 'day');
      const pf = partitionFunctionName(db.schema, 'dlq');
      for (const at of [from, nextPeriod(from, 'day')]) {
        await db.sql(
          `DECLARE @b datetime2(3) = CONVERT(datetime2(3), @0, 126);
           ALTER PARTITION SCHEME [${partitionSchemeName(db.schema, 'dlq')}] NEXT USED [PRIMARY];
           ALTER PARTITION FUNCTION [${pf}]() SPLIT RANGE (@b)`,
          [at.toISOString().slice(0, 23)],
        );
      }
      const holder = await db.openDataSource({ poolSize: 1 });
      const runner = holder.createQueryRunner();
      const logger = new RecordingLogger();
      try {
        await runner.startTransaction();
        await runner.query(
          `EXEC sp_getapplock @Resource = N'${partitionLockResource(db.schema)}', @LockMode = 'Exclusive', @LockOwner = 'Transaction'`,
        );
        const removed = await recordingInto(logger, () => storage.applyRetention(RETENTION));
        expect(removed.dlq).toBe(0);
        expect(logger.events('PartitionMaintenanceDeferred')).toEqual([
          expect.objectContaining({ table: MSSQL_TABLES.dlq }),
        ]);
      } finally {
        await runner.rollbackTransaction().catch(() => undefined);
        await runner.release();
      }
      await storage.applyRetention(RETENTION);
      expect((await layoutOf(db, 'dlq')).boundaries).not.toContainEqual(from);
    });
  });

  describe('converting a plain schema', () => {
    const db = createTestSchema('mssql');
    let plain: JobStorage;

    beforeAll(async () => {
      plain = await db.openStorage();
    }, 120_000);
    afterAll(() => closeAndDropPartitions(db), 120_000);

    /** Every row of the three pillars and the side tables, as JSON text, in a stable order. */
    async function everything(): Promise<Record<string, string[]>> {
      const out: Record<string, string[]> = {};
      for (const table of ['hot', 'archive', 'dlq', 'attempts', 'dependencies'] as const) {
        const rows = await db.sql<Record<string, unknown>>(`SELECT * FROM ${db.table(table)}`);
        out[table] = rows
          .map((row) => JSON.stringify(Object.entries(row).sort(([a], [b]) => a.localeCompare(b))))
          .sort();
      }
      return out;
    }

    it('keeps every row of every pillar where it can be read, and goes on archiving', async () => {
      await plain.enqueue({ queue: 'p-conv', type: 'waits', payload: { n: 1 } });
      const archived = await archivedAfterRetry(plain, 'p-conv', WORKER);
      const dead = (await plain.enqueue({ queue: 'p-conv', type: 'dead', payload: {} })).id;
      expect((await plain.cancel([dead])).cancelled).toEqual([dead]);
      const running = await plain.enqueue({ queue: 'p-conv', type: 'runs', payload: {} });
      const leaseId = randomUUID();
      const handled = { queues: [], types: [{ queue: 'p-conv', type: 'runs' }] };
      await plain.fetchNextBatch({ workerId: WORKER, leaseId, limit: 1, handled });
      await plain.markAsProcessing([{ id: running.id, workerId: WORKER, leaseId }]);
      const before = await everything();
      expect(before.dlq).toHaveLength(1);
      expect(before.attempts).toHaveLength(1);

      const partitioned = await db.openStorage({ partitioning: { period: 'week' } });

      expect(await everything()).toEqual(before);
      const now = await dbNow(db);
      for (const table of TABLES) {
        const layout = await layoutOf(db, table);
        expect(layout.scheme).toBe(partitionSchemeName(db.schema, table));
        expect(layout.boundaries).toEqual(boundariesAhead(now, 'week'));
        expect(layout.unaligned).toEqual([]);
      }
      expect((await partitioned.getJob(archived, { attempts: true }))?.attempts).toHaveLength(1);
      expect((await partitioned.getJob(dead))?.pillar).toBe('dlq');
      expect(
        await partitioned.archiveSucceeded([
          { id: running.id, workerId: WORKER, leaseId, durationMs: 3 },
        ]),
      ).toHaveLength(1);
      // This week's partition: 2 (partition 1 is everything before this week).
      expect(await partitionOf(db, 'archive', running.id)).toBe(2);
      expect(await partitioned.resurrect(dead)).toBe(1);
      expect((await partitioned.getJob(dead))?.pillar).toBe('hot');
    });
  });
});
