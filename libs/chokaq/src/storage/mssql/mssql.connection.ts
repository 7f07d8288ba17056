import type { ChokaQLogger } from '../../interfaces/chokaq-logger.interface';
import type { DataSource, QueryRunner } from 'typeorm';
import { ChokaQTransactionError } from '../../errors';
import type { Checked } from '../../interfaces/checked.interface';
import type { CompletedJob } from '../../interfaces/job.interface';
import { assertDataSourceOpen, dataSourceOf, queryRunnerDataSource } from '../shared/data-source';
import { recogniseTransaction, unsupportedTransaction } from '../shared/caller-transaction';
import { SqlHandlerTransaction } from '../shared/handler-transaction';
import { MssqlTypes, runOnMssqlTransaction, sqlType } from './mssql-caller-transaction';
import { withTransientRetry } from '../shared/transient-retry';
import { SqlStorageConfig } from '../storage-config';
import { isTransientMssqlError } from './mssql-errors';
import { MssqlStatement } from './mssql-params';
import { BINARY_KEY_COLLATION } from './mssql.schema';
import type { MssqlSchema } from './sql';

/** One row of a batch's first result set, as the driver returns it. */
export type Row = Record<string, unknown>;

/** Runs one batch on the transaction's runner and returns its rows. */
export type Exec = (statement: MssqlStatement) => Promise<Row[]>;

/** What {@link MssqlConnection.schemaQuery} uses of TypeORM's SQL Server driver: its mssql pool and module. */
interface MssqlDriverInternals {
  obtainMasterConnection(): Promise<unknown>;
  mssql: MssqlTypes & {
    Request: new (
      pool: unknown,
      overrides: { requestTimeout: number },
    ) => {
      input(name: string, type: unknown, value: unknown): void;
      query(sql: string): Promise<{ recordset?: unknown[] }>;
    };
  };
}

/** A ChokaQ-owned transaction, as {@link MssqlConnection.transaction} hands it to its body. */
export interface MssqlTransaction {
  /** Runs one batch inside the transaction. */
  readonly exec: Exec;
  /** Ends the transaction without committing; the body then returns without further batches. */
  rollback(): Promise<void>;
}

/** A numeric column as a number (`bigint` arrives as a string); SQL NULL as 0. */
export function num(value: unknown): number {
  return typeof value === 'number' ? value : Number(value ?? 0);
}

/** A numeric column as a number, SQL NULL as null. */
export function numOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

/** A `bit` column as a boolean (tedious returns `true`/`false`; a cast may give 1 or '1'). */
export function bool(value: unknown): boolean {
  return value === true || value === 1 || value === '1';
}

/** The ids of `rows`, from `column`. */
export function idsOf(rows: readonly Row[], column = 'Id'): string[] {
  return rows.map((r) => String(r[column]));
}

/**
 * The plumbing both halves of the SQL Server dialect share: runners of one `DataSource`, batch
 * execution through TypeORM's mssql driver (`QueryRunner.query(sql, params, true)`: positional
 * `@0…` parameters, first result set in `records`), ChokaQ's one multi-batch transaction, the
 * check of a caller's transaction, and the transient retry around each operation. It knows no job.
 *
 * Row counts never come from the driver: every batch runs with `SET NOCOUNT ON` and selects what
 * it changed (ids from `OUTPUT … INTO` table variables, or `@@ROWCOUNT`), see `sql/`.
 */
export class MssqlConnection {
  readonly dataSource: DataSource;
  /** The schema's name, validated (the only identifier the builders inline). */
  readonly schema: string;
  /** Under the name the dialect has always logged with. */
  readonly logger: ChokaQLogger;

  /**
   * What the statement builders are given: the schema, and whether its key columns are binary
   * (`BINARY_KEY_COLLATION`) as `prepare()` read it ({@link observeKeyCollation}); binary until
   * then, as `ensureSchema()` creates a new install.
   */
  target: MssqlSchema;

  constructor(readonly config: SqlStorageConfig) {
    this.logger = config.logger('MssqlJobStorage');
    this.dataSource = dataSourceOf(config, 'SQL Server');
    this.schema = config.schema;
    this.target = { name: this.schema, binaryKeys: true };
  }

