import * as typeorm1 from 'typeorm';
import * as typeorm03 from 'typeorm-0.3';
import { queryRunnerDataSource } from './data-source';

/**
 * The caller-transaction checks of every dialect ask which DataSource a QueryRunner belongs to.
 * TypeORM 0.3 and 1.x answer through different properties, so both lines are driven here with
 * their real QueryRunner classes (created, never connected: no database is needed).
 */
describe('queryRunnerDataSource', () => {
  const lines = [
    ['1.x', typeorm1.DataSource],
    ['0.3', typeorm03.DataSource],
  ] as const;
  const drivers = [
    { type: 'better-sqlite3', database: ':memory:' },
    { type: 'postgres', host: 'localhost' },
    { type: 'mssql', host: 'localhost', username: 'u', password: 'p' },
  ] as const;

  it.each(lines.flatMap(([line, DataSource]) => drivers.map((d) => [line, d.type, DataSource, d])))(
    'finds the DataSource of a TypeORM %s %s QueryRunner',
    (_line, _type, DataSource, options) => {
      const dataSource = new (DataSource as typeof typeorm1.DataSource)(
        options as typeorm1.DataSourceOptions,
      );
      const runner = dataSource.createQueryRunner();
      expect(queryRunnerDataSource(runner)).toBe(dataSource);
    },
  );

  it('finds nothing on an object that is not a QueryRunner', () => {
    expect(queryRunnerDataSource({})).toBeUndefined();
    expect(queryRunnerDataSource({ query: () => undefined })).toBeUndefined();
  });
});
