import { randomUUID } from 'node:crypto';
import { ConsoleLogger, Logger } from '@nestjs/common';
import { JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { RecordingLogger } from '../runtime/support/silent-logger';
import { pgPoolOf } from '../support/storage-internals';
import { createTestSchema, describePostgres } from '../support/test-database';

/**
 * What the hot path leaves on pooled connections: claims relax `synchronous_commit` for their own
 * transaction only, and the fixed statements are prepared once per connection (or not at all with
 * `preparedStatements: false`).
 */
describePostgres('PostgreSQL session state of pooled connections', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
  afterAll(() => db.close());

  /** Runs `sql` on the storage's own pool (a pool of one connection: the same session). */
  async function session(storage: JobStorage, sql: string): Promise<unknown[]> {
    return (await pgPoolOf(storage).query(sql)).rows as unknown[];
  }

  async function claimAndArchive(storage: JobStorage, queue: string): Promise<void> {
    await storage.enqueueMany([{ queue }, { queue }]);
    const workerId = 'session-test';
    const leaseId = randomUUID();
    const rows = await storage.fetchNextBatch({
      workerId,
      leaseId,
      limit: 2,
      start: 2,
      budgetedQueues: [],
      handled: { queues: [queue], types: [] },
    });
    expect(rows.map((r) => r.status)).toEqual([JobStatus.Processing, JobStatus.Processing]);
    const archived = await storage.archiveSucceeded(
      rows.map((r) => ({ id: r.id, workerId, leaseId, durationMs: 1 })),
    );
    expect(archived).toHaveLength(2);
  }

  it('runs its sessions without JIT compilation, which a large backlog would make every claim pay', async () => {
    // With a million Pending rows over 20 queues the claim's estimated cost passes PostgreSQL's
    // jit_above_cost and each claim spent about 40 ms compiling (bench/RESULTS.md, "Scale").
    const storage = await db.openStorage({ poolSize: 1 });
    expect(await session(storage, 'SHOW jit')).toEqual([{ jit: 'off' }]);
    await claimAndArchive(storage, 'jit');
    expect(await session(storage, 'SHOW jit')).toEqual([{ jit: 'off' }]);
  });

  it('a claim turns synchronous_commit off for its own transaction only', async () => {
    const storage = await db.openStorage({ poolSize: 1 });
    await claimAndArchive(storage, 'session.sync');
    // The one pooled connection ran the claim; its session setting is untouched.
    expect(await session(storage, 'SHOW synchronous_commit')).toEqual([
      { synchronous_commit: 'on' },
    ]);
    await storage.close();
  });

  it('prepares the fixed statements once per connection, or none with preparedStatements: false', async () => {
    const prepared = async (storage: JobStorage) =>
      (
        (await session(
          storage,
          `SELECT name FROM pg_prepared_statements WHERE name LIKE 'chokaq\\_%'`,
        )) as Array<{ name: string }>
      ).map((r) => r.name);

    const storage = await db.openStorage({ poolSize: 1, autoCreateSchema: false });
    await claimAndArchive(storage, 'session.prepared');
    const once = await prepared(storage);
    expect(once.length).toBeGreaterThanOrEqual(2); // at least the claim and the archive
    await claimAndArchive(storage, 'session.prepared');
    expect((await prepared(storage)).sort()).toEqual([...once].sort());
    await storage.close();

    const plain = await db.openStorage({
      poolSize: 1,
      autoCreateSchema: false,
      preparedStatements: false,
    });
    await claimAndArchive(plain, 'session.plain');
    expect(await prepared(plain)).toEqual([]);
    await plain.close();
  });
  it('prepares its statements again when a migration changed the shape of their rows', async () => {
    const logger = new RecordingLogger();
    Logger.overrideLogger(logger);
    const own = createTestSchema('postgres', { overrides: { poolSize: 4 } });
    try {
      // Two connections: the retry after the stale plan may land on the other one.
      const storage = await own.openStorage({ poolSize: 2 });
      await claimAndArchive(storage, 'session.migrated');
      // A column added while this worker runs changes no row it reads: the claim names its columns.
      await own.sql(`ALTER TABLE ${own.table('hot')} ADD COLUMN note text NULL`);
      await claimAndArchive(storage, 'session.migrated');
      expect(logger.count('log', 'changed under prepared statements')).toBe(0);
      // What a newer ChokaQ's migration may do: a column the claim returns changes its type, so
      // the claim's rows no longer have the shape the statement was prepared with.
      await own.sql(
        `ALTER TABLE ${own.table('hot')} ALTER COLUMN progress_note TYPE varchar(1000)`,
      );
      await claimAndArchive(storage, 'session.migrated');
      await claimAndArchive(storage, 'session.migrated');
      expect(logger.count('log', 'changed under prepared statements')).toBe(1);
    } finally {
      await own.close();
      Logger.overrideLogger(new ConsoleLogger());
    }
  });
});
