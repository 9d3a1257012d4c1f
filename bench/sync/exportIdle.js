#!/usr/bin/env node
'use strict';
/**
 * What an export costs when little or nothing changed (an export applies what changed, not the whole mesh).
 * N users in a CSV (file connector) imported over HTTP on the running service (local runtime, in-memory
 * Azurite); a second file connector is the target, with outbound flow rules for every user. Prints JSON:
 * - firstExport: the first export (a full one: every user is added to the target's file);
 * - idleExport: an export right after, nothing changed (target: under 1 s at 100,000);
 * - changedExport: 1,000 users changed in the source, a delta import, then the export (it looks at 1,000);
 * - each with its stats (objectsProcessed counts the changes applied) and seconds.
 *
 * Usage: npm run bench:export:idle, or npm run build && node bench/sync/exportIdle.js [--users 100000]
 */
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { arg, onInterrupt, peakRssMB, startService } = require('../support');

const N = arg('users', 100000);
const HEADER = ['id', 'employeeId', 'givenName', 'sn', 'mail', 'department'];

function writeUsers(dir, changed = new Set()) {
  const lines = [HEADER.join(',')];
  for (let i = 0; i < N; i++)
    lines.push(
      [`u${i}`, `E${String(i).padStart(6, '0')}`, `Given${i}`, `Surname${i}${changed.has(i) ? 'x' : ''}`, `user${i}@example.test`, `Dept ${i % 40}`].join(','),
    );
  writeFileSync(path.join(dir, 'users.csv'), lines.join('\n') + '\n');
}

async function main() {
  const src = mkdtempSync(path.join(os.tmpdir(), 'export-bench-src-'));
  const dst = mkdtempSync(path.join(os.tmpdir(), 'export-bench-dst-'));
  const removeDirs = onInterrupt(() => [src, dst].forEach((d) => rmSync(d, { recursive: true, force: true })));
  writeFileSync(path.join(dst, 'export.csv'), 'uid,name,surname\n');
  let svc;
  try {
    svc = await startService();
    const { call, must } = svc;
    writeUsers(src);
    const hr = await must(
      call('POST', 'connectors', {
        name: 'HR',
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: src, anchorColumn: 'id' } },
      }),
      201,
    );
    const target = await must(
      call('POST', 'connectors', {
        name: 'Target',
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: dst, anchorColumn: 'uid' }, deletionThreshold: { objects: N, percent: 100 } },
      }),
      201,
    );
    const rule = (connectorId, b) => must(call('POST', 'rules', { ruleName: `r${Math.random()}`, connectorId, ...b }), 201);
    await rule(hr.id, { ruleType: 'ProjectionRule', sourceAttribute: 'employeeId' });
    for (const a of ['employeeId', 'givenName', 'sn', 'mail', 'department'])
      await rule(hr.id, { ruleType: 'FlowRule', sourceAttribute: a, targetAttribute: a, confidence: 50 });
    await rule(target.id, { ruleType: 'FlowRule', direction: 'outbound', sourceAttribute: 'employeeId', targetAttribute: 'uid' });
    await rule(target.id, { ruleType: 'FlowRule', direction: 'outbound', sourceAttribute: 'givenName', targetAttribute: 'name' });
    await rule(target.id, { ruleType: 'FlowRule', direction: 'outbound', sourceAttribute: 'sn', targetAttribute: 'surname' });

    const importRun = await svc.runImport(hr.id, 'FullImport');
    console.error(`import ${importRun.seconds.toFixed(1)} s (${importRun.run.status}); first export...`);
    const exportRun = async () => {
      const t0 = performance.now();
      const started = await must(call('POST', `connectors/${target.id}/export`, {}), 202);
      for (;;) {
        const r = await must(call('GET', `runs/${started.runId}`), 200);
        if (!['Queued', 'Running'].includes(r.status))
          return { seconds: +((performance.now() - t0) / 1000).toFixed(2), status: r.status, stats: r.stats, error: r.error };
        await new Promise((res) => setTimeout(res, 20));
      }
    };
    const firstExport = await exportRun();
    console.error(`first export ${firstExport.seconds} s; idle export...`);
    const idleExport = await exportRun();
    const idleAgain = await exportRun();
    const changed = new Set(Array.from({ length: Math.min(1000, N) }, (_, k) => Math.floor((k * N) / Math.min(1000, N))));
    writeUsers(src, changed);
    const delta = await svc.runImport(hr.id, 'DeltaImport');
    const changedExport = await exportRun();
    console.log(
      JSON.stringify(
        {
          bench: 'export-idle',
          users: N,
          import: { seconds: +importRun.seconds.toFixed(2), status: importRun.run.status },
          firstExport,
          idleExport,
          idleAgain,
          delta: { seconds: +delta.seconds.toFixed(2), status: delta.run.status, stats: delta.run.stats },
          changedExport,
          servicePeakRssMB: peakRssMB(svc.pid),
          targetIdleSeconds: 1,
          loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
        },
        null,
        2,
      ),
    );
  } finally {
    await svc?.stop();
    [src, dst].forEach((d) => rmSync(d, { recursive: true, force: true }));
    removeDirs();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
