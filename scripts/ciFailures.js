#!/usr/bin/env node
// The closing lines of a CI run, from jest's JSON summary: each failed test by its full name with the first lines
// of its failure (colour codes and stack lines removed), then the counts, so the end of the log says what failed.
//   node scripts/ciFailures.js /tmp/jest.json
'use strict';
const fs = require('fs');

const file = process.argv[2];
if (!file || !fs.existsSync(file)) {
  console.log('tests: no summary was written (jest did not finish)');
  process.exit(0);
}
const r = JSON.parse(fs.readFileSync(file, 'utf8'));
const plain = (s) => String(s).replace(/\u001b\[[0-9;]*m/g, '');
const LINES = 12;
/** A failure's first lines, without colour codes, blank lines and stack frames. */
const firstLines = (s) =>
  plain(s)
    .split('\n')
    .filter((l) => l.trim() && !/^\s+at /.test(l))
    .slice(0, LINES)
    .join('\n');
for (const suite of r.testResults ?? []) {
  const name = suite.name.replace(process.cwd() + '/', '');
  const failed = (suite.assertionResults ?? []).filter((a) => a.status === 'failed');
  if (suite.status === 'failed' && failed.length === 0) {
    console.log(`\nFAILED ${name} (the suite itself)`);
    console.log(firstLines(suite.message));
  }
  for (const a of failed) {
    console.log(`\nFAILED ${name} › ${a.fullName}`);
    console.log(firstLines((a.failureMessages ?? []).join('\n')));
  }
}
console.log(`\ntests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`);
