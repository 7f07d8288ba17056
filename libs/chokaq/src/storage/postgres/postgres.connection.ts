import { createHash } from 'node:crypto';
import type { ChokaQLogger } from '../../interfaces/chokaq-logger.interface';
import { logEvent } from '../../common/log-events';
import { Client as PgClient, Pool as PgPool } from 'pg';
import type { Client, ClientConfig, Pool, PoolClient } from 'pg';
import type { DataSource, QueryRunner } from 'typeorm';
import { ChokaQError, ChokaQTransactionError } from '../../errors';
import type { Checked } from '../../interfaces/checked.interface';
import type { CompletedJob } from '../../interfaces/job.interface';
import {
  assertDataSourceOpen,
  queryRunnerDataSource,
  storageClosedMessage,
} from '../shared/data-source';
import {
  drizzleQueryBuilder,
  kyselyRawQuery,
  openPgTransaction,
  recogniseTransaction,
  unsupportedTransaction,
} from '../shared/caller-transaction';
import { SqlHandlerTransaction } from '../shared/handler-transaction';
import { withTransientRetry } from '../shared/transient-retry';
import { SqlStorageConfig } from '../storage-config';
import { PgListener } from './pg-listener';
import { isStalePlanError, isTransientPostgresError } from './postgres-errors';
import * as SQL from './sql';

/** One result row, as the driver returns it. */
export type Row = Record<string, unknown>;

/** Runs one statement on a connection and returns its rows. */
export type Exec = (sql: string, params?: readonly unknown[]) => Promise<Row[]>;

/** A numeric column as a number (`bigint` and `numeric` arrive as strings); SQL NULL as 0. */
export function num(value: unknown): number {
  return value === null || value === undefined ? 0 : Number(value);
}

/**
 * The plumbing both halves of the PostgreSQL dialect share: pooled connections, statement
 * execution (named prepared statements for the fixed hot-path texts), ChokaQ's own transactions,
 * and the transient retry around each operation. It knows no job.
 *
 * Its connections come from a `pg` pool, used directly: the pool of the application's `DataSource`
 * when one is borrowed (`storage: { dataSource }`), or a pool ChokaQ opens itself from the storage
 * options, with no TypeORM at all. Each operation takes one client from the pool and gives it back
 * in `finally`; a transaction runs on that one client. A transactional handler's run and a caller's
 * transaction run on TypeORM `QueryRunner`s of the borrowed `DataSource`, since the application's
 * own writes share them. A LISTEN session has its own `pg.Client` ({@link listen}): it holds a
 * session, so it must not sit on a pool slot.
 */
export class PostgresConnection {
  /** The application's `DataSource`; undefined when ChokaQ opened its own pool. */
  readonly dataSource: DataSource | undefined;
  /** The schema's name, as configured. */
  readonly schemaName: string;
  /** The schema, quoted for SQL. */
  readonly s: string;
  /** Under the name the dialect has always logged with. */
  readonly logger: ChokaQLogger;

  /** The pool ChokaQ opened (no borrowed `DataSource`); ended by {@link close}. */
  private readonly ownPool: Pool | undefined;
  /**
   * Named prepared statements for the fixed texts the store declares (when
   * `config.preparedStatements`). Only fixed texts: statements built per call (filters, pages, DLQ
   * move shapes) would leave an unbounded number of prepared statements on each connection.
   */
  private prepared: PreparedStatements | undefined;
  private readonly listeners = new Set<PgListener>();
  private isClosed = false;
  private readonly onPlansInvalidated = (): void =>
    logEvent(
      this.logger,
      'PreparedStatementsReset',
      `The schema of "${this.schemaName}" changed under prepared statements; preparing them again`,
      { schema: this.schemaName },
    );

  constructor(readonly config: SqlStorageConfig) {
    this.logger = config.logger('PostgresJobStorage');
    this.dataSource = config.dataSource;
    this.schemaName = config.schema;
    this.s = SQL.quoteSchema(config.schema);
    if (this.dataSource === undefined) {
      this.ownPool = new PgPool(config.pgPool);
      // An idle client that loses its server emits 'error' on the pool; unhandled, it would end
      // the process. The pool drops that client; the next operation opens a new one.
      this.ownPool.on('error', (error) =>
        this.logger.warn(`A pooled PostgreSQL connection failed while idle: ${error.message}`),
      );
    }
  }

