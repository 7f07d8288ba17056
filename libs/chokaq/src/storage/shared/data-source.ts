import type { DataSource } from 'typeorm';
import { ChokaQError } from '../../errors';

/**
 * Why an operation on a closed storage is refused. It happens when code outlives ChokaQ's
 * shutdown — typically a handler that ignored its abort signal past `shutdownGracePeriodMs` and
 * then enqueues a follow-up job, or a provider that enqueues from its own `onApplicationShutdown`.
 * Not retryable: the storage will not come back in this process.
 */
export function storageClosedMessage(dialect: string, how: string): string {
  return (
    `ChokaQ ${dialect} storage is closed (${how}, e.g. by application shutdown). Enqueue ` +
    `before shutdown completes, or from a handler that stops when its signal aborts.`
  );
}

/**
 * Refuses an operation on a destroyed `DataSource` with a typed error ({@link storageClosedMessage})
 * instead of the driver's raw one ("Driver not Connected").
 */
export function assertDataSourceOpen(dataSource: DataSource, dialect: string): void {
  if (!dataSource.isInitialized) {
    throw new ChokaQError(storageClosedMessage(dialect, 'its DataSource was destroyed'));
  }
}

/**
 * The `DataSource` of a dialect that always runs on one (SQLite, SQL Server: borrowed or opened by
 * ChokaQ). Only PostgreSQL may run without one, on a `pg` pool ChokaQ opened itself.
 */
export function dataSourceOf(config: { dataSource?: DataSource }, dialect: string): DataSource {
  if (config.dataSource === undefined) {
    throw new Error(`ChokaQ's ${dialect} storage was constructed without a DataSource`);
  }
  return config.dataSource;
}

/**
 * The `DataSource` a TypeORM `QueryRunner` belongs to, on every supported TypeORM line: 1.x names it
 * `dataSource` (keeping `connection` as a deprecated alias), 0.3 has only `connection`. Undefined
 * when `runner` has neither, e.g. it is not a QueryRunner at all.
 */
export function queryRunnerDataSource(runner: object): unknown {
  const { dataSource, connection } = runner as { dataSource?: unknown; connection?: unknown };
  return dataSource ?? connection;
}
