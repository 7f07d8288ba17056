import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';

/**
 * The TypeORM `DataSource` a storage runs on (`config.dataSource`: borrowed, or opened by ChokaQ
 * for SQLite and SQL Server), for tests that must look at the very connections ChokaQ uses:
 * session settings, the SQLite handle, a caller transaction on the same database. A PostgreSQL
 * storage ChokaQ opened itself has none: see {@link pgPoolOf}.
 */
export function dataSourceOf(storage: JobStorage): DataSource {
  const { dataSource } = (storage as unknown as { config: { dataSource?: DataSource } }).config;
  if (dataSource === undefined) throw new Error('this storage runs without a DataSource');
  return dataSource;
}

/** The `pg` pool a PostgreSQL storage takes its connections from (its own, or its DataSource's). */
export function pgPoolOf(storage: JobStorage): Pool {
  return (storage as unknown as { store: { db: { pool: Pool } } }).store.db.pool;
}
