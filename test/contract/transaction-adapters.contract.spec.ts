import BetterSqlite3 from 'better-sqlite3';
import { sql as drizzleSql } from 'drizzle-orm';
import { drizzle as drizzleBetterSqlite } from 'drizzle-orm/better-sqlite3';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import knexFactory, { Knex } from 'knex';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import { Pool, PoolClient } from 'pg';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const mssql = require('mssql') as MssqlModule;
import { ChokaQTransactionError } from '../../libs/chokaq/src/errors';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { claim, countRows, expectRejects, uniqueQueue } from './helpers';

/**
 * The `transaction` option beyond TypeORM (issue 30, part 5): ChokaQ enqueues in the caller's own
 * transaction when it is a `pg` client, a better-sqlite3 `Database`, or a transaction of Knex,
 * Kysely, Drizzle or Prisma, each on its own connection to the same database: a rollback leaves no
 * job, a commit makes the jobs claimable, and a handle outside a transaction is refused.
 *
 * Prisma cannot be installed here (its engines are downloaded from outside the npm registry), so
 * its case is a stand-in with the method ChokaQ uses of an interactive transaction,
 * `$queryRawUnsafe(sql, ...values)`, over a `pg` client in a transaction, which is how Prisma's
 * PostgreSQL engine runs a raw query.
 */

interface MssqlPool {
  connect(): Promise<MssqlPool>;
  close(): Promise<void>;
}

/** What this suite uses of the `mssql` package (it ships no typings). */
interface MssqlModule {
  ConnectionPool: new (url: string) => MssqlPool;
  Transaction: new (pool: unknown) => {
    begin(level: unknown): Promise<unknown>;
    commit(): Promise<void>;
    rollback(): Promise<void>;
  };
  ISOLATION_LEVEL: { READ_COMMITTED: unknown };
}

/** One open transaction of some library, and how to end it. */
interface Opened {
  tx: unknown;
  end(commit: boolean): Promise<void>;
}

/** An adapter under test: opens a transaction the way its library's users do. */
interface Adapter {
  name: string;
  dialect: 'postgres' | 'sqlite' | 'mssql';
  /** Sets up the library's connection (once per suite). */
  setUp(db: TestDatabase): Promise<{ open(): Promise<Opened>; close(): Promise<void> }>;
}

/**
 * Runs `body` inside a transaction a library opens with a callback, and returns the transaction
 * handle while the callback is still waiting: `end(commit)` lets the callback return (commit) or
 * throw (rollback), and resolves when the library has finished.
 */
function heldOpen(
  run: (body: (tx: unknown) => Promise<void>) => Promise<unknown>,
): Promise<Opened> {
  return new Promise<Opened>((opened, failed) => {
    let finish!: (commit: boolean) => void;
    const decided = new Promise<boolean>((resolve) => (finish = resolve));
    const done = run(async (tx) => {
      opened({
        tx,
        end: async (commit) => {
          finish(commit);
          await done.catch(() => undefined);
        },
      });
      if (!(await decided)) throw new Error('rolled back by the test');
    });
    done.catch(failed);
  });
}

/** `BEGIN` … `COMMIT`/`ROLLBACK` on a `pg` client of a pool. */
async function pgClientTransaction(pool: Pool): Promise<Opened & { client: PoolClient }> {
  const client = await pool.connect();
  await client.query('BEGIN');
  return {
    tx: client,
    client,
    end: async (commit) => {
      try {
        await client.query(commit ? 'COMMIT' : 'ROLLBACK');
      } finally {
        client.release();
      }
    },
  };
}

