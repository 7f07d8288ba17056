import { createHash } from 'node:crypto';
import type { ChokaQLogger } from '../../interfaces/chokaq-logger.interface';
import { logEvent } from '../../common/log-events';
import type { Client, Pool } from 'pg';
import type { DataSource, QueryRunner } from 'typeorm';
import { ChokaQTransactionError } from '../../errors';
import type { Checked } from '../../interfaces/checked.interface';
import type { CompletedJob } from '../../interfaces/job.interface';
import { assertDataSourceOpen, queryRunnerDataSource } from '../shared/data-source';
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
 * The plumbing both halves of the PostgreSQL dialect share: pooled connections of one
 * `DataSource`, statement execution (named prepared statements for the fixed hot-path texts),
 * ChokaQ's own transactions, and the transient retry around each operation. It knows no job.
 *
 * Each operation borrows a `QueryRunner` (a pooled connection) of the `DataSource` and releases it
 * in `finally`; multi-statement transactions run on one runner. A LISTEN session has its own
 * `pg.Client` ({@link listen}): it holds a session, so it must not sit on a pool slot.
 */
export class PostgresConnection {
  readonly dataSource: DataSource;
  /** The schema's name, as configured. */
  readonly schemaName: string;
  /** The schema, quoted for SQL. */
  readonly s: string;
  /** Under the name the dialect has always logged with. */
  readonly logger: ChokaQLogger;

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

  /** Borrows a pooled connection for `fn`, optionally inside one transaction; always releases it. */
  async withConnection<T>(transaction: boolean, fn: (exec: Exec) => Promise<T>): Promise<T> {
    assertDataSourceOpen(this.dataSource, 'PostgreSQL');
    const runner = this.dataSource.createQueryRunner('master');
    try {
      const exec = execOn(runner, this.prepared, this.onPlansInvalidated);
      if (!transaction) return await fn(exec);
      // READ COMMITTED explicitly: every claim and move relies on a fresh snapshot per statement
      // (see sql/), whatever default_transaction_isolation the server or pool sets.
      // One statement, not TypeORM's startTransaction (START TRANSACTION, then SET TRANSACTION:
      // two round trips). If ROLLBACK itself fails the connection is broken, and pg's pool drops a
      // connection that is no longer queryable when it is released.
      await exec(SQL.BEGIN_READ_COMMITTED);
      try {
        const result = await fn(exec);
        await exec('COMMIT');
        return result;
      } catch (error) {
        await exec('ROLLBACK').catch(() => undefined);
        throw error;
      }
    } finally {
      await runner.release();
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

  /** The caller's QueryRunner when `tx` (`EnqueueOptions.transaction`) is a usable one; throws when it is not. */
  callerTransaction(tx: unknown): QueryRunner | null {
    if (tx === undefined || tx === null) return null;
    const runner = tx as Partial<QueryRunner>;
    if (
      typeof tx !== 'object' ||
      typeof runner.query !== 'function' ||
      !('isTransactionActive' in runner)
    ) {
      throw new ChokaQTransactionError('it is not a TypeORM QueryRunner');
    }
    if (queryRunnerDataSource(runner) !== this.dataSource) {
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
   */
  handlerTransaction(
    statementTimeoutMs: number | undefined,
    archive: (exec: Exec, completed: Checked<CompletedJob>) => Promise<boolean>,
  ): Promise<SqlHandlerTransaction> {
    return this.retry('beginHandlerTransaction', async () => {
      assertDataSourceOpen(this.dataSource, 'PostgreSQL');
      const runner = this.dataSource.createQueryRunner('master');
      try {
        await runner.startTransaction('READ COMMITTED');
        if (statementTimeoutMs !== undefined) {
          await runner.query(SQL.SET_LOCAL_STATEMENT_TIMEOUT, [String(statementTimeoutMs)]);
        }
      } catch (error) {
        await dropConnection(runner);
        throw error;
      }
      const exec = execOn(runner);
      return new SqlHandlerTransaction(runner, {
        archive: (completed) => archive(exec, completed),
        abandon: () => dropConnection(runner),
      });
    });
  }

  /** The `max` of the pg pool behind the DataSource (TypeORM's `poolSize`; pg's default 10). */
  poolSize(): number | undefined {
    const driver = this.dataSource.driver as unknown as {
      master?: { options?: { max?: unknown } };
    };
    const max = driver.master?.options?.max;
    return typeof max === 'number' && max > 0 ? max : undefined;
  }

  /** Statements on a caller's own runner (its transaction): plain texts, no retry of ours. */
  on(runner: QueryRunner): Exec {
    return execOn(runner);
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
    const driver = this.dataSource.driver as unknown as {
      postgres: { Client: new (options: unknown) => Client };
      master: Pool & { options: Record<string, unknown> };
    };
    const subscription = new PgListener({
      channels,
      newClient: () => new driver.postgres.Client({ ...driver.master.options }),
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

  /** Ends every LISTEN client, then destroys the DataSource if ChokaQ created it. Idempotent. */
  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    const subscriptions = [...this.listeners];
    this.listeners.clear();
    await Promise.all(subscriptions.map((subscription) => subscription.stop()));
    if (this.config.ownsDataSource && this.dataSource.isInitialized)
      await this.dataSource.destroy();
  }
}

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
 * Runs statements on one QueryRunner and returns their rows. A text `prepared` knows runs as a
 * named prepared statement on the runner's `pg` client (parsed and planned once per connection;
 * `pg` remembers which names each connection has prepared); any other text goes through TypeORM's
 * `query(sql, params, true)`. A stale plan (DDL changed the statement's row shape) moves the
 * names on, calls `onInvalidated` once, and fails as a transient error, so the operation is
 * retried from scratch under the new names.
 */
function execOn(
  runner: QueryRunner,
  prepared?: PreparedStatements,
  onInvalidated?: () => void,
): Exec {
  return async (sql, params = []) => {
    const prepare = prepared?.nameOf(sql);
    if (prepare !== undefined) {
      const client = (await runner.connect()) as Client;
      try {
        const result = await client.query({ name: prepare.name, text: sql, values: [...params] });
        return result.rows as Row[];
      } catch (error) {
        if (isStalePlanError(error) && prepared!.invalidate(prepare.generation)) onInvalidated?.();
        throw error;
      }
    }
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
