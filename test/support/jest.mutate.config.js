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
  testMatch: [
    '<rootDir>/libs/**/*.spec.ts',
    '<rootDir>/test/runtime/**/*.spec.ts',
    '<rootDir>/test/contract/**/*.spec.ts',
  ],
  reporters: ['default'],
};
