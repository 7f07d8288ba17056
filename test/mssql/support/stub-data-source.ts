import { DataSource } from 'typeorm';
import type { SqlServerDataSourceOptions } from 'typeorm/driver/sqlserver/SqlServerDataSourceOptions';

/**
 * A TypeORM SQL Server `DataSource` that is never initialised, so nothing connects: the driver
 * stack (TypeORM → mssql → tedious) is there for tests that stub the request or only build
 * parameters.
 */
export function stubMssqlDataSource(
  options: SqlServerDataSourceOptions['options'] = {},
): DataSource {
  return new DataSource({
    type: 'mssql',
    host: 'stub.invalid',
    username: 'u',
    password: 'p',
    database: 'd',
    options,
  });
}
