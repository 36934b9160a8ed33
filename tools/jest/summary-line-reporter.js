// @ts-check
/**
 * Ends the run with one plain line, "tests: N passed, N failed, N skipped", that tools reading
 * a run's output (CI) understand whatever the test runner.
 */
class SummaryLineReporter {
  /** @param {unknown} _contexts @param {import('@jest/test-result').AggregatedResult} results */
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(`\ntests: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}

module.exports = SummaryLineReporter;
