import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ChokaQLogger } from '../../interfaces/chokaq-logger.interface';
import type BetterSqlite3 from 'better-sqlite3';
import type { DataSource, QueryRunner } from 'typeorm';
import { logEvent } from '../../common/log-events';
import { ChokaQError, ChokaQStorageUnavailableError, ChokaQTransactionError } from '../../errors';
import { TransientRetryOptions } from '../../interfaces/storage-options.interface';
import { assertNonNegativeInt } from '../../validation/validate-job';
import {
  CallerTransaction,
  SqliteDatabaseLike,
  openSqliteTransaction,
  recogniseTransaction,
  unsupportedTransaction,
} from '../shared/caller-transaction';
import { assertDataSourceOpen, dataSourceOf, queryRunnerDataSource } from '../shared/data-source';
import { withTransientRetry } from '../shared/transient-retry';
import { SqlStorageConfig } from '../storage-config';
import { SqliteConnectionInUseError, isSqliteTransient } from './sqlite-errors';
import { SqliteMutex } from './sqlite-mutex';

/** One result row, as better-sqlite3 returns it. */
export type Row = Record<string, unknown>;

/** Named parameters of one statement (`@name`). */
export type Params = Record<string, unknown>;

/** Prepared statements kept per connection; the fixed statements plus the common filter shapes fit easily. */
const STATEMENT_CACHE_SIZE = 256;

/**
 * The plumbing both halves of the SQLite dialect share (SPEC §3, "SQLite specifics"): the one
 * connection of the `DataSource`, its settings, cached prepared statements, ChokaQ's transactions,
 * the caller's transaction, and the transient retry around each operation. It knows no job.
 *
 * **Connection.** TypeORM's better-sqlite3 driver has one connection per `DataSource`. ChokaQ uses the
 * driver's better-sqlite3 handle directly, not `QueryRunner.query`: better-sqlite3 is synchronous, so a
 * whole transaction (BEGIN IMMEDIATE … COMMIT) runs inside one turn of the event loop and nothing else
 * in the process — not the application sharing the `DataSource`, not another ChokaQ call — can
 * interleave a statement into it. The handle also gives exact `changes` counts and the SQLite error
 * codes. An async {@link SqliteMutex} still serialises ChokaQ's own calls, one at a time per storage.
 *
 * **Locking.** Every write runs in `BEGIN IMMEDIATE`, which takes the database's single write lock at
 * BEGIN: correctness across storages and processes sharing one file comes from that, not from the
 * mutex. `busy_timeout` is short (default 50 ms) because the wait blocks the event loop; SQLITE_BUSY and
 * SQLITE_LOCKED are retried asynchronously by `withTransientRetry`, with the mutex released between
 * attempts. A failed transaction is rolled back before the mutex is released. WAL lets readers run
 * while one process writes.
 *
 * **Shared DataSource.** If the application holds a transaction on the shared connection, ChokaQ backs
 * off (never joins it) — except for `enqueue(…, { transaction })`, which deliberately writes into it
 * ({@link inCallerTransaction}).
 */
export class SqliteConnection {
  /** The table prefix, as configured. */
  readonly prefix: string;
  /** Under the name the dialect has always logged with. */
  readonly logger: ChokaQLogger;

  private readonly mutex = new SqliteMutex();
  private readonly statements = new Map<string, BetterSqlite3.Statement>();
  /** The handle the cached statements belong to (a borrowed DataSource may be re-initialised). */
  private statementsOf: BetterSqlite3.Database | undefined;
  /** The file is in WAL mode (set by {@link configure}). */
  private isWal = false;

  /** The `DataSource` the handle belongs to (borrowed, or opened by ChokaQ). */
  private readonly dataSource: DataSource;

  constructor(readonly config: SqlStorageConfig) {
    this.logger = config.logger('SqliteJobStorage');
    this.dataSource = dataSourceOf(config, 'SQLite');
    this.prefix = config.schema;
  }

