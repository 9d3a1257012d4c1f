#!/usr/bin/env node
'use strict';
/**
 * The export soak at size (docs/soak-test.md): 5,000 people x 10 days by default, exported to a real slapd and
 * a real PostgreSQL, each day compared with the oracle. The harness is TypeScript under test/support/soak/ and
 * needs jest's global setup (the tests' Azurite), so this script runs the soak's own jest file,
 * test/integration/soak/exportSoak.test.ts, with SOAK_PEOPLE, SOAK_DAYS and SOAK_SEED: one harness for the test
 * and the bench, nothing compiled twice. Prints JSON: the size, the wall time, the time per day and per run
 * kind, and the differences (by category, silent ones included). jest's own verdict (zero differences) is in
 * `jestPassed`; the script exits 0 whenever the soak ran to its end, since a bench reports, it does not judge.
 *
 * Usage: npm run bench:soak -- [--people 5000] [--days 10] [--seed 20261129] [--report <file>]
 */
const { spawn } = require('node:child_process');
const { existsSync, readFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, arg, stealSeconds } = require('../support');

const PEOPLE = arg('people', 5000);
const DAYS = arg('days', 10);
const SEED = arg('seed', 20261129);
const REPORT = arg('report', path.join(os.tmpdir(), `soak-report-${SEED}-${PEOPLE}x${DAYS}.json`));

async function main() {
  const started = Date.now();
  const steal0 = stealSeconds();
  const load0 = os.loadavg()[0];
  // --runInBand: one jest process (the soak is one test file); its progress lines go to stderr as they come.
  const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/jest/bin/jest.js'), '--runInBand', 'test/integration/soak/exportSoak.test.ts'], {
    cwd: ROOT,
    env: { ...process.env, SOAK_PEOPLE: String(PEOPLE), SOAK_DAYS: String(DAYS), SOAK_SEED: String(SEED), SOAK_REPORT: REPORT, SOAK_VERBOSE: '1' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise((resolve) => child.on('exit', (c, sig) => resolve(sig ? sig : c)));
  if (!existsSync(REPORT)) {
    process.stderr.write(`The soak wrote no report (jest exited ${code}): it did not get through its days.\n`);
    process.exit(1);
  }
  const report = JSON.parse(readFileSync(REPORT, 'utf8'));
  const byKind = {};
  for (const d of report.dayReports)
    for (const r of d.runs) {
      const kind = r.label.replace(/ \(.*\)$/, '');
      (byKind[kind] ??= []).push(r.durationMs / 1000);
    }
  const steal1 = stealSeconds();
  console.log(
    JSON.stringify(
      {
        bench: 'soak',
        people: PEOPLE,
        days: DAYS,
        seed: SEED,
        wallSeconds: Math.round((Date.now() - started) / 100) / 10,
        soakSeconds: Math.round(report.durationMs / 100) / 10,
        cpus: os.cpus().length,
        loadAverageAtStart: Math.round(load0 * 10) / 10,
        stealSeconds: steal0 !== null && steal1 !== null ? Math.round((steal1 - steal0) * 10) / 10 : null,
        perDay: report.dayReports.map((d) => ({
          day: d.day,
          mode: d.mode,
          hrImport: d.hrImport,
          hrRows: d.hrRows,
          seconds: Math.round(d.durationMs / 100) / 10,
          kill: d.faults.kill ?? null,
          refused: d.faults.refused.length,
          runs: d.runs.map((r) => `${r.label}: ${r.status} ${Math.round(r.durationMs / 100) / 10} s`),
          differences: d.differences.total,
          silent: d.differences.silent,
          silentByTarget: d.differences.silentByTarget,
        })),
        runSeconds: Object.fromEntries(
          Object.entries(byKind).map(([k, v]) => [k, { count: v.length, median: v.sort((a, b) => a - b)[Math.floor(v.length / 2)], max: Math.max(...v) }]),
        ),
        totals: report.totals,
        jestPassed: code === 0,
        report: REPORT,
      },
      null,
      2,
    ),
  );
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