  /**
   * The `pg` pool the operations take their clients from: ChokaQ's own, or the one behind the
   * borrowed `DataSource` (read each time: re-initialising a `DataSource` gives it a new pool).
   */
  get pool(): Pool {
    return this.ownPool ?? (this.dataSource!.driver as unknown as { master: Pool }).master;
  }

  /** Runs `texts` as named prepared statements from now on, if the configuration asks for them. */
  usePrepared(texts: Iterable<string>): void {
    if (this.config.preparedStatements) this.prepared = new PreparedStatements(texts);
  }

  /** Retries transient failures of a whole operation (each attempt a fresh statement or transaction). */
  retry<T>(name: string, operation: (attempt: number) => Promise<T>): Promise<T> {
    return withTransientRetry(
      name,
      operation,
      isTransientPostgresError,
      this.config.transientRetry,
    );
  }

  /** Takes one pooled client for `fn`, optionally inside one transaction; always gives it back. */
  async withConnection<T>(transaction: boolean, fn: (exec: Exec) => Promise<T>): Promise<T> {
    this.assertOpen();
    const client = await this.pool.connect();
    // While it is out of the pool a client has no 'error' listener of the pool's; one that loses
    // its server would then end the process. The statement in flight fails with the error anyway.
    client.on('error', ignoreClientError);
    let broken: Error | undefined;
    try {
      const exec = execOnClient(client, this.prepared, this.onPlansInvalidated);
      if (!transaction) return await fn(exec);
      // READ COMMITTED explicitly: every claim and move relies on a fresh snapshot per statement
      // (see sql/), whatever default_transaction_isolation the server or pool sets. One
      // statement, not START TRANSACTION then SET TRANSACTION: one round trip.
      await exec(SQL.BEGIN_READ_COMMITTED);
      try {
        const result = await fn(exec);
        await exec('COMMIT');
        return result;
      } catch (error) {
        // A connection whose ROLLBACK failed is in an unknown state: it leaves the pool.
        await exec('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
        throw error;
      }
    } finally {
      client.removeListener('error', ignoreClientError);
      client.release(broken);
    }
  }

  /** One autocommit statement with transient retry. */
  query(name: string, sql: string, params: readonly unknown[] = []): Promise<Row[]> {
    return this.retry(name, () => this.withConnection(false, (exec) => exec(sql, params)));
  }

  /** One transaction with transient retry; `fn` must be safe to repeat from scratch. */
  transaction<T>(name: string, fn: (exec: Exec, attempt: number) => Promise<T>): Promise<T> {
    return this.retry(name, (attempt) => this.withConnection(true, (exec) => fn(exec, attempt)));
  }

  /**
   * Runs statements in the caller's transaction (`EnqueueOptions.transaction`), or null when none
   * was given: a TypeORM `QueryRunner` of this storage's `DataSource`, a `pg` client, or a Knex,
   * Kysely, Drizzle or Prisma transaction on PostgreSQL (`shared/caller-transaction.ts`). Plain
   * texts, no retry of ours: a failure is the caller's to handle with its transaction. Throws
   * `ChokaQTransactionError` for anything else, or one not in an open transaction.
   */
  async callerExec(tx: unknown): Promise<Exec | null> {
    if (tx === undefined || tx === null) return null;
    const caller = await recogniseTransaction(tx);
    switch (caller.kind) {
      case 'typeorm':
        return execOnRunner(this.callerRunner(caller.runner));
      case 'pg': {
        const client = openPgTransaction(caller.client);
        return async (sql, params = []) => (await client.query(sql, [...params])).rows as Row[];
      }
      case 'kysely':
        return (sql, params = []) =>
          caller.trx
            .getExecutor()
            .provideConnection(
              async (connection) =>
                (await connection.executeQuery(kyselyRawQuery(sql, params))).rows as Row[],
            );
      case 'drizzle': {
        const build = drizzleQueryBuilder(/\$(\d+)/g);
        return async (sql, params = []) => {
          const result = await caller.tx.execute(build(sql, params));
          return (Array.isArray(result) ? result : result.rows) as Row[];
        };
      }
      case 'prisma':
        return async (sql, params = []) =>
          (await caller.tx.$queryRawUnsafe(sql, ...params)) as Row[];
      default:
        throw unsupportedTransaction(
          caller,
          'PostgreSQL',
          'pass a pg client, a TypeORM QueryRunner, or a Knex, Kysely, Drizzle or Prisma transaction on this database',
        );
    }
  }

  /** The caller's TypeORM runner, when it belongs to this storage's DataSource and is in a transaction. */
  private callerRunner(tx: object): QueryRunner {
    const runner = tx as Partial<QueryRunner>;
    if (this.dataSource === undefined || queryRunnerDataSource(runner) !== this.dataSource) {
      throw new ChokaQTransactionError('the QueryRunner belongs to another DataSource');
    }
    if (runner.isReleased) throw new ChokaQTransactionError('the QueryRunner was released');
    if (!runner.isTransactionActive) {
      throw new ChokaQTransactionError(
        'the QueryRunner has no open transaction (call startTransaction first)',
      );
    }
    return tx as QueryRunner;
  }

  /**
   * Opens the READ COMMITTED transaction of one run of a transactional handler on a pooled
   * connection of its own (TypeORM's `startTransaction`, so the handler's own
   * `manager.transaction(…)` nests as a savepoint), with `SET LOCAL statement_timeout` when
   * `statementTimeoutMs` is given. `archive` runs the fenced move on it. Retried when opening
   * fails transiently; a failure after BEGIN drops the connection rather than lend it again.
   * Only on a borrowed `DataSource` (the store refuses handler transactions otherwise).
   */
  handlerTransaction(
    statementTimeoutMs: number | undefined,
    archive: (exec: Exec, completed: Checked<CompletedJob>) => Promise<boolean>,
  ): Promise<SqlHandlerTransaction> {
    return this.retry('beginHandlerTransaction', async () => {
      this.assertOpen();
      const runner = this.dataSource!.createQueryRunner('master');
      try {
        await runner.startTransaction('READ COMMITTED');
        if (statementTimeoutMs !== undefined) {
          await runner.query(SQL.SET_LOCAL_STATEMENT_TIMEOUT, [String(statementTimeoutMs)]);
        }
      } catch (error) {
        await dropConnection(runner);
        throw error;
      }
      const exec = execOnRunner(runner);
      return new SqlHandlerTransaction(runner, {
        archive: (completed) => archive(exec, completed),
        abandon: () => dropConnection(runner),
      });
    });
  }

  /** The `max` of the pg pool (TypeORM's `poolSize`, `storage.poolSize`; pg's default 10). */
  poolSize(): number | undefined {
    const max = (this.pool as Pool & { options?: { max?: unknown } }).options?.max;
    return typeof max === 'number' && max > 0 ? max : undefined;
  }

  /** Statements on a caller's own runner (its transaction): plain texts, no retry of ours. */
  on(runner: QueryRunner): Exec {
    return execOnRunner(runner);
  }

  /** True once {@link close} ran. */
  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * LISTENs on `channels` in one session on a dedicated `pg.Client` (same connection options as
   * the pool), re-established with backoff when lost ({@link PgListener}), `onReconnected` then
   * called. Resolves once listening, to a function that UNLISTENs and ends the client; {@link close}
   * ends any left. Rejects if the first connection fails.
   */
  async listen(
    channels: Map<string, (payload: string) => void>,
    onReconnected: () => void,
  ): Promise<() => Promise<void>> {
    const pool = this.pool as Pool & { options: ClientConfig };
    const subscription = new PgListener({
      channels,
      newClient: () => new PgClient({ ...pool.options }),
      onReconnected,
      reconnectMs: this.config.notifyReconnectMs,
      logger: this.logger,
      label: this.schemaName,
    });
    await subscription.start();
    this.listeners.add(subscription);
    return async () => {
      if (!this.listeners.delete(subscription)) return;
      await subscription.stop();
    };
  }

  /** Ends every LISTEN client, then the pool ChokaQ opened (a borrowed one stays). Idempotent. */
  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    const subscriptions = [...this.listeners];
    this.listeners.clear();
    await Promise.all(subscriptions.map((subscription) => subscription.stop()));
    await this.ownPool?.end();
  }

