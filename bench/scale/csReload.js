#!/usr/bin/env node
'use strict';
/**
 * What reloading a connector's connector-space summaries costs (issue 21: a connector's summaries stay in memory
 * while it runs and for Sync:IdleConnectorSpaceCaches idle connectors; the next run of a dropped one reloads
 * them, lib/sync/space/csCaches.ts). Writes N connector-space rows shaped like a directory's (an entryUUID anchor, a DN, a sha256 content
 * hash and rules hash, a mesh id, an object id for a tenth, an export time for half) into a fresh Azurite
 * with the engine's repository (lib/sync/space/connectorSpace.ts), then times `loadCsSummaries` three times and
 * measures the heap the loaded summaries hold.
 *
 * Prints JSON: write seconds, each reload's ms, heap bytes per row, machine load.
 *
 * Usage: npm run build && node --expose-gc bench/scale/csReload.js [--objects 100000]
 */
const crypto = require('node:crypto');
const os = require('node:os');
const path = require('node:path');
const { ROOT, arg, azuriteOptions } = require('../support');

const N = arg('objects', 100000);
if (typeof global.gc !== 'function') throw new Error('run with node --expose-gc');
const heap = () => {
  global.gc();
  global.gc();
  // Typed arrays keep their bytes outside the JavaScript heap: counted too.
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const sha = (s) => crypto.createHash('sha256').update(s).digest('base64url');

async function main() {
  const { Azurite } = require(path.join(ROOT, 'dist/lib/runtime/azurite.js'));
  const azurite = new Azurite(azuriteOptions());
  await azurite.start();
  try {
    process.env.AzureWebJobsStorage = azurite.connectionString;
    const { writeCsObjects, loadCsSummaries } = require(path.join(ROOT, 'dist/lib/sync/space/connectorSpace.js'));
    const connectorId = crypto.randomUUID();
    const now = new Date().toISOString();
    const rules = sha('rules');
    const t0 = performance.now();
    for (let start = 0; start < N; start += 1000) {
      const page = [];
      for (let i = start; i < Math.min(N, start + 1000); i++) {
        const key = `u${String(i).padStart(7, '0')}`;
        page.push({
          // An LDAP connector's anchor: entryUUID.
          anchor: crypto.randomUUID(),
          objectType: 'person',
          attributes: { uid: key, sn: `Surname${i}`, mail: `${key}@example.com` },
          hash: sha(`row${i}`),
          rulesHash: rules,
          meshId: crypto.randomUUID(),
          dn: `uid=${key},ou=people,dc=example,dc=com`,
          updatedOn: now,
          ...(i % 10 === 0 ? { csObjectId: crypto.randomUUID() } : {}),
          ...(i % 2 ? { exportedOn: now } : {}),
        });
      }
      await writeCsObjects(connectorId, page);
    }
    const writeSeconds = +((performance.now() - t0) / 1000).toFixed(1);
    const reloadMs = [];
    let kept;
    const before = heap();
    for (let i = 0; i < 3; i++) {
      kept = undefined;
      const t = performance.now();
      kept = await loadCsSummaries(connectorId);
      reloadMs.push(Math.round(performance.now() - t));
    }
    const bytesPerRow = Math.round((heap() - before) / N);
    if (kept.size !== N) throw new Error(`loaded ${kept.size} of ${N}`);
    console.log(
      JSON.stringify(
        {
          objects: N,
          writeSeconds,
          reloadMs,
          heapBytesPerRow: bytesPerRow,
          machine: {
            cpus: os.cpus().length,
            cpu: os.cpus()[0]?.model,
            memGB: Math.round(os.totalmem() / 1e9),
            loadavg: os.loadavg().map((x) => +x.toFixed(2)),
          },
          at: new Date().toISOString(),
        },
        null,
        2,
      ),
    );
  } finally {
    await azurite.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
