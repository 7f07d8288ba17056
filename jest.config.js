/**
 * One Jest run covers unit specs (beside the code), the storage contract suite and the
 * end-to-end suites under test/. SWC transpiles with decorator metadata, which Nest's
 * dependency injection needs; `npm run typecheck` does the type checking separately.
 */
const swc = JSON.parse(require('fs').readFileSync(`${__dirname}/.swcrc`, 'utf8'));

/** @type {import('jest').Config} */
module.exports = {
  rootDir: __dirname,
  testEnvironment: 'node',
  testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
  // `npm run mutate`'s sandbox copies of the repository, while it runs.
  modulePathIgnorePatterns: ['<rootDir>/.stryker-tmp/'],
  transform: { '^.+\\.ts$': ['@swc/jest', { ...swc, swcrc: false }] },
  moduleNameMapper: {
    '^@chokaq/nestjs$': '<rootDir>/libs/chokaq/src',
    '^@chokaq/nestjs/(.*)$': '<rootDir>/libs/chokaq/src/$1',
  },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  testTimeout: 60_000,
  maxWorkers: 2,
};