  /** True once {@link configure} found the file in WAL mode: reads never wait for another process's writer. */
  get wal(): boolean {
    return this.isWal;
  }

  /** Sets `busy_timeout` (config.busyTimeoutMs) and WAL mode on the connection. */
  async configure(): Promise<void> {
    const busyTimeoutMs = assertNonNegativeInt(this.config.busyTimeoutMs, 'busyTimeoutMs', 60_000);
    await this.retry('prepare', () =>
      this.mutex.runExclusive(() => {
        const db = this.handle();
        // Set first, so the journal-mode switch below waits briefly instead of 5 s (TypeORM's default).
        // On a borrowed DataSource this also shortens the application's own busy wait on the shared
        // connection: a long synchronous wait would freeze the whole process either way.
        db.pragma(`busy_timeout = ${busyTimeoutMs}`);
        const mode = String(db.pragma('journal_mode = WAL', { simple: true }));
        this.isWal = mode === 'wal';
        // Durable commits: better-sqlite3 opens an existing WAL file with synchronous = NORMAL
        // (its build sets SQLITE_DEFAULT_WAL_SYNCHRONOUS=1), where a power failure can lose the
        // last commits. ChokaQ's own connection syncs every commit except claims (see
        // writeUnsynced); a borrowed DataSource keeps the application's choice.
        if (this.config.ownsDataSource) db.pragma('synchronous = FULL');
        if (mode !== 'wal' && mode !== 'memory') {
          logEvent(
            this.logger,
            'SqliteNotWal',
            `SQLite journal_mode is '${mode}', not WAL: readers will block the writer`,
            { journalMode: mode },
          );
        }
      }),
    );
  }

  /** The better-sqlite3 handle behind the DataSource's single connection. */
  handle(): BetterSqlite3.Database {
    const driver = this.dataSource.driver as unknown as {
      databaseConnection?: BetterSqlite3.Database;
    };
    const db = driver.databaseConnection;
    assertDataSourceOpen(this.dataSource, 'SQLite');
    if (!db || !db.open) {
      throw new ChokaQError(
        'ChokaQ SQLite storage: the DataSource is not initialised (or was destroyed)',
      );
    }
    return db;
  }

  // ---------------------------------------------------------------- statements

