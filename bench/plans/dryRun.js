#!/usr/bin/env node
'use strict';
/**
 * What a dry run's plan costs, the dry run alone: N users in a CSV (the setup of bench/plans/plans.js), one
 * service, `--rounds` dry runs of the full import into an empty mesh. Prints JSON: per round the wall seconds
 * and the CPU seconds of the service and of Azurite.
 *
 * `--root <tree>`: run the service of another built tree (a build of an older commit; this file and
 * bench/support.js need not be copied into it), so runs of two builds can alternate under one bench lock.
 * SYNC_BENCH_CPUPROF=<dir>: a V8 CPU profile of the service per round (`<pid>-<2n>.cpuprofile`; bench/sync/cpuprof.js).
 *
 * Usage: npm run build && node bench/plans/dryRun.js [--users 100000] [--rounds 1] [--root ../other-tree]
 */
const os = require('node:os');
const path = require('node:path');
const { mkdtempSync, rmSync } = require('node:fs');
const { arg, sleep, startService, cpuSeconds, writeHrCsv } = require('../support');

const N = arg('users', 100000);
const ROUNDS = arg('rounds', 1);
const ROOT = path.resolve(arg('root', path.join(__dirname, '../..')));

async function main() {
  const csvDir = mkdtempSync(path.join(os.tmpdir(), 'plans-dry-csv-'));
  writeHrCsv(csvDir, N);
  const prof = process.env.SYNC_BENCH_CPUPROF;
  const nodeOptions = prof ? `--require ${path.join(__dirname, '../sync/cpuprof.js')}` : undefined;
  const svc = await startService({ root: ROOT, env: nodeOptions ? { NODE_OPTIONS: nodeOptions } : {} });
  try {
    const { call, must } = svc;
    const settings = { path: csvDir, anchorColumn: 'id' };
    const conn = await must(call('POST', 'connectors', { name: 'HR', type: 'custom', config: { implementation: 'file', objectType: 'User', settings } }), 201);
    const rule = (b) => must(call('POST', 'rules', { ruleName: `r${Math.random()}`, connectorId: conn.id, ...b }), 201);
    await rule({ ruleType: 'JoinRule', sourceAttribute: 'employeeId', targetAttribute: 'employeeId' });
    await rule({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId' });
    await rule({ ruleType: 'FlowRule', sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 });
    await rule({ ruleType: 'FlowRule', sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50, transformScript: 'source.toUpperCase()' });
    await rule({ ruleType: 'FlowRule', sourceAttribute: 'managerId', targetAttribute: 'managerId', confidence: 50 });
    await rule({ ruleType: 'MeshComposerRule', connectorId: null, relationshipType: 'manager', sourceAttribute: 'managerId', targetAttribute: 'employeeId' });
    const rounds = [];
    for (let i = 0; i < ROUNDS; i++) {
      if (prof) {
        // Restart the profile: what was recorded so far (start, setup) goes to a file of its own.
        process.kill(svc.pid, 'SIGUSR2');
        await sleep(500);
      }
      const c0 = { service: cpuSeconds(svc.pid), azurite: cpuSeconds(svc.tablePid) };
      const t = performance.now();
      const started = await must(call('POST', `connectors/${conn.id}/import`, { runType: 'FullImport', dryRun: true }), 202);
      let run;
      for (;;) {
        run = await must(call('GET', `runs/${started.runId}`), 200);
        if (!['Running', 'Queued'].includes(run.status)) break;
        await sleep(100);
      }
      const used = (now, before) => (now === null || before === null ? null : +(now - before).toFixed(2));
      rounds.push({
        status: run.status,
        seconds: +((performance.now() - t) / 1000).toFixed(2),
        serviceCpuSeconds: used(cpuSeconds(svc.pid), c0.service),
        azuriteCpuSeconds: used(cpuSeconds(svc.tablePid), c0.azurite),
        load: +os.loadavg()[0].toFixed(2),
      });
      if (prof) {
        process.kill(svc.pid, 'SIGUSR2');
        await sleep(1500);
      }
    }
    console.log(JSON.stringify({ users: N, root: ROOT, rounds }, null, 2));
  } finally {
    await svc.stop();
    rmSync(csvDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
