/**
 * @deprecated Kept while suites move to the one fixture; import from `./test-database` instead.
 */
export type { DialectFixture, TableName, TestDatabase } from './test-database';
export { DIALECTS, describeEachDialect } from './test-database';