const ADAPTERS: Adapter[] = [
  {
    name: 'a pg PoolClient after BEGIN',
    dialect: 'postgres',
    async setUp(db) {
      const pool = new Pool({ connectionString: pgUrl(db), max: 2 });
      return { open: () => pgClientTransaction(pool), close: () => pool.end() };
    },
  },
  {
    name: 'a Knex transaction (pg)',
    dialect: 'postgres',
    async setUp(db) {
      const knex = knexFactory({ client: 'pg', connection: pgUrl(db), pool: { min: 0, max: 2 } });
      return {
        open: () => heldOpen((body) => knex.transaction((trx: Knex.Transaction) => body(trx))),
        close: () => knex.destroy(),
      };
    },
  },
  {
    name: 'a Kysely transaction (pg)',
    dialect: 'postgres',
    async setUp(db) {
      const kysely = new Kysely<unknown>({
        dialect: new PostgresDialect({ pool: new Pool({ connectionString: pgUrl(db), max: 2 }) }),
      });
      return {
        open: () => heldOpen((body) => kysely.transaction().execute((trx) => body(trx))),
        close: () => kysely.destroy(),
      };
    },
  },
  {
    name: 'a Drizzle transaction (node-postgres)',
    dialect: 'postgres',
    async setUp(db) {
      const pool = new Pool({ connectionString: pgUrl(db), max: 2 });
      const orm = drizzlePg(pool);
      return {
        open: () => heldOpen((body) => orm.transaction((tx) => body(tx))),
        close: () => pool.end(),
      };
    },
  },
  {
    name: 'a Prisma interactive transaction (stand-in: $queryRawUnsafe over pg)',
    dialect: 'postgres',
    async setUp(db) {
      const pool = new Pool({ connectionString: pgUrl(db), max: 2 });
      return {
        async open() {
          const opened = await pgClientTransaction(pool);
          const tx = {
            $queryRawUnsafe: async (text: string, ...values: unknown[]) =>
              (await opened.client.query(text, values)).rows,
            $executeRawUnsafe: async (text: string, ...values: unknown[]) =>
              (await opened.client.query(text, values)).rowCount,
          };
          return { tx, end: opened.end };
        },
        close: () => pool.end(),
      };
    },
  },
  {
    name: 'a better-sqlite3 Database of the same file after BEGIN',
    dialect: 'sqlite',
    async setUp(db) {
      const handle = sqliteHandle(db);
      return {
        async open() {
          handle.exec('BEGIN IMMEDIATE');
          return {
            tx: handle,
            end: async (commit) => void handle.exec(commit ? 'COMMIT' : 'ROLLBACK'),
          };
        },
        close: async () => void handle.close(),
      };
    },
  },
  {
    name: 'a Knex transaction (better-sqlite3)',
    dialect: 'sqlite',
    async setUp(db) {
      const knex = knexFactory({
        client: 'better-sqlite3',
        connection: { filename: db.file },
        useNullAsDefault: true,
      });
      return {
        open: () => heldOpen((body) => knex.transaction((trx: Knex.Transaction) => body(trx))),
        close: () => knex.destroy(),
      };
    },
  },
  {
    name: 'the Database of a Drizzle transaction (better-sqlite3)',
    dialect: 'sqlite',
    async setUp(db) {
      const handle = sqliteHandle(db);
      const orm = drizzleBetterSqlite(handle);
      return {
        async open() {
          // Drizzle's better-sqlite3 transactions are synchronous: BEGIN through Drizzle, then
          // the caller enqueues with the Database it gave Drizzle, as the README shows.
          orm.run(drizzleSql`BEGIN IMMEDIATE`);
          return {
            tx: handle,
            end: async (commit) => void orm.run(commit ? drizzleSql`COMMIT` : drizzleSql`ROLLBACK`),
          };
        },
        close: async () => void handle.close(),
      };
    },
  },
  {
    name: 'the Database of a Kysely transaction (better-sqlite3)',
    dialect: 'sqlite',
    async setUp(db) {
      const handle = sqliteHandle(db);
      const kysely = new Kysely<unknown>({ dialect: new SqliteDialect({ database: handle }) });
      return {
        open: () => heldOpen((body) => kysely.transaction().execute(() => body(handle))),
        close: () => kysely.destroy(),
      };
    },
  },
  {
    // Runs with the live SQL Server suite only (CHOKAQ_MSSQL_URL).
    name: 'an mssql Transaction (begun)',
    dialect: 'mssql',
    async setUp(db) {
      const pool = await new mssql.ConnectionPool((db.options as { url: string }).url).connect();
      return {
        async open() {
          const transaction = new mssql.Transaction(pool);
          await transaction.begin(mssql.ISOLATION_LEVEL.READ_COMMITTED);
          return {
            tx: transaction,
            end: (commit) => (commit ? transaction.commit() : transaction.rollback()),
          };
        },
        close: () => pool.close(),
      };
    },
  },
];

function pgUrl(db: TestDatabase): string {
  return (db.options as { url: string }).url;
}

function sqliteHandle(db: TestDatabase): BetterSqlite3.Database {
  const handle = new BetterSqlite3(db.file);
  handle.pragma('busy_timeout = 5000');
  return handle;
}

