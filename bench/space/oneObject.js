#!/usr/bin/env node
'use strict';
/**
 * One object: preview and sync at scale. N users (the bench/sync layout: 15 attributes and a manager) are
 * imported from a CSV by the file connector (projection, join, inbound flows, a manager relationship), which
 * makes an N-object mesh; a second file connector is a target (outbound flows, so every preview plans its
 * export). Then a new inbound flow rule (title, upper-cased) gives every object a mesh change and a target
 * change, and the bench times, over HTTP against the running service:
 * - preview: POST /connectors/{id}/space/{csObjectId}/preview of `samples` objects picked across the space;
 * - sync: POST .../sync of `samples` other objects (each applies: mesh write, connector-space row, marks).
 * Prints JSON with p50/p95/p99/max in ms per operation, the machine, the load and the targets (p95 < 200 ms).
 *
 * Usage: npm run build && node bench/space/oneObject.js [--users 100000] [--samples 200]
 */
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, arg, startService, hrSource, writeHrCsv } = require('../support');

const N = arg('users', 100000);
const SAMPLES = arg('samples', 200);

function percentiles(ms) {
  const s = [...ms].sort((a, b) => a - b);
  const at = (p) => +s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)].toFixed(1);
  return { samples: s.length, p50: at(50), p95: at(95), p99: at(99), max: +s[s.length - 1].toFixed(1), targetP95: 200 };
}

async function main() {
  const csvDir = mkdtempSync(path.join(os.tmpdir(), 'one-bench-csv-'));
  const targetDir = mkdtempSync(path.join(os.tmpdir(), 'one-bench-target-'));
  let svc;
  try {
    svc = await startService();
    const { call, must } = svc;
    writeHrCsv(csvDir, N);
    writeFileSync(path.join(targetDir, 'people.csv'), 'id,sn,title\n');
    const { conn, rule } = await hrSource(svc, csvDir);
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
      ['title', 'title'],
    ])
      await rule({ ruleType: 'FlowRule', connectorId: target.id, direction: 'outbound', sourceAttribute: s, targetAttribute: t, confidence: 50 });
    const full = await svc.runImport(conn.id, 'FullImport');
    if (full.run.status !== 'Completed') throw new Error(`import: ${JSON.stringify(full.run)}`);
    // Every object changes now: a new inbound flow.
    await rule({ ruleType: 'FlowRule', sourceAttribute: 'title', targetAttribute: 'title', confidence: 50, transformScript: 'source.toUpperCase()' });

    // The ids, resolvable as the connector-space list makes them (written to the index the routes read).
    process.env.AzureWebJobsStorage = svc.azurite.connectionString;
    const { anchoredCsObjectId, indexCsObjectIds } = require(path.join(ROOT, 'dist/lib/sync/space/csIds.js'));
    const pick = (k, offset) => `u${(k * 7907 + offset) % N}`;
    const previewIds = Array.from({ length: SAMPLES }, (_, k) => pick(k, 13));
    const syncIds = Array.from({ length: SAMPLES }, (_, k) => pick(k, 5003));
    const warm = ['u1', 'u2', 'u3'];
    const entries = [...new Set([...warm, ...previewIds, ...syncIds])].map((anchor) => ({ csObjectId: anchoredCsObjectId(conn.id, anchor), anchor }));
    for (let i = 0; i < entries.length; i += 100) await indexCsObjectIds(conn.id, entries.slice(i, i + 100));

    const time = async (op, anchor) => {
      const t = performance.now();
      const body = await must(call('POST', `connectors/${conn.id}/space/${anchoredCsObjectId(conn.id, anchor)}/${op}`), 200);
      const ms = performance.now() - t;
      if (!body.meshChanges.length || !body.exports.length) throw new Error(`${op} ${anchor}: expected a mesh change and an export: ${JSON.stringify(body)}`);
      return ms;
    };
    // Warm-up (first use of the rules, the index after the new rule, the connectors).
    for (const a of warm) await time('preview', a);
    const preview = [];
    for (const a of previewIds) preview.push(await time('preview', a));
    const sync = [];
    for (const a of syncIds) sync.push(await time('sync', a));
    const cpus = os.cpus();
    console.log(
      JSON.stringify(
        {
          users: N,
          meshObjects: full.run.stats.objectsCreated,
          fullImportSeconds: +full.seconds.toFixed(1),
          preview: percentiles(preview),
          sync: percentiles(sync),
          machine: { cpus: cpus.length, model: cpus[0]?.model, memoryGB: +(os.totalmem() / 2 ** 30).toFixed(1), node: process.version },
          date: new Date().toISOString(),
          loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
        },
        null,
        2,
      ),
    );
  } finally {
    await svc?.stop();
    rmSync(csvDir, { recursive: true, force: true });
    rmSync(targetDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
