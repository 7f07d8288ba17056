// Mutation testing (`npm run mutate`): StrykerJS with the Jest runner and the TypeScript checker.
// Scoped by default to the small modules where a silent bug loses or duplicates work or lets
// someone in; run one with `npm run mutate -- --mutate libs/chokaq/src/<path>.ts`. Too slow for
// `npm test`: run it on what you change, and record its score in docs/mutation-testing.md.
// Only the tests that cover a mutant run for it (per-test coverage), and results are kept in
// reports/stryker-incremental.json, so a second run only tests what changed.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'jest',
  jest: {
    projectType: 'custom',
    configFile: 'test/support/jest.mutate.config.js',
    enableFindRelatedTests: true,
  },
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: 'perTest',
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  mutate: [
    'libs/chokaq/src/runtime/completion-batcher.ts',
    'libs/chokaq/src/runtime/job-finaliser.ts',
    'libs/chokaq/src/runtime/heartbeat.loop.ts',
    'libs/chokaq/src/runtime/started-ahead.ts',
    'libs/chokaq/src/storage/shared/rate-window.ts',
    'libs/chokaq/src/storage/shared/claim-order.ts',
    'libs/chokaq/src/admin/confirmation-token.ts',
    'libs/chokaq/src/deck/deck-access.guard.ts',
    'libs/chokaq/src/deck/deck-origin.ts',
    'libs/chokaq/src/validation/list-cursor.ts',
    'libs/chokaq/src/validation/validate-filter.ts',
    'libs/chokaq/src/common/echo-value.ts',
  ],
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  thresholds: { high: 90, low: 85, break: null },
  concurrency: 2,
  timeoutMS: 20_000,
  tempDirName: '.stryker-tmp',
};