describeEachDialect('storage contract: enqueue in the caller’s own transaction', (fixture) => {
  let db: TestDatabase;
  let storage: JobStorage;
  beforeAll(async () => {
    db = await fixture.create();
    storage = db.storage;
  });
  afterAll(async () => {
    await db?.close();
  });

  const adapters = ADAPTERS.filter((a) => a.dialect === fixture.name);
  const each =
    adapters.length > 0
      ? it.each(adapters.map((a) => [a.name, a] as const))
      : it.skip.each([['none', undefined]]);

  each('%s: a rollback leaves no job, a commit makes them claimable', async (_name, adapter) => {
    const library = await adapter!.setUp(db);
    try {
      const queue = uniqueQueue('tx');
      const rolledBack = await library.open();
      const lost = await storage.enqueue({ queue, payload: 'rb' }, { transaction: rolledBack.tx });
      await rolledBack.end(false);
      expect(lost.created).toBe(true);
      expect(await storage.getJob(lost.id)).toBeNull();

      const committed = await library.open();
      const one = await storage.enqueue(
        { queue, payload: { n: 1 } },
        { transaction: committed.tx },
      );
      const many = await storage.enqueueMany([{ queue }, { queue, tags: ['b'] }], {
        transaction: committed.tx,
      });
      // Not visible outside the caller's transaction before it commits.
      expect(await countRows(db, 'hot', { queue })).toBe(0);
      await committed.end(true);
      const ids = [one.id, ...many.map((r) => r.id)].sort();
      expect((await claim(storage, queue, 10)).rows.map((r) => r.id).sort()).toEqual(ids);
      expect((await storage.getJob(one.id))?.payload).toEqual({ n: 1 });
    } finally {
      await library.close();
    }
  });

  if (fixture.name === 'postgres') {
    it('refuses a pg client without BEGIN, a failed transaction, and a pool', async () => {
      const queue = uniqueQueue('tx');
      const pool = new Pool({ connectionString: pgUrl(db), max: 1 });
      const client = await pool.connect();
      try {
        const idle = await expectRejects(storage.enqueue({ queue }, { transaction: client }));
        expect(idle).toBeInstanceOf(ChokaQTransactionError);
        expect((idle as Error).message).toContain('no open transaction');
        await client.query('BEGIN');
        await client.query('SELECT 1/0').catch(() => undefined);
        // The driver learns the transaction failed from the server's next ReadyForQuery.
        await waitFor('the failed transaction', () => client.getTransactionStatus() === 'E');
        const failed = await expectRejects(storage.enqueue({ queue }, { transaction: client }));
        expect((failed as Error).message).toContain('failed transaction');
        await client.query('ROLLBACK');
        const whole = await expectRejects(storage.enqueue({ queue }, { transaction: pool }));
        expect((whole as Error).message).toContain('pg Pool');
      } finally {
        client.release();
        await pool.end();
      }
      expect(await countRows(db, 'hot', { queue })).toBe(0);
    });

    it('refuses Kysely and Drizzle outside a transaction, and a better-sqlite3 Database', async () => {
      const pool = new Pool({ connectionString: pgUrl(db), max: 1 });
      const kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
      const handle = new BetterSqlite3(':memory:');
      try {
        for (const [tx, text] of [
          [kysely, 'Kysely instance is not a transaction'],
          [drizzlePg(pool), 'is not a transaction'],
          [{ $queryRawUnsafe: () => undefined, $transaction: () => undefined }, 'PrismaClient'],
          [handle, 'cannot carry a PostgreSQL enqueue'],
          [{}, 'not a transaction'],
          ['tx', 'not a transaction'],
        ] as const) {
          const error = await expectRejects(storage.enqueue({ queue: 'q' }, { transaction: tx }));
          expect(error).toBeInstanceOf(ChokaQTransactionError);
          expect((error as Error).message).toContain(text);
        }
      } finally {
        handle.close();
        await kysely.destroy();
      }
    });
  }

  if (fixture.name === 'sqlite') {
    it('refuses a Database without a transaction, of another file, and a pg client', async () => {
      const queue = uniqueQueue('tx');
      const same = sqliteHandle(db);
      const other = new BetterSqlite3(':memory:');
      try {
        const idle = await expectRejects(storage.enqueue({ queue }, { transaction: same }));
        expect((idle as Error).message).toContain('no open transaction');
        other.exec('BEGIN');
        const elsewhere = await expectRejects(storage.enqueue({ queue }, { transaction: other }));
        expect((elsewhere as Error).message).toContain("not of ChokaQ's database file");
        const pgLike = { query: async () => ({ rows: [] }), getTransactionStatus: () => 'T' };
        const wrong = await expectRejects(storage.enqueue({ queue }, { transaction: pgLike }));
        expect((wrong as Error).message).toContain('cannot carry a SQLite enqueue');
      } finally {
        other.close();
        same.close();
      }
      expect(await countRows(db, 'hot', { queue })).toBe(0);
    });
  }
});
