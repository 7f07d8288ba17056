import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import { type OwnCluster, startOwnCluster } from '../../bench/lib/pg-cluster';
import { makePastPartitions } from '../../bench/lib/pg-partitions';
import { JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import type { JobStorage } from '../../libs/chokaq/src/storage';
import {
  enqueue,
  enqueueParams,
  getJobArchive,
  listJobs,
  listWhere,
  quoteSchema,
} from '../../libs/chokaq/src/storage/postgres/sql';
import { type ValidatedJob, validateNewJob } from '../../libs/chokaq/src/validation/validate-job';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { encodeListCursor } from '../../libs/chokaq/src/validation/list-cursor';
import { assertListQuery } from '../../libs/chokaq/src/validation/validate-list';
import { type PlanNode, planNodes, planOf } from '../support/pg-plan';
import { dayStamp, nextPeriod, periodStart } from '../../libs/chokaq/src/storage/shared/partitions';
import { RecordingLogger, recordingInto } from '../runtime/support/silent-logger';
import {
  archiveDirectly,
  archivePending,
  archivedAfterRetry,
  archivedDependent,
} from '../support/archive-directly';
import { PG_URL } from '../support/env';
import { waitFor } from '../support/wait-for';
import { type TestSchema, createTestSchema, describePostgres } from '../support/test-database';

/*
 * `storage.partitioning` on PostgreSQL: the Archive and the DLQ as declarative partitions by
 * finish time, made ahead by maintenance and dropped whole by retention; the conversion of a plain
 * schema with rows in every pillar. On the shared test server, in schemas of their own.
 */

const DAY = 86_400_000;
const WORKER = 'partition-test-worker';

/** What the helpers below need of a database: its ChokaQ schema and raw SQL. */
type Raw = Pick<TestSchema, 'schema' | 'sql'>;

/** The partitions of `table`, by name, and whether it is partitioned. */
async function layoutOf(db: Raw, table: 'jobs_archive' | 'jobs_dlq') {
  const [parent] = await db.sql<{ kind: string }>(
    `SELECT c.relkind::text AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relname = $2`,
    [db.schema, table],
  );
  const parts = await db.sql<{ name: string; bound: string }>(
    `SELECT p.relname AS name, pg_get_expr(p.relpartbound, p.oid) AS bound
     FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
     WHERE i.inhparent = ($1 || '.' || $2)::regclass ORDER BY 1`,
    [db.schema, table],
  );
  return { kind: parent?.kind, partitions: parts.map((p) => p.name), bounds: parts };
}

/** The name maintenance gives the partition of `table` for the `period` that starts at `from`. */
function periodPartition(table: string, from: Date, period: 'day' | 'week' = 'day'): string {
  return `${table}_${dayStamp(from)}_${dayStamp(nextPeriod(from, period))}`;
}

/** The newest partition of a period among `partitions` (neither the default nor a kept old table). */
function newestPeriodPartition(partitions: readonly string[]): string {
  return partitions
    .filter((p) => /_\d{8}_\d{8}$/.test(p))
    .sort()
    .pop()!;
}

/** Where a row of `table` is stored: the partition's name. */
async function partitionOf(db: Raw, table: string, id: string): Promise<string | undefined> {
  const [row] = await db.sql<{ name: string }>(
    `SELECT tableoid::regclass::text AS name FROM ${db.schema}.${table} WHERE id = $1`,
    [id],
  );
  return row?.name.replace(`${db.schema}.`, '');
}

/**
 * Makes the partitions of `table` for the days from the one holding `fromMs` up to the one holding
 * `untilMs` (excluded), as maintenance would have made them then (the bench's helper, on a
 * connection of its own).
 */
async function pastPartitions(
  schema: string,
  table: 'jobs_archive' | 'jobs_dlq',
  fromMs: number,
  untilMs: number,
): Promise<void> {
  const client = new Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const session = {
      exec: async (sql: string, params?: unknown[]) => void (await client.query(sql, params)),
      rows: async <T>(sql: string, params?: unknown[]) =>
        (await client.query(sql, params)).rows as T[],
    };
    await makePastPartitions(session, schema, table, 'day', fromMs, untilMs);
  } finally {
    await client.end();
  }
}

const RETENTION = { archiveMs: 5 * DAY, dlqMs: 5 * DAY, metricsMs: DAY };

