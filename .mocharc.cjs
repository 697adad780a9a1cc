// `npm test`'s mocha: every spec but the slow tier (test/slowSpecs.cjs, run by `npm run test:slow`).
'use strict';
const slow = require('./test/slowSpecs.cjs');

module.exports = {
  'node-option': ['import=tsx'],
  // The web console built once; the OpenAPI conformance check of every answer the specs get (README, API reference).
  require: ['test/support/consoleBuildHook.ts', 'test/support/openApiTrafficHook.ts'],
  spec: ['shared/**/*.spec.ts', 'command-side/**/*.spec.ts', 'query-side/**/*.spec.ts', 'projections/**/*.spec.ts', 'ops/**/*.spec.ts', 'bench/**/*.spec.ts', 'test/**/*.spec.ts'],
  ignore: slow,
  timeout: 20000,
  exit: true,
  reporter: './test/support/summary-reporter.cjs',
};
