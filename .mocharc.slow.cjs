// `npm run test:slow`'s mocha: the slow tier only (test/slowSpecs.cjs).
'use strict';
const base = require('./.mocharc.cjs');

module.exports = { ...base, spec: require('./test/slowSpecs.cjs'), ignore: [] };