describePostgres('PostgreSQL partitioned Archive and DLQ', () => {
  describe('a new schema', () => {
    const db = createTestSchema('postgres', {
      overrides: { partitioning: { period: 'day' }, poolSize: 4 },
    });
    let storage: JobStorage;
    const logger = new RecordingLogger();

    beforeAll(async () => {
      storage = await recordingInto(logger, () => db.openStorage());
    });
    afterAll(() => db.close());

    it('logs the conversion of the empty tables, which are replaced, and the partitions made', async () => {
      expect(logger.events('ArchivePartitioned')).toEqual([
        expect.objectContaining({
          eventId: 5050,
          dialect: 'postgres',
          schema: db.schema,
          table: 'jobs_archive',
          period: 'day',
          keptRows: false,
        }),
        expect.objectContaining({ table: 'jobs_dlq', keptRows: false }),
      ]);
      const made = logger.events('PartitionsChanged');
      expect(made.map((e) => [e.table, (e.created as string[]).length, e.dropped])).toEqual([
        ['jobs_archive', 8, []],
        ['jobs_dlq', 8, []],
      ]);
      // Nothing of the plain tables is left behind.
      expect(
        await db.sql(
          `SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = $1 AND relname LIKE '%\\_min\\_%'`,
          [db.schema],
        ),
      ).toEqual([]);
    });

    it('is partitioned by day from today, a week ahead, with a default partition', async () => {
      const [{ now }] = await db.sql<{ now: Date }>('SELECT now() AS now');
      const today = periodStart(now, 'day');
      const expected = ['jobs_archive_default'];
      for (let d = today; expected.length < 9; d = nextPeriod(d, 'day')) {
        expected.push(periodPartition('jobs_archive', d));
      }
      const archive = await layoutOf(db, 'jobs_archive');
      expect(archive.kind).toBe('p');
      expect(archive.partitions.sort()).toEqual(expected.sort());
      const dlq = await layoutOf(db, 'jobs_dlq');
      expect(dlq.kind).toBe('p');
      expect(dlq.partitions).toHaveLength(9);
      // The primary key holds the partition key; an id's uniqueness across pillars is enqueue's.
      const [pk] = await db.sql<{ def: string }>(
        `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
         WHERE conrelid = $1::regclass AND contype = 'p'`,
        [`${db.schema}.jobs_archive`],
      );
      expect(pk.def).toBe('PRIMARY KEY (id, finished_at_utc)');
    });

    it("archives into today's partition, and a retried enqueue of an archived id is refused", async () => {
      const id = await archiveDirectly(storage, 'p-new', WORKER);
      const [{ now }] = await db.sql<{ now: Date }>('SELECT now() AS now');
      const today = periodStart(now, 'day');
      expect(await partitionOf(db, 'jobs_archive', id)).toBe(
        periodPartition('jobs_archive', today),
      );
      expect((await storage.getJob(id))?.pillar).toBe('archive');
      const again = await storage.enqueue({ id, queue: 'p-new', type: 'x', payload: {} });
      expect(again).toEqual({ id, created: false });
      expect(await db.count('hot', 'id = ?', [id])).toBe(0);
    });

    it("estimates the Archive's rows from its partitions (getSummary)", async () => {
      await archiveDirectly(storage, 'p-new', WORKER);
      await db.sql(`ANALYZE ${db.schema}.jobs_archive`);
      const [{ n }] = await db.sql<{ n: string }>(
        `SELECT count(*) AS n FROM ${db.schema}.jobs_archive`,
      );
      expect(Number(n)).toBeGreaterThanOrEqual(2);
      expect((await storage.getSummary()).archived).toBe(Number(n));
    });

    it('maintenance of two processes at once makes a missing partition once', async () => {
      // Opened first: a storage opening makes the missing partitions itself (ensureSchema).
      const other = await db.openStorage();
      const before = await layoutOf(db, 'jobs_dlq');
      const last = newestPeriodPartition(before.partitions);
      await db.sql(`DROP TABLE ${db.schema}.${last}`);
      // Both read the layout, then queue on the partitions' advisory lock this session holds, so
      // both set out to make the same partition; the second must find it made.
      const holder = new Client({ connectionString: PG_URL });
      await holder.connect();
      const logger = new RecordingLogger();
      try {
        await recordingInto(logger, async () => {
          await holder.query('BEGIN');
          // The key the storage's changes lock (written out here: a test of that lock, not a use).
          await holder.query(
            `SELECT pg_advisory_xact_lock(hashtextextended('chokaq.partitions:' || $1, 0))`,
            [db.schema],
          );
          const passes = Promise.all([
            storage.applyRetention(RETENTION),
            other.applyRetention(RETENTION),
          ]);
          passes.catch(() => undefined);
          await waitFor(
            'both passes waiting on the partitions lock',
            async () => {
              const [{ n }] = await db.sql<{ n: string }>(
                `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`,
              );
              return Number(n) === 2;
            },
            { timeoutMs: 5_000, intervalMs: 20 },
          );
          await holder.query('COMMIT');
          await passes;
        });
      } finally {
        await holder.end();
      }
      expect((await layoutOf(db, 'jobs_dlq')).partitions.sort()).toEqual(before.partitions.sort());
      expect(logger.events('PartitionsChanged')).toEqual([
        expect.objectContaining({ eventId: 5051, table: 'jobs_dlq', created: [last], dropped: [] }),
      ]);
      expect(logger.events('PartitionMaintenanceDeferred')).toEqual([]);
    });

    it('without the option, goes on making partitions of the newest one’s period', async () => {
      const before = await layoutOf(db, 'jobs_archive');
      const last = newestPeriodPartition(before.partitions);
      await db.sql(`DROP TABLE ${db.schema}.${last}`);
      const unconfigured = await db.openStorage({ partitioning: undefined });
      await unconfigured.applyRetention(RETENTION);
      expect((await layoutOf(db, 'jobs_archive')).partitions.sort()).toEqual(
        before.partitions.sort(),
      );
    });
  });

  describe('maintenance', () => {
    const db = createTestSchema('postgres', {
      overrides: { partitioning: { period: 'day' }, poolSize: 4 },
    });
    let storage: JobStorage;

    beforeAll(async () => {
      storage = await db.openStorage();
    });
    afterAll(() => db.close());

    it('moves rows the default partition took into the partition made for them', async () => {
      const s = quoteSchema(db.schema);
      const [{ now }] = await db.sql<{ now: Date }>('SELECT now() AS now');
      const from = nextPeriod(nextPeriod(periodStart(now, 'day'), 'day'), 'day');
      const name = periodPartition('jobs_dlq', from);
      await db.sql(`DROP TABLE ${s}.${name}`);
      // A row failed in that day (as if maintenance had not run for long): the default holds it.
      const { id } = await storage.enqueue({ queue: 'p-def', type: 't', payload: {} });
      await storage.cancel([id]);
      await db.sql(`UPDATE ${s}.jobs_dlq SET failed_at_utc = $1 WHERE id = $2`, [
        new Date(from.getTime() + 60_000),
        id,
      ]);
      expect(await partitionOf(db, 'jobs_dlq', id)).toBe('jobs_dlq_default');

      await storage.applyRetention(RETENTION);

      expect(await partitionOf(db, 'jobs_dlq', id)).toBe(name);
      expect(await db.sql(`SELECT 1 FROM ${s}.jobs_dlq_default`)).toEqual([]);
      expect((await storage.getJob(id))?.pillar).toBe('dlq');
    });

    it('leaves a partition whose lock is not granted within a second to the next pass', async () => {
      const s = quoteSchema(db.schema);
      const [{ now }] = await db.sql<{ now: Date }>('SELECT now() AS now');
      const from = nextPeriod(periodStart(now, 'day'), 'day');
      const name = periodPartition('jobs_archive', from);
      await db.sql(`DROP TABLE ${s}.${name}`);
      // A long read of the default partition: making a partition must lock it.
      const reader = new Client({ connectionString: PG_URL });
      await reader.connect();
      const logger = new RecordingLogger();
      try {
        await recordingInto(logger, async () => {
          await reader.query('BEGIN');
          await reader.query(`SELECT count(*) FROM ${s}.jobs_archive_default`);
          const result = await storage.applyRetention(RETENTION);
          expect(result.archive).toBe(0);
          expect(logger.events('PartitionMaintenanceDeferred')).toEqual([
            expect.objectContaining({ table: 'jobs_archive', partition: name }),
          ]);
          expect((await layoutOf(db, 'jobs_archive')).partitions).not.toContain(name);
          // The rest of the pass went on: the DLQ's partitions are all there.
          expect((await layoutOf(db, 'jobs_dlq')).partitions).toHaveLength(9);
        });
      } finally {
        await reader.end();
      }
      await storage.applyRetention(RETENTION);
      expect((await layoutOf(db, 'jobs_archive')).partitions).toContain(name);
    });

    it('fails a pass loudly when a partition cannot be made for another reason than a lock', async () => {
      const s = quoteSchema(db.schema);
      const [{ now }] = await db.sql<{ now: Date }>('SELECT now() AS now');
      const from = nextPeriod(periodStart(now, 'day'), 'day');
      const name = periodPartition('jobs_archive', from);
      await db.sql(`DROP TABLE ${s}.${name}`);
      await db.sql(`ALTER TABLE ${s}.jobs_archive DETACH PARTITION ${s}.jobs_archive_default`);
      await db.sql(`ALTER TABLE ${s}.jobs_archive_default RENAME TO set_aside`);
      try {
        await expect(storage.applyRetention(RETENTION)).rejects.toThrow(/jobs_archive_default/);
      } finally {
        await db.sql(`ALTER TABLE ${s}.set_aside RENAME TO jobs_archive_default`);
        await db.sql(
          `ALTER TABLE ${s}.jobs_archive ATTACH PARTITION ${s}.jobs_archive_default DEFAULT`,
        );
      }
      await storage.applyRetention(RETENTION);
      expect((await layoutOf(db, 'jobs_archive')).partitions).toContain(name);
    });
  });

  describe('a plain schema', () => {
    const db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
    let storage: JobStorage;

    beforeAll(async () => {
      storage = await db.openStorage();
    });
    afterAll(() => db.close());

    it('keeps its tables and its row-by-row retention', async () => {
      const old = await archiveDirectly(storage, 'p-plain', WORKER);
      const recent = await archiveDirectly(storage, 'p-plain', WORKER);
      await db.sql(`UPDATE ${db.schema}.jobs_archive SET finished_at_utc = $1 WHERE id = $2`, [
        new Date(Date.now() - 6 * DAY),
        old,
      ]);
      expect((await storage.applyRetention(RETENTION)).archive).toBe(1);
      expect(await storage.getJob(old)).toBeNull();
      expect((await storage.getJob(recent))?.pillar).toBe('archive');
      expect(await layoutOf(db, 'jobs_archive')).toEqual({ kind: 'r', partitions: [], bounds: [] });
      expect((await layoutOf(db, 'jobs_dlq')).kind).toBe('r');
    });
  });

  describe('retention', () => {
    const db = createTestSchema('postgres', {
      overrides: { partitioning: { period: 'day' }, poolSize: 4 },
    });
    let storage: JobStorage;
    let s: string;

    beforeAll(async () => {
      storage = await db.openStorage();
      s = quoteSchema(db.schema);
    });
    afterAll(() => db.close());

    it('drops an expired partition whole with its rows’ attempts and edges; the default’s old rows go singly', async () => {
      const [{ now }] = await db.sql<{ now: Date }>('SELECT now() AS now');
      // A partition of ten days ago, as maintenance made it then.
      const from = periodStart(new Date(now.getTime() - 10 * DAY), 'day');
      const to = nextPeriod(from, 'day');
      const old = periodPartition('jobs_archive', from);
      await pastPartitions(db.schema, 'jobs_archive', from.getTime(), to.getTime());

      const retried = await archivedAfterRetry(storage, 'p-ret', WORKER);
      const dependency = await archiveDirectly(storage, 'p-ret', WORKER);
      const dependent = await archivedDependent(storage, 'p-ret', dependency, WORKER);
      const kept = await archiveDirectly(storage, 'p-ret', WORKER);
      expect(await db.count('attempts', 'job_id = ?', [retried])).toBe(1);
      expect(await db.count('dependencies', 'job_id = ?', [dependent])).toBe(1);

      // Ten days ago: the three move into the old partition; `kept` stays in today's.
      await db.sql(
        `UPDATE ${s}.jobs_archive SET finished_at_utc = $1 WHERE id = ANY ($2::text[])`,
        [new Date(from.getTime() + 3_600_000), [retried, dependency, dependent]],
      );
      expect(await partitionOf(db, 'jobs_archive', retried)).toBe(old);
      // A row no partition takes (older than any): the default holds it, retention deletes it.
      const stray = await archiveDirectly(storage, 'p-ret', WORKER);
      await db.sql(`UPDATE ${s}.jobs_archive SET finished_at_utc = $1 WHERE id = $2`, [
        new Date(now.getTime() - 30 * DAY),
        stray,
      ]);
      expect(await partitionOf(db, 'jobs_archive', stray)).toBe('jobs_archive_default');
      // A row of today's partition older than an hour: the partition is not wholly past a
      // retention of an hour, so the row stays (no row of a period's partition goes singly).
      const hourOld = await archiveDirectly(storage, 'p-ret', WORKER);
      const todayStart = periodStart(now, 'day');
      await db.sql(`UPDATE ${s}.jobs_archive SET finished_at_utc = $1 WHERE id = $2`, [
        new Date(Math.max(todayStart.getTime(), now.getTime() - 2 * 3_600_000)),
        hourOld,
      ]);
      const logger = new RecordingLogger();
      const removed = await recordingInto(logger, async () => {
        const result = await storage.applyRetention(
          { ...RETENTION, archiveMs: 5 * DAY },
          { action: 'retention.run', actor: 'system' },
        );
        expect(
          (await storage.applyRetention({ ...RETENTION, archiveMs: 3_600_000 / 2 })).archive,
        ).toBe(0);
        return result;
      });
      expect((await storage.getJob(hourOld))?.pillar).toBe('archive');
      expect(logger.events('PartitionsChanged')).toEqual([
        expect.objectContaining({ table: 'jobs_archive', created: [], dropped: [old] }),
      ]);

      expect(removed.archive).toBe(4);
      expect((await layoutOf(db, 'jobs_archive')).partitions).not.toContain(old);
      for (const id of [retried, dependency, dependent, stray]) {
        expect(await storage.getJob(id)).toBeNull();
      }
      expect((await storage.getJob(kept))?.pillar).toBe('archive');
      expect(await db.count('attempts', 'job_id = ?', [retried])).toBe(0);
      expect(await db.count('dependencies', 'job_id = ?', [dependent])).toBe(0);
      // The stray row was deleted from the default partition; today's kept its row.
      expect(await partitionOf(db, 'jobs_archive', kept)).not.toBe('jobs_archive_default');
      expect(await db.sql(`SELECT 1 FROM ${s}.jobs_archive_default`)).toEqual([]);
      const [audit] = await db.sql<{ details: string }>(
        `SELECT details FROM ${s}.audit_log WHERE action = 'retention.run' ORDER BY at_utc DESC LIMIT 1`,
      );
      expect(JSON.parse(audit.details).removed.archive).toBe(4);
    });
  });

  describe('converting a copy of an installed database', () => {
    // A cluster of the test's own: the installed database is copied (CREATE DATABASE … TEMPLATE)
    // and the copy converted, so the original's rows are there to compare with.
    let cluster: OwnCluster;
    const opened: JobStorage[] = [];
    const pools: Pool[] = [];
    const on = (database: string) => {
      const url = `${cluster.url.replace(/\/postgres$/, '')}/${database}`;
      const pool = new Pool({ connectionString: url, max: 2 });
      pool.on('error', () => undefined);
      pools.push(pool);
      const raw: Raw = {
        schema: 'chokaq',
        sql: async <T>(query: string, params?: unknown[]) =>
          (await pool.query(query, params)).rows as T[],
      };
      const open = async (partitioning?: { period: 'week' }) => {
        const storage = await createJobStorage(
          { type: 'postgres', url, poolSize: 4, ...(partitioning ? { partitioning } : {}) },
          { logger: (context) => new Logger(context) },
        );
        opened.push(storage);
        return storage;
      };
      return { raw, open, end: () => pool.end() };
    };

    beforeAll(async () => {
      cluster = await startOwnCluster([]);
      const admin = new Client({ connectionString: cluster.url });
      await admin.connect();
      await admin.query('CREATE DATABASE installed');
      await admin.end();
    }, 60_000);
    afterAll(async () => {
      await Promise.all(opened.map((s) => s.close().catch(() => undefined)));
      await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
      await cluster?.stop();
    });

    /** Every row of the three pillars and the side tables, as JSON text, in a stable order. */
    async function everything(raw: Raw): Promise<Record<string, string[]>> {
      const tables = [
        'jobs_hot',
        'jobs_archive',
        'jobs_dlq',
        'job_attempts',
        'job_dependencies',
        'stats_summary',
      ];
      const out: Record<string, string[]> = {};
      for (const table of tables) {
        const rows = await raw.sql<{ j: string }>(
          `SELECT row_to_json(t)::text AS j FROM chokaq.${table} t ORDER BY 1`,
        );
        out[table] = rows.map((r) => r.j);
      }
      return out;
    }

    it('keeps every row of every pillar where it can be read, and goes on archiving', async () => {
      const installed = on('installed');
      const plain = await installed.open();
      await plain.enqueue({ queue: 'p-conv', type: 'pending', payload: { n: 1 } });
      const archived = await archivedAfterRetry(plain, 'p-conv', WORKER);
      const dead = (await plain.enqueue({ queue: 'p-conv', type: 'dead', payload: {} })).id;
      expect((await plain.cancel([dead])).cancelled).toEqual([dead]);
      const running = await plain.enqueue({ queue: 'p-conv', type: 'runs', payload: {} });
      const leaseId = randomUUID();
      const handled = { queues: [], types: [{ queue: 'p-conv', type: 'runs' }] };
      await plain.fetchNextBatch({ workerId: WORKER, leaseId, limit: 1, handled });
      await plain.markAsProcessing([{ id: running.id, workerId: WORKER, leaseId }]);
      const waiting = await plain.enqueue({
        queue: 'p-conv',
        type: 'after',
        payload: {},
        dependsOn: [running.id],
      });
      // An index of the application's own on the Archive: the conversion keeps it.
      await installed.raw.sql('CREATE INDEX app_archive_type ON chokaq.jobs_archive (type)');
      const before = await everything(installed.raw);
      expect(before.jobs_dlq).toHaveLength(1);
      expect(before.job_attempts).toHaveLength(1);
      expect(before.job_dependencies).toHaveLength(1);
      await plain.close();
      await installed.end();
      const admin = new Client({ connectionString: cluster.url });
      await admin.connect();
      await admin.query('CREATE DATABASE copy TEMPLATE installed');
      await admin.end();

      const copy = on('copy');
      const db = copy.raw;
      const logger = new RecordingLogger();
      const partitioned = await recordingInto(logger, () => copy.open({ period: 'week' }));
      expect(logger.events('ArchivePartitioned')).toEqual([
        expect.objectContaining({ table: 'jobs_archive', period: 'week', keptRows: true }),
        expect.objectContaining({ table: 'jobs_dlq', period: 'week', keptRows: true }),
      ]);

      expect(await everything(db)).toEqual(before);
      const [{ now }] = await db.sql<{ now: Date }>('SELECT now() AS now');
      const bound = nextPeriod(periodStart(now, 'week'), 'week');
      const legacy = `jobs_archive_min_${dayStamp(bound)}`;
      const archive = await layoutOf(db, 'jobs_archive');
      expect(archive.kind).toBe('p');
      expect(archive.partitions).toContain(legacy);
      expect(archive.partitions).toContain(periodPartition('jobs_archive', bound, 'week'));
      expect(archive.partitions).toHaveLength(1 + 1 + 4);
      const indexes = await db.sql<{ name: string; relation: string }>(
        `SELECT indexrelid::regclass::text AS name, indrelid::regclass::text AS relation
         FROM pg_index WHERE indexrelid::regclass::text LIKE '%app_archive_type%'`,
      );
      expect(indexes.map((i) => [i.name, i.relation]).sort()).toEqual([
        ['chokaq.app_archive_type', 'chokaq.jobs_archive'],
        [`chokaq.${legacy}_app_archive_type`, `chokaq.${legacy}`],
      ]);
      expect(await partitionOf(db, 'jobs_archive', archived)).toBe(legacy);
      expect((await partitioned.getJob(archived, { attempts: true }))?.attempts).toHaveLength(1);
      expect((await partitioned.getJob(dead))?.pillar).toBe('dlq');
      // The running job finishes into the new layout (the kept partition covers this week), and
      // releases the job that waited on it.
      expect(
        await partitioned.archiveSucceeded([
          { id: running.id, workerId: WORKER, leaseId, durationMs: 3 },
        ]),
      ).toHaveLength(1);
      expect(await partitionOf(db, 'jobs_archive', running.id)).toBe(legacy);
      expect((await partitioned.getJob(waiting.id))?.status).toBe(JobStatus.Pending);
      // The DLQ's rows are kept the same way, and a resurrect takes one back out.
      expect((await layoutOf(db, 'jobs_dlq')).partitions).toContain(
        `jobs_dlq_min_${dayStamp(bound)}`,
      );
      expect(await partitioned.resurrect(dead)).toBe(1);
      expect((await partitioned.getJob(dead))?.pillar).toBe('hot');

      // The kept rows are retained row by row until all of them expire: one ten days old goes,
      // the kept partition stays.
      await db.sql('UPDATE chokaq.jobs_archive SET finished_at_utc = $1 WHERE id = $2', [
        new Date(now.getTime() - 10 * DAY),
        archived,
      ]);
      expect((await partitioned.applyRetention(RETENTION)).archive).toBe(1);
      expect(await partitioned.getJob(archived)).toBeNull();
      expect((await layoutOf(db, 'jobs_archive')).partitions).toContain(legacy);
      expect(await partitionOf(db, 'jobs_archive', running.id)).toBe(legacy);

      // Opened without the option, maintenance goes on by the newest partition's period (a week).
      const last = newestPeriodPartition(archive.partitions);
      await db.sql(`DROP TABLE chokaq.${last}`);
      await (await copy.open()).applyRetention(RETENTION);
      expect((await layoutOf(db, 'jobs_archive')).partitions.sort()).toEqual(
        archive.partitions.sort(),
      );
    }, 60_000);
  });

  describe('reads', () => {
    const db = createTestSchema('postgres', {
      overrides: { partitioning: { period: 'day' }, poolSize: 4 },
    });
    let storage: JobStorage;
    let client: Client;
    let today: Date;
    const PAST_DAYS = 4;
    const PER_DAY = 5_000;

    beforeAll(async () => {
      storage = await db.openStorage();
      const s = quoteSchema(db.schema);
      const [{ now }] = await db.sql<{ now: Date }>('SELECT now() AS now');
      today = periodStart(now, 'day');
      // Four past days made as maintenance made them then, each with 5,000 rows, and 500 today.
      const past = today.getTime() - PAST_DAYS * DAY;
      await pastPartitions(db.schema, 'jobs_archive', past, today.getTime());
      await db.sql(
        `
        INSERT INTO ${s}.jobs_archive (id, queue, type, payload, priority, attempt_count,
          created_at_utc, enqueued_at_utc, finished_at_utc, duration_ms)
        SELECT gen_random_uuid()::text, 'q' || (g % 5), 't', '{}', 10, 1, $1, $1,
               $1::timestamptz + (g * ${DAY / PER_DAY} || ' ms')::interval, 1
        FROM generate_series(0, ${PAST_DAYS * PER_DAY + PER_DAY / 10}) g`,
        [new Date(today.getTime() - PAST_DAYS * DAY)],
      );
      await db.sql(`ANALYZE ${s}.jobs_archive`);
      // The DLQ the same way, four in five rows failed for the reason whose code is the smallest
      // (MaxRetriesExceeded, 0), the rest Cancelled.
      await pastPartitions(db.schema, 'jobs_dlq', past, today.getTime());
      await db.sql(
        `
        INSERT INTO ${s}.jobs_dlq (id, queue, type, payload, priority, status, attempt_count,
          created_at_utc, enqueued_at_utc, failure_reason, error_details, failed_at_utc)
        SELECT gen_random_uuid()::text, 'q' || (g % 5), 't', '{}', 10, 4, 3, $1, $1,
               CASE WHEN g % 5 = 0 THEN 1 ELSE 0 END, 'Error: boom',
               $1::timestamptz + (g * ${DAY / PER_DAY} || ' ms')::interval
        FROM generate_series(0, ${PAST_DAYS * PER_DAY + PER_DAY / 10}) g`,
        [new Date(today.getTime() - PAST_DAYS * DAY)],
      );
      await db.sql(`ANALYZE ${s}.jobs_dlq`);
      client = new Client({ connectionString: PG_URL });
      await client.connect();
    }, 60_000);
    afterAll(async () => {
      await client?.end();
      await db.close();
    });

    async function explain(sql: string, params: unknown[]): Promise<PlanNode[]> {
      const { rows } = await client.query(
        `EXPLAIN (ANALYZE true, COSTS false, TIMING false, FORMAT JSON) ${sql}`,
        params,
      );
      return planNodes(planOf(rows));
    }

    /** The plan of the page `storage.list…(query)` reads, with the values it binds. */
    async function explainList(pillar: 'archive' | 'dlq', query: object): Promise<PlanNode[]> {
      const request = assertListQuery(pillar, query);
      const params: unknown[] = [];
      const where = listWhere(request as never, params);
      params.push(request.limit + 1);
      return explain(listJobs(quoteSchema(db.schema), request, where, `$${params.length}`), params);
    }

    /** Rows the plan's scans returned, over every partition. */
    const rowsRead = (plan: PlanNode[]) =>
      plan
        .filter((n) => n['Relation Name'] !== undefined)
        .reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);

    const scanned = (plan: PlanNode[]) =>
      [...new Set(plan.map((n) => n['Relation Name']).filter((r) => r !== undefined))].sort();

    it('a list with a time range reads only the partitions of that range', async () => {
      const plan = await explainList('archive', { filter: { from: today }, limit: 50 });
      const past = scanned(plan).filter((r) => r < `jobs_archive_${dayStamp(today)}`);
      expect(past).toEqual([]);
      expect(scanned(plan)).toContain(periodPartition('jobs_archive', today));
      const page = await storage.listArchive({ filter: { from: today }, limit: 50 });
      expect(page.items.length).toBeGreaterThan(0);
      for (const item of page.items) {
        expect(item.finishedAtUtc!.getTime()).toBeGreaterThanOrEqual(today.getTime());
      }
    });

    it('the first page reads each partition by its index in list order, sorting nothing whole', async () => {
      const plan = await explainList('archive', { limit: 50 });
      expect(plan.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
      expect(
        plan.filter((n) => /Sort/.test(n['Node Type']) && (n['Actual Rows'] ?? 0) > 52),
      ).toEqual([]);
      expect(rowsRead(plan)).toBeLessThanOrEqual(51 * 2);
    });

    it('a deep page of one failure reason merges the partitions’ index walks from the cursor', async () => {
      const s = quoteSchema(db.schema);
      // The cursor after the 4,950th row of reason 0, newest first.
      const [row] = await db.sql<{ at: string; id: string }>(
        `SELECT to_char(failed_at_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, id
         FROM ${s}.jobs_dlq WHERE failure_reason = 0
         ORDER BY failed_at_utc DESC, id COLLATE "C" DESC OFFSET 4949 LIMIT 1`,
      );
      const query = {
        filter: { reason: FailureReason.MaxRetriesExceeded },
        limit: 50,
        cursor: encodeListCursor('dlq', 'newest', row),
      };
      const plan = await explainList('dlq', query);
      expect(
        plan.filter((n) => /Sort/.test(n['Node Type']) && (n['Actual Rows'] ?? 0) > 52),
      ).toEqual([]);
      expect(rowsRead(plan)).toBeLessThanOrEqual(51 * 2);
      // The page the storage reads is the next 50 of that reason, in order, after the cursor.
      const page = await storage.listDlq(query);
      expect(page.items).toHaveLength(50);
      const [next] = await db.sql<{ id: string }>(
        `SELECT id FROM ${s}.jobs_dlq WHERE failure_reason = 0
         ORDER BY failed_at_utc DESC, id COLLATE "C" DESC OFFSET 4950 LIMIT 1`,
      );
      expect(page.items[0].id).toBe(next.id);
      expect(page.items.map((j) => j.id)).not.toContain(row.id);
    });

    it('an enqueue probes an id the library made only where a job finished since its first attempt could be; a given id, everywhere', async () => {
      const s = quoteSchema(db.schema);
      const probed = async (job: ValidatedJob, probeBackMs: number | null) => {
        await client.query('BEGIN');
        try {
          const plan = await explain(enqueue(s, null), enqueueParams([job], probeBackMs));
          // Partitions the plan read: one pruned at execution is in a node that never ran.
          return scanned(plan.filter((n) => (n['Actual Loops'] ?? 0) > 0)).filter((r) =>
            /^jobs_(archive|dlq)_/.test(r),
          );
        } finally {
          await client.query('ROLLBACK');
        }
      };
      const made = validateNewJob({ queue: 'probes' });
      expect(made.idGiven).toBe(false);
      const given = validateNewJob({ queue: 'probes', id: randomUUID() });
      expect(given.idGiven).toBe(true);
      const everywhere = await probed(given, 60_000);
      // Today's and the four past days', with the defaults: every partition that has rows.
      expect(everywhere).toEqual(
        expect.arrayContaining([
          periodPartition('jobs_archive', new Date(today.getTime() - PAST_DAYS * DAY)),
          periodPartition('jobs_dlq', new Date(today.getTime() - PAST_DAYS * DAY)),
        ]),
      );
      expect(await probed(made, null)).toEqual(everywhere);
      // Made here, first attempt an hour ago at most: from an hour before that to an hour ahead,
      // so today's partition and the default (in the first or last hour of the day, a
      // neighbour's too), none of the past days' or of the days made ahead.
      const recent = await probed(made, 3_600_000);
      const from = periodStart(new Date(Date.now() - 2 * 3_600_000), 'day').getTime();
      const to = periodStart(new Date(Date.now() + 3_600_000), 'day').getTime();
      for (const table of ['jobs_archive', 'jobs_dlq']) {
        expect(recent).toContain(periodPartition(table, today));
        for (let d = today.getTime() - PAST_DAYS * DAY; d <= today.getTime() + 7 * DAY; d += DAY) {
          if (d < from || d > to) expect(recent).not.toContain(periodPartition(table, new Date(d)));
        }
      }
      expect(recent.length).toBeLessThanOrEqual(2 * 3);
    });

    it('enqueue and enqueueMany send how long ago their first attempt began, plus the hour of margin', async () => {
      // Watched, not replaced: every statement still runs.
      const spy = jest.spyOn(Client.prototype, 'query');
      let calls: unknown[][];
      try {
        await storage.enqueue({ queue: 'probes.store' });
        await storage.enqueueMany([
          { queue: 'probes.store' },
          { queue: 'probes.store', id: randomUUID() },
        ]);
      } finally {
        calls = [...spy.mock.calls];
        spy.mockRestore();
      }
      const sent = calls
        .map(([q, v]) => (typeof q === 'object' && q !== null ? q : { text: q, values: v }))
        .filter((q) => String((q as { text: unknown }).text).includes('finished_from'))
        .map((q) => (q as { values: unknown[] }).values);
      expect(sent).toHaveLength(2);
      for (const values of sent) {
        expect(values[15]).toBeGreaterThanOrEqual(3_600_000);
        expect(values[15]).toBeLessThan(3_600_000 + 60_000);
      }
      expect(sent[1][14]).toEqual([false, true]);
    });

    it('an enqueue of an id the library made finds it archived by an earlier attempt, and inserts nothing', async () => {
      const s = quoteSchema(db.schema);
      const type = `probes.retry.${randomUUID()}`;
      const job = validateNewJob({ queue: 'probes.retry', type });
      // The first attempt stored it, and the job ran to the Archive before the retry.
      expect((await client.query(enqueue(s, null), enqueueParams([job], 0))).rows).toEqual([
        { id: job.id },
      ]);
      const id = await archivePending(storage, job.id, 'probes.retry', type, WORKER);
      const again = await client.query(enqueue(s, null), enqueueParams([job], 1_000));
      expect(again.rows).toEqual([]);
      expect((await storage.getJob(id))?.status).toBe(JobStatus.Succeeded);
    });

    it('getJob reads each partition by its primary key, one row at most', async () => {
      const [{ id }] = await db.sql<{ id: string }>(
        `SELECT id FROM ${db.schema}.jobs_archive ORDER BY finished_at_utc LIMIT 1`,
      );
      const plan = await explain(getJobArchive(quoteSchema(db.schema)), [id]);
      // An index probe of each partition with rows (an empty one may be scanned: it has none).
      const scans = plan.filter((n) => n['Relation Name'] !== undefined);
      expect(scans.length).toBeGreaterThanOrEqual(PAST_DAYS + 1);
      for (const scan of scans) {
        expect(
          (scan['Actual Rows'] ?? 0) + (scan['Rows Removed by Filter'] ?? 0),
        ).toBeLessThanOrEqual(1);
      }
      expect(
        scans.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name']),
      ).not.toContain(periodPartition('jobs_archive', today));
      expect((await storage.getJob(id))?.id).toBe(id);
    });
  });
});
