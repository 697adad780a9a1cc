// The spec reporter plus one closing line in the plain form CI reads: "N passed, N failed, N skipped".
// With TEST_TIMINGS=<file>, it also writes each spec file's wall time (its top-level suites, hooks
// included) as JSON: what decides which specs are too slow for `npm test` (README, Tests).
'use strict';
const { writeFileSync } = require('node:fs');
const Mocha = require('mocha');

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const timings = new Map();
    const started = new Map();
    const output = process.env.TEST_TIMINGS;
    if (output) {
      runner.on(Mocha.Runner.constants.EVENT_SUITE_BEGIN, (suite) => {
        if (suite.file && suite.parent && suite.parent.root) started.set(suite, Date.now());
      });
      runner.on(Mocha.Runner.constants.EVENT_SUITE_END, (suite) => {
        const since = started.get(suite);
        if (since === undefined) return;
        timings.set(suite.file, (timings.get(suite.file) ?? 0) + (Date.now() - since));
      });
    }
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const { passes, failures, pending } = runner.stats;
      if (output) {
        const sorted = [...timings].sort((a, b) => b[1] - a[1]).map(([file, ms]) => ({ file: file.replace(`${process.cwd()}/`, ''), ms }));
        writeFileSync(output, `${JSON.stringify(sorted, null, 1)}\n`);
      }
      // For .ci/run, which runs `npm test` and `npm run test:slow` and prints one total.
      if (process.env.TEST_SUMMARY_FILE) writeFileSync(process.env.TEST_SUMMARY_FILE, `${JSON.stringify({ passes, failures, pending })}\n`);
      process.stdout.write(`\ntests: ${passes} passed, ${failures} failed, ${pending} skipped\n`);
    });
  }
}

module.exports = SummaryReporter;