  /**
   * Refuses an operation once the connections are gone, with a typed error instead of the
   * driver's raw one: ChokaQ's own pool after {@link close}, or a destroyed borrowed `DataSource`.
   */
  private assertOpen(): void {
    if (this.dataSource !== undefined) return assertDataSourceOpen(this.dataSource, 'PostgreSQL');
    if (this.isClosed)
      throw new ChokaQError(storageClosedMessage('PostgreSQL', 'its connection pool was closed'));
  }
}

/** A checked-out client's 'error' event: its statement in flight already fails with it. */
function ignoreClientError(): void {}

/**
 * Ends `runner`'s connection instead of handing it back: `end()` first marks the pg client as
 * ending, so the pool discards it on release rather than lend it again with a transaction open or
 * a statement in flight; the server rolls back what the connection left open. The runner refuses
 * statements from the release on. Never rejects.
 */
async function dropConnection(runner: QueryRunner): Promise<void> {
  try {
    const client = (await runner.connect()) as Client;
    client.end().catch(() => undefined);
  } catch {
    // No connection was ever obtained: nothing to close.
  }
  await runner.release().catch(() => undefined);
}

/**
 * Runs statements on one pooled `pg` client and returns their rows. A text `prepared` knows runs
 * as a named prepared statement (parsed and planned once per connection; `pg` remembers which
 * names each connection has prepared). A stale plan (DDL changed the statement's row shape) moves
 * the names on, calls `onInvalidated` once, and fails as a transient error, so the operation is
 * retried from scratch under the new names. A text of several statements returns no rows.
 */
