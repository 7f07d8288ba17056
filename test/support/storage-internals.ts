import type { DataSource } from 'typeorm';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';

/**
 * The TypeORM `DataSource` a storage runs on (every dialect keeps it in `config.dataSource`), for
 * tests that must look at the very connections ChokaQ uses: session settings, prepared
 * statements, the SQLite handle, a caller transaction on the same database.
 */
export function dataSourceOf(storage: JobStorage): DataSource {
  return (storage as unknown as { config: { dataSource: DataSource } }).config.dataSource;
}