  /**
   * Records the collation of `JobsHot.Queue` (null: no such table yet). An install created by an
   * earlier release, or by a DBA's script of one, keeps the database's collation until
   * `chokaq migrate --binary-keys` converts it; its statements then declare their table variables
   * without `COLLATE`, exactly as before. A missing table is a new install, which the bootstrap
   * creates with binary keys.
   */
  observeKeyCollation(collation: string | null): void {
    const binaryKeys = collation === null || collation === BINARY_KEY_COLLATION;
    this.target = { name: this.schema, binaryKeys };
  }

  /** Runs one batch on `runner`, or on a pooled runner of its own that it releases. */
  async execute(statement: MssqlStatement, runner?: QueryRunner): Promise<Row[]> {
    if (!runner) assertDataSourceOpen(this.dataSource, 'SQL Server');
    const own = runner ?? this.dataSource.createQueryRunner();
    try {
      const result = await own.query(statement.sql, [...statement.params], true);
      return (result?.records ?? []) as Row[];
    } finally {
      if (!runner) await own.release();
    }
  }

  /**
   * Runs one batch with the transient retry. Safe to repeat: every statement is one batch whose
   * failure rolled back everything it did (`XACT_ABORT`), and worker-owned statements are fenced,
   * so a repeat after an ambiguous commit changes nothing.
   */
  query(name: string, statement: MssqlStatement): Promise<Row[]> {
    return this.retry(name, () => this.execute(statement));
  }

  /**
   * Runs the schema bootstrap batch, with the transient retry, under a request timeout of its own
   * (`storage.schemaTimeoutMs`; 0, the default, is none) instead of the one that bounds ordinary
   * batches: a version step that builds an index or adds a column on a large table must not be
   * cancelled half-way by the 90 s meant for claims and moves, then rolled back and repeated by the
   * retry. Its waits are bounded inside the batch (the applock's 60 s, each DDL statement's
   * `LOCK_TIMEOUT`). mssql's `Request` takes the timeout per request (`requestTimeout` override,
   * handed to tedious's `Request.setTimeout`, where 0 means none); TypeORM's `QueryRunner.query`
   * cannot pass it, so the batch goes to the driver's pool directly. Without parameters `query`
   * still runs it through `sp_executesql` (tedious `execSql`), so its `SET` options end with it.
   * A parameter (the partition boundaries of `convertToPartitioned`) is declared with the type and
   * width `ParamList` gave it, as TypeORM declares them on ChokaQ's other batches.
   */
  schemaQuery(name: string, statement: MssqlStatement): Promise<Row[]> {
    return this.retry(name, async () => {
      assertDataSourceOpen(this.dataSource, 'SQL Server');
      const driver = this.dataSource.driver as unknown as MssqlDriverInternals;
      const pool = await driver.obtainMasterConnection();
      const request = new driver.mssql.Request(pool, {
        requestTimeout: this.config.schemaTimeoutMs,
      });
      for (const [i, param] of statement.params.entries()) {
        request.input(String(i), sqlType(param, driver.mssql), param.value);
      }
      const result = await request.query(statement.sql);
      return (result?.recordset ?? []) as Row[];
    });
  }

  /** The transient retry of one operation (`operation` is told its attempt, 1 for the first). */
  retry<T>(name: string, operation: (attempt: number) => Promise<T>): Promise<T> {
    return withTransientRetry(name, operation, isTransientMssqlError, this.config.transientRetry);
  }

  /**
   * One READ COMMITTED transaction on one pooled runner, with the transient retry; `fn` must be
   * safe to repeat from scratch. Committed when `fn` returns, unless it rolled back itself; rolled
   * back when it throws. The level is explicit: without one TypeORM begins at the DataSource
   * option `isolationLevel`, and a borrowed DataSource may set SERIALIZABLE or SNAPSHOT there.
   */
  transaction<T>(name: string, fn: (tx: MssqlTransaction) => Promise<T>): Promise<T> {
    return this.retry(name, async () => {
      assertDataSourceOpen(this.dataSource, 'SQL Server');
      const runner = this.dataSource.createQueryRunner();
      try {
        await runner.startTransaction('READ COMMITTED');
        const result = await fn({
          exec: (statement) => this.execute(statement, runner),
          rollback: () => runner.rollbackTransaction(),
        });
        if (runner.isTransactionActive) await runner.commitTransaction();
        return result;
      } catch (error) {
        if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
        throw error;
      } finally {
        await runner.release();
      }
    });
  }

