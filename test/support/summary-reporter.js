/**
 * Prints one plain closing line after everything Jest prints, in the form CI tooling reads in any
 * language: `jest: N passed, N failed, N skipped`. Written when the process exits, because Jest's
 * own summary is printed after the reporters' onRunComplete.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests, numFailedTests, numPendingTests, numTodoTests } = results;
    const line = `jest: ${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests + numTodoTests} skipped`;
    process.once('exit', () => process.stderr.write(`\n${line}\n`));
  }
}

module.exports = SummaryReporter;
