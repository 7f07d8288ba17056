import type { DataSource } from 'typeorm';
import { ChokaQError } from '../../errors';

/**
 * Refuses an operation on a destroyed `DataSource` with a typed error instead of the driver's raw
 * one ("Driver not Connected"). It happens when code outlives ChokaQ's shutdown — typically a
 * handler that ignored its abort signal past `shutdownGracePeriodMs` and then enqueues a follow-up
 * job, or a provider that enqueues from its own `onApplicationShutdown`. Not retryable: the storage
 * will not come back in this process.
 */
export function assertDataSourceOpen(dataSource: DataSource, dialect: string): void {
  if (!dataSource.isInitialized) {
    throw new ChokaQError(
      `ChokaQ ${dialect} storage is closed (its DataSource was destroyed, e.g. by application ` +
        `shutdown). Enqueue before shutdown completes, or from a handler that stops when its ` +
        `signal aborts.`,
    );
  }
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
