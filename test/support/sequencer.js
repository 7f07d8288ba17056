/**
 * The order in which Jest starts the test files: files that failed in the last run first, then the
 * longest first, so the long suites do not start last and leave the other workers idle at the end.
 * Jest's own sequencer knows how long a file takes only from its cache of earlier runs; without it
 * (a fresh clone, as CI runs) it goes by file size, and the slowest suites here are not the
 * largest files. So the files below carry an estimate (seconds with four workers on two cores,
 * rounded), used when the cache has no time for them. Update it when a suite's time changes much:
 * `npx jest --json --outputFile=times.json` has every file's start and end.
 */
'use strict';

const { relative } = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const ESTIMATED_SECONDS = new Map([
  ['test/e2e/pack.e2e.spec.ts', 225],
  ['test/e2e/cli.e2e.spec.ts', 195],
  ['test/faults/chaos.spec.ts', 125],
  ['test/faults/start-ahead.spec.ts', 100],
  ['test/faults/clock-skew.spec.ts', 70],
  ['test/e2e/previous-release-upgrade.e2e.spec.ts', 65],
  ['test/e2e/deck/deck-browser.e2e.spec.ts', 60],
  ['test/e2e/multi-process.e2e.spec.ts', 60],
  ['test/faults/outage.spec.ts', 55],
  ['test/mssql/tsql-grammar.spec.ts', 50],
  ['test/faults/transactional.spec.ts', 50],
  ['test/faults/batch-processes.spec.ts', 45],
  ['test/mssql/tsql-locking.spec.ts', 45],
  ['test/e2e/rate-limit.e2e.spec.ts', 40],
  ['test/e2e/lifecycle.e2e.spec.ts', 35],
  ['test/mssql/tsql-collation.spec.ts', 35],
  ['test/e2e/deck/deck-dlq-browser.e2e.spec.ts', 35],
  ['test/faults/dependency-processes.spec.ts', 35],
  ['test/faults/handlers.spec.ts', 30],
]);

class LongestFirstSequencer extends Sequencer {
  sort(tests) {
    const seconds = (test) => {
      const cached = this.time(test);
      if (cached != null) return cached / 1000;
      return ESTIMATED_SECONDS.get(relative(test.context.config.rootDir, test.path)) ?? 0;
    };
    const size = (test) => test.context.hasteFS.getSize(test.path) ?? 0;
    return [...tests].sort(
      (a, b) =>
        Number(this.hasFailed(b)) - Number(this.hasFailed(a)) ||
        seconds(b) - seconds(a) ||
        size(b) - size(a),
    );
  }
}

module.exports = LongestFirstSequencer;
