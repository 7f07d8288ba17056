import { DataSource as DataSource03 } from 'typeorm-0.3';
import { ChokaQTransactionError } from '../../libs/chokaq/src/errors';
import { StorageOptions } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { claim, countRows, inTransaction, retryUnavailable, uniqueQueue } from './helpers';

/**
 * The peer range admits TypeORM 0.3 (≥ 0.3.28) as well as 1.x. The workspace builds against 1.x;
 * here the storage borrows a real TypeORM 0.3 `DataSource` (the lock file pins 0.3.28 under the
 * alias `typeorm-0.3`) and takes the caller's 0.3 `QueryRunner` transactions, whose runner has
 * `connection` where 1.x has `dataSource`. The packaging test runs the same on a packed install.
 */
describeEachDialect('storage contract: a borrowed TypeORM 0.3 DataSource', (fixture) => {
  let db: TestDatabase;
  let dataSource: DataSource03;
  let storage: JobStorage;
  beforeAll(async () => {
    db = await fixture.create();
    const options = db.options as StorageOptions & Record<string, unknown>;
    dataSource = new DataSource03(
      db.dialect === 'sqlite'
        ? { type: 'better-sqlite3', database: options.database as string }
        : db.dialect === 'postgres'
          ? { type: 'postgres', url: options.url as string, poolSize: 3 }
          : ({ type: 'mssql', url: options.url, options: options.options } as never),
    );
    storage = await createJobStorage({
      dataSource: dataSource as never,
      schema: options.schema as string,
      autoCreateSchema: false,
    });
  });
  afterAll(async () => {
    await storage?.close();
    if (dataSource?.isInitialized) await dataSource.destroy();
    await db?.close();
  });

  it("enqueues in the caller's 0.3 QueryRunner transaction: rolled back with it, or committed with it", async () => {
    const queue = uniqueQueue('tx03');
    await inTransaction(
      dataSource,
      async (runner) => {
        await storage.enqueue({ queue, payload: 'lost' }, { transaction: runner });
      },
      false,
    );
    expect(await countRows(db, 'hot', { queue })).toBe(0);

    let kept: string[] = [];
    await inTransaction(
      dataSource,
      async (runner) => {
        kept = (await storage.enqueueMany([{ queue }, { queue }], { transaction: runner })).map(
          (r) => r.id,
        );
      },
      true,
    );
    expect(
      (await retryUnavailable(() => claim(storage, queue, 10))).rows.map((r) => r.id).sort(),
    ).toEqual(kept.sort());
  });

  it('refuses a 0.3 QueryRunner without an open transaction, and one of another DataSource', async () => {
    const queue = uniqueQueue('tx03.refused');
    const idle = dataSource.createQueryRunner();
    try {
      await expect(storage.enqueue({ queue }, { transaction: idle })).rejects.toBeInstanceOf(
        ChokaQTransactionError,
      );
    } finally {
      await idle.release();
    }
    const other = new DataSource03({ type: 'better-sqlite3', database: ':memory:' });
    await other.initialize();
    const foreign = other.createQueryRunner();
    await foreign.startTransaction();
    try {
      await expect(storage.enqueue({ queue }, { transaction: foreign })).rejects.toBeInstanceOf(
        ChokaQTransactionError,
      );
    } finally {
      await foreign.rollbackTransaction();
      await foreign.release();
      await other.destroy();
    }
    expect(await countRows(db, 'hot', { queue })).toBe(0);
  });
});
