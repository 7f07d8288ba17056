/**
 * The Jest configuration of `npm run mutate`: the project's, limited to the suites that run in
 * seconds (unit specs, the runtime suites, and the storage contract on SQLite and PostgreSQL).
 * The end-to-end, fault and browser suites start processes and apps: too slow to run per mutant.
 */
const base = require('../../jest.config.js');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  rootDir: `${__dirname}/../..`,
  // CHOKAQ_MUTATE_TESTS=unit: the unit specs alone, for a pure module whose own spec is meant to
  // pin it (a validator, a token): each mutant then costs milliseconds instead of database runs.
  // CHOKAQ_MUTATE_TESTS=test/<path>.spec.ts: the unit specs and that one suite, for a module a
  // suite outside the contract pins (a PostgreSQL-only feature and its spec under test/postgres).
  testMatch:
    process.env.CHOKAQ_MUTATE_TESTS === 'unit'
      ? ['<rootDir>/libs/**/*.spec.ts']
      : process.env.CHOKAQ_MUTATE_TESTS?.startsWith('test/')
        ? ['<rootDir>/libs/**/*.spec.ts', `<rootDir>/${process.env.CHOKAQ_MUTATE_TESTS}`]
        : [
            '<rootDir>/libs/**/*.spec.ts',
            '<rootDir>/test/runtime/**/*.spec.ts',
            '<rootDir>/test/contract/**/*.spec.ts',
          ],
  reporters: ['default'],
};
