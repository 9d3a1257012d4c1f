#!/usr/bin/env node
'use strict';
/**
 * What plans cost: N users in a CSV (file connector, the rules of bench/sync), on the running service (local
 * runtime, in-memory Azurite) over HTTP. Prints JSON:
 * - dryRun: a full import with `dryRun: true` into an empty mesh (the plan: every user an add, each listed
 *   `planned` with its fingerprint);
 * - apply: `POST /runs/{id}/apply` of that plan, nothing changed since (every planned object applied);
 * - realRun: the same full import, not dry, on a fresh service (the run the apply is equivalent to);
 * - ratios: apply / realRun (target at most 1.1), in wall seconds and in CPU seconds (service and Azurite), and,
 *   given `--baseline-dry <seconds>` (a dry run measured on the code before plans were recorded), dryRun /
 *   baseline (target at most 1.3).
 * With `--baseline`, only dryRun and realRun (for a build that has no apply route).
 * With `--target`, a second file connector is an export target (outbound flows for every user): the dry run then
 * also lists what the target's export would then get (every user an add there), and `plannedTargetChanges` counts it.
 *
 * Usage: npm run build && node bench/plans/plans.js [--users 100000] [--baseline] [--target] [--baseline-dry 30.1] [--baseline-real 35.2]
 */
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { arg, sleep, startService, cpuSeconds, writeHrCsv } = require('../support');

const N = arg('users', 100000);
const BASELINE = process.argv.includes('--baseline');
const TARGET = process.argv.includes('--target');
const tempDirs = [];
const baselineDry = arg('baseline-dry', 0);
const baselineReal = arg('baseline-real', 0);

async function setup(svc, csvDir) {
  const { call, must } = svc;
  // No threshold on adds (the default guards deletes only), so the real run applies as it reads.
  const conn = await must(
    call('POST', 'connectors', {
      name: 'HR',
      type: 'custom',
      config: { implementation: 'file', objectType: 'User', settings: { path: csvDir, anchorColumn: 'id' } },
    }),
    201,
  );
  const rule = (b) => must(call('POST', 'rules', { ruleName: `r${Math.random()}`, connectorId: conn.id, ...b }), 201);
  await rule({ ruleType: 'JoinRule', sourceAttribute: 'employeeId', targetAttribute: 'employeeId' });
  await rule({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId' });
  await rule({ ruleType: 'FlowRule', sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 });
  await rule({ ruleType: 'FlowRule', sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50, transformScript: 'source.toUpperCase()' });
  await rule({ ruleType: 'FlowRule', sourceAttribute: 'managerId', targetAttribute: 'managerId', confidence: 50 });
  await rule({ ruleType: 'MeshComposerRule', connectorId: null, relationshipType: 'manager', sourceAttribute: 'managerId', targetAttribute: 'employeeId' });
  if (TARGET) {
    const targetDir = mkdtempSync(path.join(os.tmpdir(), 'plans-bench-target-'));
    tempDirs.push(targetDir);
    writeFileSync(path.join(targetDir, 'people.csv'), 'id,sn\n');
    const target = await must(
      call('POST', 'connectors', {
        name: 'Target',
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: targetDir, anchorColumn: 'id' } },
      }),
      201,
    );
    for (const [s, t] of [
      ['employeeId', 'id'],
      ['sn', 'sn'],
    ])
      await rule({ ruleType: 'FlowRule', connectorId: target.id, direction: 'outbound', sourceAttribute: s, targetAttribute: t, confidence: 50 });
  }
  return conn;
}

async function waitRun(svc, runId, t) {
  for (;;) {
    const r = await svc.must(svc.call('GET', `runs/${runId}`), 200);
    if (!['Running', 'Queued'].includes(r.status)) return { seconds: +((performance.now() - t) / 1000).toFixed(2), status: r.status, stats: r.stats };
    await sleep(100);
  }
}

/**
 * A run from its trigger to its end: wall seconds, and the CPU seconds the service and Azurite spent (on a
 * machine shared with other work, CPU seconds compare better than wall time).
 */
async function timed(svc, method, route, body) {
  const t = performance.now();
  const c0 = { service: cpuSeconds(svc.pid), azurite: cpuSeconds(svc.tablePid) };
  const started = await svc.must(svc.call(method, route, body), 202);
  const r = await waitRun(svc, started.runId, t);
  const used = (now, before) => (now === null || before === null ? null : +(now - before).toFixed(2));
  return {
    ...r,
    runId: started.runId,
    serviceCpuSeconds: used(cpuSeconds(svc.pid), c0.service),
    azuriteCpuSeconds: used(cpuSeconds(svc.tablePid), c0.azurite),
    load: +os.loadavg()[0].toFixed(2),
  };
}

async function main() {
  const csvDir = mkdtempSync(path.join(os.tmpdir(), 'plans-bench-csv-'));
  writeHrCsv(csvDir, N);
  const out = { users: N, loadAverageStart: os.loadavg().map((x) => +x.toFixed(2)) };
  let svc;
  try {
    svc = await startService();
    const conn = await setup(svc, csvDir);
    out.dryRun = await timed(svc, 'POST', `connectors/${conn.id}/import`, { runType: 'FullImport', dryRun: true });
    if (!BASELINE) {
      const changes = await svc.must(svc.call('GET', `runs/${out.dryRun.runId}/changes?take=1`), 200);
      out.dryRun.plannedChanges = changes.totalCount;
      if (TARGET)
        out.dryRun.plannedTargetChanges = (await svc.must(svc.call('GET', `runs/${out.dryRun.runId}/changes?operation=Add&take=1`), 200)).totalCount - N;
      out.apply = await timed(svc, 'POST', `runs/${out.dryRun.runId}/apply`);
      const applied = await svc.must(svc.call('GET', `runs/${out.apply.runId}/changes?outcome=applied&take=1`), 200);
      out.apply.appliedChanges = applied.totalCount;
    }
    await svc.stop();
    svc = await startService();
    const conn2 = await setup(svc, csvDir);
    out.realRun = await timed(svc, 'POST', `connectors/${conn2.id}/import`, { runType: 'FullImport' });
    const cpu = (r) => (r.serviceCpuSeconds ?? 0) + (r.azuriteCpuSeconds ?? 0);
    if (out.apply) {
      out.ratioApplyToRealRun = +(out.apply.seconds / out.realRun.seconds).toFixed(3);
      out.ratioApplyToRealRunCpu = +(cpu(out.apply) / cpu(out.realRun)).toFixed(3);
    }
    if (baselineDry) out.ratioDryRunToBaseline = +(out.dryRun.seconds / baselineDry).toFixed(3);
    if (baselineReal) out.ratioRealRunToBaseline = +(out.realRun.seconds / baselineReal).toFixed(3);
    out.targets = { dryRunToBaseline: 1.3, applyToRealRun: 1.1 };
    out.loadAverageEnd = os.loadavg().map((x) => +x.toFixed(2));
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await svc?.stop();
    for (const d of [csvDir, ...tempDirs]) rmSync(d, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
