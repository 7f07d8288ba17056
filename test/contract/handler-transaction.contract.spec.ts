import { ChokaQTransactionalHandlerError } from '../../libs/chokaq/src';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { expectOnlyIn, startJob, uniqueQueue } from './helpers';

/**
 * The transaction of a transactional handler's run (`beginHandlerTransaction`): the handler's
 * writes and the fenced archive move commit together, or not at all. Written once for the servers
 * (SQL Server runs it where a server is configured); SQLite and a DataSource ChokaQ opened itself
 * refuse it.
 */
describeEachDialect('storage contract: handler transactions', (fixture) => {
  let db: TestDatabase;
  let borrowed: JobStorage;
  let effects: string;
  beforeAll(async () => {
    db = await fixture.create();
    if (db.dialect === 'sqlite') return;
    borrowed = await createJobStorage({
      dataSource: await db.openDataSource({ poolSize: 4 }),
      schema: db.schema,
      autoCreateSchema: false,
    });
    effects = `${db.table('hot').replace(/\.[^.]+$/, '')}.${db.dialect === 'mssql' ? 'Effects' : 'effects'}`;
    await db.sql(`CREATE TABLE ${effects} (tag varchar(50) NOT NULL)`);
  });
  afterAll(async () => {
    await borrowed?.close();
    await db?.close();
  });

  const tags = async () =>
    (await db.sql<{ tag: string }>(`SELECT tag FROM ${effects} ORDER BY tag`)).map((r) => r.tag);
  const insert = (tag: string) => `INSERT INTO ${effects} (tag) VALUES ('${tag}')`;

  if (fixture.name === 'sqlite') {
    it('SQLite refuses, saying why', async () => {
      const support = db.storage.handlerTransactions();
      expect(support).toEqual({ supported: false, reason: expect.stringMatching(/one writer/) });
      await expect(db.storage.beginHandlerTransaction()).rejects.toBeInstanceOf(
        ChokaQTransactionalHandlerError,
      );
    });
    return;
  }

  it('a DataSource ChokaQ opened itself refuses; a borrowed one gives its pool size', async () => {
    expect(db.storage.handlerTransactions()).toEqual({
      supported: false,
      reason: expect.stringMatching(/opened its DataSource itself/),
    });
    await expect(db.storage.beginHandlerTransaction()).rejects.toBeInstanceOf(
      ChokaQTransactionalHandlerError,
    );
    expect(borrowed.handlerTransactions()).toEqual({ supported: true, poolSize: 4 });
  });

  it('archive commits the writes with the move; a lost lease rolls both back', async () => {
    const queue = uniqueQueue('txn');
    const lease = await startJob(borrowed, queue);
    const tx = await borrowed.beginHandlerTransaction(10_000);
    await tx.manager.query(insert('kept'));
    // Not visible outside the transaction before its commit.
    expect(await tags()).toEqual([]);
    expect(await tx.archive({ ...lease, durationMs: 7 })).toBe(true);
    expect(await tags()).toEqual(['kept']);
    await expectOnlyIn(db, lease.id, 'archive');
    expect(tx.queryRunner.isReleased).toBe(true);

    const other = await startJob(borrowed, queue);
    const stale = await borrowed.beginHandlerTransaction();
    await stale.queryRunner.query(insert('lost'));
    expect(
      await stale.archive({
        ...other,
        leaseId: '00000000-0000-7000-8000-00000000dead',
        durationMs: 1,
      }),
    ).toBe(false);
    expect(await tags()).toEqual(['kept']);
    await expectOnlyIn(db, other.id, 'hot');
    expect(await borrowed.archiveSucceeded([{ ...other, durationMs: 1 }])).toHaveLength(1);
  });

  it('rollback and abandon leave nothing; an ended transaction refuses to archive', async () => {
    const lease = await startJob(borrowed, uniqueQueue('txn'));
    const rolledBack = await borrowed.beginHandlerTransaction();
    await rolledBack.manager.query(insert('rolled-back'));
    await rolledBack.rollback();
    await expect(rolledBack.archive({ ...lease, durationMs: 1 })).rejects.toThrow(/already ended/);

    const abandoned = await borrowed.beginHandlerTransaction();
    await abandoned.manager.query(insert('abandoned'));
    await abandoned.abandon();
    await expect(abandoned.queryRunner.query(insert('after'))).rejects.toThrow();
    const left = await tags();
    for (const tag of ['rolled-back', 'abandoned', 'after']) expect(left).not.toContain(tag);
    await expectOnlyIn(db, lease.id, 'hot');
    expect(await borrowed.archiveSucceeded([{ ...lease, durationMs: 1 }])).toHaveLength(1);
  });

  if (fixture.name === 'postgres') {
    it('PostgreSQL: every statement of the run is bounded by its statement timeout', async () => {
      const tx = await borrowed.beginHandlerTransaction(200);
      await expect(tx.queryRunner.query('SELECT pg_sleep(5)')).rejects.toThrow(/statement timeout/);
      await tx.rollback();
    });
  }
});