  /** A cached prepared statement (FIFO-bounded; statements are re-prepared after a reconnect). */
  private statement(sql: string): BetterSqlite3.Statement {
    const db = this.handle();
    if (this.statementsOf !== db) {
      this.statements.clear();
      this.statementsOf = db;
    }
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      this.statements.set(sql, statement);
      if (this.statements.size > STATEMENT_CACHE_SIZE) {
        this.statements.delete(this.statements.keys().next().value!);
      }
    }
    return statement;
  }

  /** Every row of a statement. */
  all(sql: string, params: Params = {}): Row[] {
    return this.statement(sql).all(params) as Row[];
  }

  /** The first row of a statement, if any. */
  get(sql: string, params: Params = {}): Row | undefined {
    return this.statement(sql).get(params) as Row | undefined;
  }

  /** Runs a statement without result rows; returns the number of rows it changed. */
  run(sql: string, params: Params = {}): number {
    return this.statement(sql).run(params).changes;
  }

  /** Runs SQL text without parameters or a kept statement (DDL). */
  exec(sql: string): void {
    this.handle().exec(sql);
  }

  // ---------------------------------------------------------------- operations

  /** Retries transient failures of a whole operation (each attempt a fresh transaction). */
  retry<T>(name: string, attempt: () => Promise<T>, retry?: TransientRetryOptions): Promise<T> {
    return withTransientRetry(`sqlite.${name}`, attempt, isSqliteTransient, {
      ...this.config.transientRetry,
      ...retry,
    });
  }

  /** A write: one BEGIN IMMEDIATE transaction per attempt, under the mutex, retried when busy. */
  write<T>(name: string, work: () => T, retry?: TransientRetryOptions): Promise<T> {
    return this.retry(
      name,
      () => this.mutex.runExclusive(() => this.transaction('BEGIN IMMEDIATE', work)),
      retry,
    );
  }

  /** A read: one deferred transaction, so multi-statement reads see one WAL snapshot. */
  read<T>(name: string, work: () => T): Promise<T> {
    return this.retry(name, () => this.mutex.runExclusive(() => this.transaction('BEGIN', work)));
  }

  /**
   * A write whose COMMIT does not wait for fsync: the claim's (`synchronous = NORMAL` for this one
   * transaction when the connection runs FULL or EXTRA; restored right after, in the same
   * synchronous turn, so nothing else sees it). In WAL mode the commit is atomic and survives a
   * process crash; only a power or OS failure can lose it, and then its rows are Pending again as
   * if never claimed (a started job may run again: at-least-once, as after any crash). Every later
   * FULL commit (a start, a finalising move) syncs the WAL up to and including the claim, so no
   * later state can survive without it. Under the mutex, retried when busy, as {@link write}.
   */
  writeUnsynced<T>(name: string, work: () => T): Promise<T> {
    return this.retry(name, () =>
      this.mutex.runExclusive(() => {
        // Cached statements: db.pragma() would prepare a new statement three times per claim.
        const level = Number(this.get('PRAGMA synchronous')?.synchronous);
        if (level < 2) return this.transaction('BEGIN IMMEDIATE', work);
        this.run('PRAGMA synchronous = NORMAL');
        try {
          return this.transaction('BEGIN IMMEDIATE', work);
        } finally {
          this.run(`PRAGMA synchronous = ${level}`);
        }
      }),
    );
  }

  /**
   * Runs `work` inside the caller's open transaction (`EnqueueOptions.transaction`), under a
   * savepoint, so its writes are all-or-nothing inside the caller's transaction; the caller's
   * COMMIT or ROLLBACK decides the rest. The transaction is a QueryRunner of ChokaQ's own
   * DataSource (`work` runs on ChokaQ's connection), or a better-sqlite3 `Database` of the same
   * database file with a transaction open (directly, or the one a Knex transaction runs on; `work`
   * runs on that connection). Throws `ChokaQTransactionError` for anything else.
   *
   * Deliberately without the mutex: the caller owns a write transaction right now, and a ChokaQ
   * call holding the mutex would be waiting (asynchronously, see {@link SqliteConnectionInUseError})
   * for that very transaction to end — taking the mutex here could deadlock the caller against
   * ChokaQ. Running synchronously on the handle needs no lock anyway.
   */
  async inCallerTransaction<T>(
    name: string,
    transaction: unknown,
    work: (on: SqliteStatements) => T,
  ): Promise<T> {
    const on = this.callerStatements(await recogniseTransaction(transaction));
    on.run('SAVEPOINT chokaq_enqueue');
    try {
      const result = work(on);
      on.run('RELEASE chokaq_enqueue');
      return result;
    } catch (error) {
      on.run('ROLLBACK TO chokaq_enqueue');
      on.run('RELEASE chokaq_enqueue');
      // A busy file inside someone else's transaction cannot be retried here: the caller must retry
      // its whole transaction, so it gets the typed, retryable error.
      if (isSqliteTransient(error)) throw new ChokaQStorageUnavailableError(name, 1, error);
      throw error;
    }
  }

  /** Where a caller's transaction runs ChokaQ's statements: ChokaQ's connection or the caller's. */
  private callerStatements(caller: CallerTransaction): SqliteStatements {
    if (caller.kind === 'typeorm') {
      this.checkCallerRunner(caller.runner);
      return this;
    }
    if (caller.kind === 'sqlite') return this.foreign(openSqliteTransaction(caller.db));
    throw unsupportedTransaction(
      caller,
      'SQLite',
      "pass the better-sqlite3 Database your ORM runs on (in its transaction), a Knex transaction, or a QueryRunner of ChokaQ's DataSource",
    );
  }

  /** A caller's QueryRunner must be one of ChokaQ's own DataSource, with its transaction open. */
  private checkCallerRunner(runner: Partial<QueryRunner>): void {
    if (queryRunnerDataSource(runner) !== this.dataSource) {
      throw new ChokaQTransactionError('the QueryRunner belongs to another DataSource');
    }
    if (runner.isReleased) throw new ChokaQTransactionError('the QueryRunner was released');
    if (!runner.isTransactionActive || !this.handle().inTransaction) {
      throw new ChokaQTransactionError('the QueryRunner has no open transaction');
    }
  }

  /**
   * Statements on a caller's own better-sqlite3 connection: ChokaQ's own handle when it is that
   * one, else a connection of the same database file (a private or in-memory database of another
   * connection holds none of ChokaQ's tables, so it is refused).
   */
  private foreign(db: SqliteDatabaseLike): SqliteStatements {
    const own = this.handle();
    if ((db as unknown) === own) return this;
    if (db.memory || db.name === '' || own.memory || !sameFile(db.name, own.name)) {
      throw new ChokaQTransactionError(
        `the better-sqlite3 Database is not of ChokaQ's database file (${own.name})`,
      );
    }
    return new ForeignSqliteStatements(db);
  }

  /** Waits for the call in flight, forgets the prepared statements, then destroys an owned DataSource. */
  async close(): Promise<void> {
    await this.mutex.runExclusive(() => undefined);
    this.statements.clear();
    this.statementsOf = undefined;
    if (this.config.ownsDataSource && this.dataSource.isInitialized) {
      await this.dataSource.destroy();
    }
  }

  // ---------------------------------------------------------------- transactions

  /**
   * Runs `work` synchronously between `begin` and COMMIT; on any error rolls back before returning
   * (so before the mutex is released). `work` must not be async: the whole transaction has to finish
   * within this turn of the event loop so nothing else can use the connection in the middle of it.
   */
  private transaction<T>(begin: 'BEGIN' | 'BEGIN IMMEDIATE', work: () => T): T {
    const db = this.handle();
    if (db.inTransaction) throw new SqliteConnectionInUseError();
    this.statement(begin).run();
    try {
      const result = work();
      if (result instanceof Promise)
        throw new Error('BUG: a SQLite transaction body must be synchronous');
      this.statement('COMMIT').run();
      return result;
    } catch (error) {
      if (db.inTransaction) {
        try {
          this.statement('ROLLBACK').run();
        } catch (rollbackError) {
          logEvent(
            this.logger,
            'SqliteRollbackFailed',
            `ROLLBACK failed after ${String(error)}: ${String(rollbackError)}`,
            { error: String(error), rollbackError: String(rollbackError) },
          );
        }
      }
      throw error;
    }
  }
}

/** What the enqueue runs its statements on: ChokaQ's connection, or a caller's of the same file. */
export interface SqliteStatements {
  all(sql: string, params?: Params): Row[];
  get(sql: string, params?: Params): Row | undefined;
  run(sql: string, params?: Params): number;
}

/** Statements on a caller's better-sqlite3 connection, prepared once per call of the caller. */
class ForeignSqliteStatements implements SqliteStatements {
  private readonly prepared = new Map<string, ReturnType<SqliteDatabaseLike['prepare']>>();

  constructor(private readonly db: SqliteDatabaseLike) {}

  all(sql: string, params: Params = {}): Row[] {
    return this.statement(sql).all(params) as Row[];
  }

  get(sql: string, params: Params = {}): Row | undefined {
    return this.statement(sql).get(params) as Row | undefined;
  }

  run(sql: string, params: Params = {}): number {
    return this.statement(sql).run(params).changes;
  }

  private statement(sql: string): ReturnType<SqliteDatabaseLike['prepare']> {
    let statement = this.prepared.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.prepared.set(sql, statement);
    }
    return statement;
  }
}

/** Whether two database file names name one file (resolved through links, as SQLite opens them). */
function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return resolve(a) === resolve(b);
  }
}
