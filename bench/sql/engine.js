#!/usr/bin/env node
'use strict';
/**
 * The SQL connector end to end through the sync engine: N rows of hr_people in a private PostgreSQL, a `sql`
 * connector created over HTTP on the running service (local runtime, in-memory Azurite), a projection rule,
 * flow rules and a manager relationship. Prints JSON: the full import into an empty mesh (trigger to Completed,
 * target <= 60 s), a delta import of 1,000 changed rows (target <= 3 s), the service's peak RSS, and beside them
 * a plain pg-cursor read of the same rows in the same run.
 *
 * Usage: npm run build && node bench/sql/engine.js [--rows 100000]
 */
const { QUERY, startBenchPostgres, connectorConfig, change1000 } = require('./pg');
const { arg, onInterrupt, peakRssMB, startService } = require('../support');

const N = arg('rows', 100000);

async function plainRead(db) {
  const { Client } = require('pg');
  const Cursor = require('pg-cursor');
  const client = new Client({ host: '127.0.0.1', port: db.port, user: 'postgres', password: db.password, database: 'postgres' });
  await client.connect();
  const t0 = performance.now();
  const cursor = client.query(new Cursor(`${QUERY} ORDER BY employee_id`));
  let n = 0;
  for (;;) {
    const rows = await cursor.read(1000);
    n += rows.length;
    if (rows.length < 1000) break;
  }
  await cursor.close();
  await client.end();
  return { rows: n, seconds: +((performance.now() - t0) / 1000).toFixed(3) };
}

/**
 * How the manager relationship is made: `space` (default) the reference column resolved through the connector
 * space (a per-connector rule names it `manager`); `composer` also by a mesh-composer rule over the flowed
 * `managerId` (the set-up before references went through the connector space: both then run).
 */
const REFS = (() => {
  const i = process.argv.indexOf('--refs');
  const v = i >= 0 ? process.argv[i + 1] : 'space';
  if (!['space', 'composer'].includes(v)) throw new Error('--refs is space or composer');
  return v;
})();

async function main() {
  const pg = await startBenchPostgres(N);
  const removeInterrupt = onInterrupt(() => pg.stop());
  let svc;
  try {
    svc = await startService();
    const { call, must } = svc;
    const conn = await must(call('POST', 'connectors', { name: 'HR database', type: 'sql', config: connectorConfig(pg) }), 201);
    const rule = (b) => must(call('POST', 'rules', { ruleName: `r${Math.random()}`, connectorId: conn.id, ...b }), 201);
    await rule({ ruleType: 'ProjectionRule', sourceAttribute: 'employee_id' });
    for (const [s, t] of [
      ['employee_id', 'employeeId'],
      ['first_name', 'givenName'],
      ['last_name', 'sn'],
      ['email', 'mail'],
      ['manager_employee_id', 'managerId'],
    ]) {
      await rule({ ruleType: 'FlowRule', sourceAttribute: s, targetAttribute: t, confidence: 50 });
    }
    if (REFS === 'composer')
      await rule({ ruleType: 'MeshComposerRule', connectorId: null, relationshipType: 'manager', sourceAttribute: 'managerId', targetAttribute: 'employeeId' });
    // The reference column resolved through the connector space, its relationship named `manager`.
    else await rule({ ruleType: 'MeshComposerRule', relationshipType: 'manager', sourceAttribute: 'manager_employee_id' });

    const runOnce = (runType) => svc.runImport(conn.id, runType);
    const plain = await plainRead(pg);
    console.error(`plain read ${plain.seconds} s; full import through the engine...`);
    const full = await runOnce('FullImport');
    console.error(`full import ${full.seconds.toFixed(1)} s (${full.run.status}); delta...`);
    const rssAfterFull = peakRssMB(svc.pid);
    await change1000(pg.admin, N);
    const delta = await runOnce('DeltaImport');
    console.log(
      JSON.stringify(
        {
          rows: N,
          references: REFS,
          plainCursorRead: plain,
          fullImport: {
            seconds: +full.seconds.toFixed(2),
            status: full.run.status,
            ...(full.run.error ? { error: full.run.error } : {}),
            stats: full.run.stats,
            cpu: full.cpu,
            targetSeconds: 60,
            servicePeakRssMB: rssAfterFull,
          },
          delta1000: {
            seconds: +delta.seconds.toFixed(2),
            status: delta.run.status,
            ...(delta.run.error ? { error: delta.run.error } : {}),
            stats: delta.run.stats,
            cpu: delta.cpu,
            targetSeconds: 3,
          },
          ratioFullImportToPlainRead: +(full.seconds / plain.seconds).toFixed(1),
          servicePeakRssMB: peakRssMB(svc.pid),
        },
        null,
        2,
      ),
    );
  } finally {
    await svc?.stop();
    await pg.stop();
    removeInterrupt();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
