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
  // The longest files start first, also in a fresh clone without Jest's timing cache.
  testSequencer: '<rootDir>/test/support/sequencer.js',
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  testTimeout: 60_000,
  // Four test files at once on two cores: many suites spend most of their time waiting on the
  // clock (rate windows, timeouts, rescues) or on child processes, and two workers left the CPU
  // idle then. Measured on this 2-core machine: 567 s with two workers, 469 with three, 389 with
  // four (compile cache of test/support/register.js included).
  maxWorkers: 4,
};