  /**
   * Runs batches in the caller's transaction (`EnqueueOptions.transaction`), or undefined when none
   * was given: a TypeORM `QueryRunner` of this DataSource, not released, with an open transaction,
   * or a begun transaction of the `mssql` package (`new sql.Transaction(pool)`, on this database),
   * each parameter declared with its own type as on ChokaQ's connections. Throws
   * `ChokaQTransactionError` otherwise.
   */
  async callerExecutor(
    transaction: unknown,
  ): Promise<((statement: MssqlStatement) => Promise<Row[]>) | undefined> {
    if (transaction === undefined || transaction === null) return undefined;
    const caller = await recogniseTransaction(transaction);
    if (caller.kind === 'mssql')
      return (statement) => runOnMssqlTransaction(caller.transaction, statement);
    if (caller.kind !== 'typeorm') {
      throw unsupportedTransaction(
        caller,
        'SQL Server',
        "pass an mssql transaction or a QueryRunner of ChokaQ's DataSource",
      );
    }
    const runner = caller.runner as QueryRunner;
    if (queryRunnerDataSource(runner) !== this.dataSource) {
      throw new ChokaQTransactionError('the QueryRunner belongs to another DataSource');
    }
    if (runner.isReleased) throw new ChokaQTransactionError('the QueryRunner was already released');
    if (!runner.isTransactionActive) {
      throw new ChokaQTransactionError('no transaction is open on the QueryRunner');
    }
    return (statement) => this.execute(statement, runner);
  }

  /**
   * Opens the READ COMMITTED transaction of one run of a transactional handler on a pooled
   * connection of its own (TypeORM's `startTransaction`: the level is set explicitly, see
   * {@link transaction}; the handler's own `manager.transaction(…)` nests as a savepoint). SQL
   * Server has no per-transaction statement timeout: the driver's `requestTimeout` (TypeORM option
   * `requestTimeout`, 15 s by default) bounds each statement. `archive` runs the fenced move on it.
   */
  handlerTransaction(
    archive: (runner: QueryRunner, completed: Checked<CompletedJob>) => Promise<boolean>,
  ): Promise<SqlHandlerTransaction> {
    return this.retry('beginHandlerTransaction', async () => {
      assertDataSourceOpen(this.dataSource, 'SQL Server');
      const runner = this.dataSource.createQueryRunner();
      try {
        await runner.startTransaction('READ COMMITTED');
      } catch (error) {
        await runner.release();
        throw error;
      }
      return new SqlHandlerTransaction(runner, {
        archive: (completed) => archive(runner, completed),
        abandon: () => this.abandonTransaction(runner),
      });
    });
  }

  /** The `pool.max` of the mssql pool behind the DataSource (mssql's default 10). */
  poolSize(): number | undefined {
    const driver = this.dataSource.driver as unknown as {
      master?: { config?: { pool?: { max?: unknown } } };
    };
    const max = driver.master?.config?.pool?.max;
    return typeof max === 'number' && max > 0 ? max : undefined;
  }

  /**
   * Ends a handler's transaction without waiting for the handler. The runner is marked released
   * first, so a later statement of the handler fails instead of running outside the transaction
   * once it is rolled back. mssql refuses to roll back while a request of the transaction is in
   * flight (`EREQINPROG`); then the rollback is tried again in the background until that request
   * ends (bounded by the driver's `requestTimeout`), and the connection returns to the pool.
   */
  private async abandonTransaction(runner: QueryRunner): Promise<void> {
    (runner as { isReleased: boolean }).isReleased = true;
    const tx = (runner as unknown as { databaseConnection?: { rollback(): Promise<void> } })
      .databaseConnection;
    if (!tx || typeof tx.rollback !== 'function') return;
    const attempt = async (delayMs: number): Promise<void> => {
      try {
        await tx.rollback();
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'EREQINPROG') return;
        const next = Math.min(1_000, delayMs * 2);
        setTimeout(() => void attempt(next), delayMs).unref?.();
      }
    };
    await attempt(50);
  }

  /** Destroys the DataSource if ChokaQ created it; a borrowed one is left open. */
  async close(): Promise<void> {
    if (this.config.ownsDataSource && this.dataSource.isInitialized)
      await this.dataSource.destroy();
  }
}
