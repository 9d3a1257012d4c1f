#!/usr/bin/env node
// Records how long each test suite took, for the test sequencer (test/support/sequencer.js starts the longest first).
//   npx jest --json --outputFile=/tmp/jest.json && node scripts/testDurations.js /tmp/jest.json [--top 25]
// Writes test/support/durations.json (seconds per suite, by path relative to the repository; the report may come
// from another checkout, e.g. a CI run's clean clone) and prints the
// total of the suites' durations and the slowest suites. Commit the list after a whole run when suites were
// added or got much faster or slower.
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const [file, ...rest] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/testDurations.js <jest --json output> [--top N] [--no-write]');
  process.exit(2);
}
const topAt = rest.indexOf('--top');
const top = topAt >= 0 ? Number(rest[topAt + 1]) : 25;
const report = JSON.parse(readFileSync(file, 'utf8'));
/**
 * The checkout the report was made in: this one, or another (a CI run's clean clone): every suite is under its
 * `test/` folder, so the root is what the suites' paths share before that folder.
 */
function rootOf(names) {
  const here = path.resolve(__dirname, '..');
  if (names.every((n) => n.startsWith(here + path.sep))) return here;
  let common = names[0] ?? '';
  for (const n of names) while (!n.startsWith(common)) common = common.slice(0, -1);
  const at = common.lastIndexOf(`${path.sep}test${path.sep}`);
  return at >= 0 ? common.slice(0, at) : here;
}
const root = rootOf(report.testResults.map((r) => r.name));

const suites = report.testResults
  .map((r) => ({
    path: path.relative(root, r.name).split(path.sep).join('/'),
    seconds: Math.round((r.endTime - r.startTime) / 100) / 10,
    tests: r.assertionResults.length,
    status: r.status,
  }))
  .sort((a, b) => b.seconds - a.seconds);

const sum = suites.reduce((s, r) => s + r.seconds, 0);
const wall = (Math.max(...report.testResults.map((r) => r.endTime)) - report.startTime) / 1000;
console.log(
  `${suites.length} suites, ${report.numTotalTests} tests (${report.numFailedTests} failed, ${report.numPendingTests} skipped); ` +
    `suites' durations sum ${(sum / 60).toFixed(1)} min; wall ${(wall / 60).toFixed(1)} min`,
);
for (const [i, s] of suites.slice(0, top).entries())
  console.log(
    `${String(i + 1).padStart(3)} ${s.seconds.toFixed(1).padStart(7)} s  ${s.path} (${s.tests} tests${s.status === 'passed' ? '' : `, ${s.status}`})`,
  );

if (!rest.includes('--no-write')) {
  const list = Object.fromEntries(suites.map((s) => [s.path, Math.round(s.seconds)]));
  writeFileSync(path.join(__dirname, '..', 'test/support/durations.json'), JSON.stringify(list, null, 2) + '\n');
}
