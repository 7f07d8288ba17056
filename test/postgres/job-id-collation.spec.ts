import { randomUUID } from 'node:crypto';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import type { JobLease } from '../../libs/chokaq/src/interfaces/job.interface';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { JOB_ID_COLUMNS } from '../../libs/chokaq/src/storage/postgres/postgres.schema';
import { claim, startJob } from '../contract/helpers';
import { createSchemaBefore } from '../support/schema-history';
import { TestSchema, createTestSchema, describePostgres } from '../support/test-database';

const BYTE_WISE_VERSION = 23;

/** The collation of every job-id column, `table.column → collation` (null: the database's). */
async function collations(db: TestSchema): Promise<Record<string, string | null>> {
  const rows = await db.sql<{ table_name: string; column_name: string; collation_name: string }>(
    `SELECT table_name, column_name, collation_name FROM information_schema.columns
     WHERE table_schema = $1`,
    [db.schema],
  );
  const wanted = new Set(JOB_ID_COLUMNS.map(([table, column]) => `${table}.${column}`));
  const found: Record<string, string | null> = {};
  for (const r of rows) {
    const key = `${r.table_name}.${r.column_name}`;
    if (wanted.has(key)) found[key] = r.collation_name;
  }
  return found;
}

const every = (collation: string | null) =>
  Object.fromEntries(JOB_ID_COLUMNS.map(([table, column]) => [`${table}.${column}`, collation]));

/**
 * Moves that join job-id columns of different tables: a dependency settled by its parent's
 * archive (`job_dependencies.depends_on` = the moved id, the waiter's hot row by id), a failed
 * job's attempt history read and purged with it (`job_attempts.job_id`), reads by id in every
 * pillar. Each must work, and find what it joins, in either collation.
 */
async function exerciseJobIds(storage: JobStorage, queue: string): Promise<void> {
  const parent = await startJob(storage, queue);
  const { id: child } = await storage.enqueue({ queue, type: 'child', dependsOn: [parent.id] });
  expect((await storage.getJob(child))?.status).toBe(JobStatus.Waiting);
  expect(await storage.archiveSucceeded([{ ...parent, durationMs: 1 }])).toHaveLength(1);
  expect(await storage.getJob(child)).toMatchObject({ status: JobStatus.Pending, waitingOn: 0 });
  expect((await storage.getDependencies(child)).dependsOn[0]).toMatchObject({
    dependsOn: parent.id,
    state: 'succeeded',
    dependencyPillar: 'archive',
  });

  const c = await claim(storage, { queues: [], types: [{ queue, type: 'child' }] }, 5);
  expect(c.rows.map((r) => r.id)).toEqual([child]);
  const lease: JobLease = c.leases[0];
  await storage.markAsProcessing([lease]);
  expect(
    await storage.moveToDlq(lease, { reason: FailureReason.MaxRetriesExceeded, error: 'boom' }),
  ).toBe(1);
  expect(await storage.getJob(child)).toMatchObject({ pillar: 'dlq', attemptCount: 1 });
  expect((await storage.getJob(child, { attempts: true }))?.attempts).toHaveLength(1);
}

/**
 * Schema version 23 (issue 26): job ids compared byte by byte. A new install gets `COLLATE "C"` on
 * every column that holds a job id; an install that already holds jobs keeps its collation (the
 * conversion rewrites tables under an exclusive lock), and both run every move. The drain's gain
 * on a database with a locale's collation is measured by the bench (bench/RESULTS.md).
 */
describePostgres('PostgreSQL job ids: byte-wise on a new install (schema version 23)', () => {
  const fresh = createTestSchema('postgres');
  const kept = createTestSchema('postgres');
  const scheduled = createTestSchema('postgres');
  const converted = createTestSchema('postgres');

  afterAll(async () => {
    await fresh.close();
    await kept.close();
    await scheduled.close();
    await converted.close();
  });

  it('a new install compares every job id byte by byte, and its moves join them', async () => {
    const storage = await fresh.openStorage();
    expect(await collations(fresh)).toEqual(every('C'));
    await exerciseJobIds(storage, 'bytewise');
  });

  it('an install that holds a job keeps its collation at version 23, and its moves still join', async () => {
    const s = await createSchemaBefore(kept, BYTE_WISE_VERSION);
    const held = randomUUID();
    await kept.sql(
      `INSERT INTO ${kept.table('hot')} (id, queue, type, payload, created_at_utc,
         enqueued_at_utc, last_updated_utc)
       VALUES ($1, 'older', 'older', '{}', now(), now(), now())`,
      [held],
    );

    const storage = await kept.openStorage();
    const versions = await kept.sql<{ version: number }>(
      `SELECT version FROM ${s}.schema_migrations WHERE version = $1`,
      [BYTE_WISE_VERSION],
    );
    expect(versions).toHaveLength(1);
    expect(await collations(kept)).toEqual(every(null));
    expect(await kept.count('hot', 'id = ?', [held])).toBe(1);
    await exerciseJobIds(storage, 'kept');
  });

  it('`chokaq migrate --binary-keys` converts an install that held jobs, which keep their rows; a second run changes nothing', async () => {
    await createSchemaBefore(converted, BYTE_WISE_VERSION);
    await converted.sql(
      `INSERT INTO ${converted.table('hot')} (id, queue, type, payload, created_at_utc,
         enqueued_at_utc, last_updated_utc)
       VALUES ($1, 'older', 'older', '{}', now(), now(), now())`,
      [randomUUID()],
    );
    const storage = await converted.openStorage();
    await exerciseJobIds(storage, 'before');
    const rows = async () =>
      Object.fromEntries(
        await Promise.all(
          (['hot', 'archive', 'dlq', 'attempts', 'dependencies'] as const).map(
            async (table) => [table, await converted.count(table)] as const,
          ),
        ),
      );
    const held = await rows();
    expect(await collations(converted)).toEqual(every(null));

    expect(await storage.convertKeysToBinary!()).toBe(true);
    expect(await collations(converted)).toEqual(every('C'));
    expect(await rows()).toEqual(held);
    await exerciseJobIds(storage, 'after');

    expect(await storage.convertKeysToBinary!()).toBe(false);
    expect(await collations(converted)).toEqual(every('C'));
  });

  it('an install whose only rows are recurring definitions converts: they may precede any job', async () => {
    const s = await createSchemaBefore(scheduled, BYTE_WISE_VERSION);
    await scheduled.sql(
      `INSERT INTO ${s}.recurring_jobs (name, cron, time_zone, queue, type, payload,
         next_slot_utc, misfire_policy)
       VALUES ('nightly', '0 3 * * *', 'UTC', 'reports', 'nightly', '{}', now(), 'skip')`,
    );
    const storage = await scheduled.openStorage();
    expect(await collations(scheduled)).toEqual(every('C'));
    expect((await storage.getRecurringJobs()).map((r) => r.name)).toEqual(['nightly']);
  });
});