function execOnClient(
  client: PoolClient,
  prepared: PreparedStatements | undefined,
  onInvalidated: () => void,
): Exec {
  return async (sql, params = []) => {
    const values = params as unknown[];
    const prepare = prepared?.nameOf(sql);
    if (prepare === undefined) return rowsOf(await client.query(sql, values));
    try {
      return rowsOf(await client.query({ name: prepare.name, text: sql, values }));
    } catch (error) {
      if (isStalePlanError(error) && prepared!.invalidate(prepare.generation)) onInvalidated();
      throw error;
    }
  };
}

/** The rows of one statement's result; none for a text of several statements. */
function rowsOf(result: { rows: unknown[] } | { rows: unknown[] }[]): Row[] {
  return Array.isArray(result) ? [] : (result.rows as Row[]);
}

/** Runs statements on a TypeORM `QueryRunner` (a caller's or a handler's transaction): plain texts. */
function execOnRunner(runner: QueryRunner): Exec {
  return async (sql, params = []) => {
    const result = await runner.query(sql, [...params], true);
    return (result?.records ?? []) as Row[];
  };
}

/** The name a statement runs under, and the generation it belongs to. */
interface PreparedName {
  name: string;
  generation: number;
}

/**
 * The hot path's named prepared statements: a stable name per fixed statement text, and a
 * generation that moves on when the schema changed under them.
 *
 * `pg` remembers per connection which names it has prepared and never prepares a name twice, so a
 * statement invalidated by DDL (a migration applied while workers run) would fail on every
 * connection until the pool is recycled. Instead, the first stale-plan error moves the generation
 * on: every name changes, each connection prepares the new names against the current schema, and
 * the failed operation is retried as a transient error. The old statements stay on their
 * connections until those close (a few kilobytes each).
 */
class PreparedStatements {
  private readonly bases = new Map<string, string>();
  private current = 0;

  constructor(texts: Iterable<string>) {
    for (const text of texts) {
      this.bases.set(text, `chokaq_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`);
    }
  }

  /** The name to run `text` under now, or undefined for a text that is not prepared. */
  nameOf(text: string): PreparedName | undefined {
    const base = this.bases.get(text);
    if (base === undefined) return undefined;
    const generation = this.current;
    return { name: generation === 0 ? base : `${base}_${generation}`, generation };
  }

  /**
   * A statement of `generation` hit a stale plan. Returns true when this call moved the
   * generation on (false when another call already did, so only one caller logs it).
   */
  invalidate(generation: number): boolean {
    if (generation !== this.current) return false;
    this.current++;
    return true;
  }
}
