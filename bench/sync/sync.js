#!/usr/bin/env node
'use strict';
/**
 * Sync engine benchmark: N users (15 attributes + a manager reference) in a CSV read by the file connector,
 * a projection rule, a join rule, 3 inbound flow rules and a manager relationship rule, imported through the
 * running service (local runtime, embedded in-memory Azurite) over HTTP. Prints JSON:
 * - fullImportSeconds: full import into an empty mesh (trigger to Completed), and the service's peak RSS;
 * - unchangedReimportSeconds: the same full import again, nothing changed;
 * - delta1000Seconds: a delta import of 1,000 changed rows;
 * - floor: the time a fresh Azurite process takes to batch-insert N entities of about 600 bytes (100 per
 *   transaction, 4 in flight), measured in this run before the service starts, and the ratio of the full
 *   import to it (the target's ratio);
 * - floorLoadedAzurite: the same insert into the service's own Azurite after the three imports (it then holds
 *   the mesh and the connector space, which makes it slower: reported beside, not used for the ratio).
 *
 * - deltaDelete (with --delete-percent P): then a delta import of the same rows less P % of them (deleted from
 *   the source: their mesh objects lose their last contributor and become tombstones).
 *
 * With --count-requests, each import also reports its storage requests (reads, writes, operations inside
 * batches) counted by a proxy in front of Azurite: the write budget of a run. The proxy slows the run down, so
 * times from such a run are not comparable.
 *
 * Usage: npm run build && node bench/sync/sync.js [--users 100000] [--count-requests] [--delete-percent 1]
 */
const { mkdtempSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { arg, sleep, peakRssMB, startService, storageFloor, freshStorageFloor, hrSource, writeHrCsv } = require('../support');

const N = arg('users', 100000);
// --count-requests: storage requests of each import through a counting proxy (slower; for write budgets only).
const COUNT = process.argv.includes('--count-requests');
// --delete-percent P: a last delta import with P % of the rows deleted from the source (0: none).
const DELETE_PERCENT = arg('delete-percent', 0);

function writeUsers(dir, changed = new Set(), deleted = new Set()) {
  writeHrCsv(dir, N, { changed, deleted });
}

async function main() {
  const csvDir = mkdtempSync(path.join(os.tmpdir(), 'sync-bench-csv-'));
  // SYNC_BENCH_CPUPROF=<dir>: V8 CPU profiles of the service and of Azurite (written when they exit).
  const prof = process.env.SYNC_BENCH_CPUPROF;
  const nodeOptions = prof ? `${process.env.NODE_OPTIONS ?? ''} --require ${path.join(__dirname, 'cpuprof.js')}`.trim() : undefined;
  const trace = [];
  let svc;
  try {
    // The floor first, on an Azurite of its own, so that nothing the imports leave behind weighs on it.
    const freshFloor = await freshStorageFloor(N);
    svc = await startService({
      countRequests: COUNT,
      env: { ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}), SYNC_TRACE: process.env.SYNC_TRACE || '' },
      azuriteNodeOptions: nodeOptions,
      onOutput: (text) => {
        if (process.env.SYNC_TRACE) for (const l of text.split('\n')) if (l.includes('[sync]')) trace.push(l);
      },
    });
    const { azurite, tablePid } = svc;
    writeUsers(csvDir);
    // Deleting 1 % is over the default deletion threshold (500): the bench raises it for its connector.
    const { conn } = await hrSource(svc, csvDir, DELETE_PERCENT > 0 ? { deletionThreshold: { objects: N, percent: 100 } } : {});

    const runOnce = async (runType) => {
      trace.push(`--- ${runType}`);
      svc.storageRequests?.();
      const r = await svc.runImport(conn.id, runType);
      return { ...r, ...(svc.storageRequests ? { storageRequests: svc.storageRequests() } : {}) };
    };
    const rssBeforeMB = peakRssMB(svc.pid);
    const full = await runOnce('FullImport');
    const rssAfterFull = peakRssMB(svc.pid);
    if (prof) for (const pid of [tablePid, svc.pid]) process.kill(pid, 'SIGUSR2');
    const again = await runOnce('FullImport');
    const changed = new Set();
    for (let k = 0; changed.size < 1000; k++) changed.add((k * 97) % N);
    await sleep(1100);
    writeUsers(csvDir, changed);
    const delta = await runOnce('DeltaImport');
    let deltaDelete;
    if (DELETE_PERCENT > 0) {
      const deleted = new Set();
      const want = Math.round((N * DELETE_PERCENT) / 100);
      for (let k = 0; deleted.size < want; k++) deleted.add((k * 131 + 7) % N);
      await sleep(1100);
      writeUsers(csvDir, changed, deleted);
      deltaDelete = await runOnce('DeltaImport');
    }

    const loadedFloor = await storageFloor(azurite.connectionString, 'FloorBench', N, tablePid);
    const out = {
      users: N,
      fullImport: {
        seconds: +full.seconds.toFixed(2),
        status: full.run.status,
        stats: full.run.stats,
        ...full.cpu,
        ...(full.storageRequests ? { storageRequests: full.storageRequests } : {}),
        peakRssMB: rssAfterFull,
        peakRssBeforeImportMB: rssBeforeMB,
        targetSeconds: 60,
        targetRssMB: 512,
      },
      unchangedReimport: {
        seconds: +again.seconds.toFixed(2),
        status: again.run.status,
        stats: again.run.stats,
        ...again.cpu,
        ...(again.storageRequests ? { storageRequests: again.storageRequests } : {}),
        targetSeconds: 10,
      },
      delta1000: {
        seconds: +delta.seconds.toFixed(2),
        status: delta.run.status,
        stats: delta.run.stats,
        ...delta.cpu,
        ...(delta.storageRequests ? { storageRequests: delta.storageRequests } : {}),
        targetSeconds: 3,
      },
      ...(deltaDelete
        ? {
            deltaDelete: {
              percent: DELETE_PERCENT,
              seconds: +deltaDelete.seconds.toFixed(2),
              status: deltaDelete.run.status,
              stats: deltaDelete.run.stats,
              ...deltaDelete.cpu,
              ...(deltaDelete.storageRequests ? { storageRequests: deltaDelete.storageRequests } : {}),
            },
          }
        : {}),
      floor: freshFloor,
      ratioFullImportToFloor: +(full.seconds / freshFloor.seconds).toFixed(2),
      floorLoadedAzurite: loadedFloor,
      ratioFullImportToLoadedFloor: +(full.seconds / loadedFloor.seconds).toFixed(2),
      ratioTarget: 1.5,
      peakRssMB: peakRssMB(svc.pid),
      loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
    };
    if (process.env.SYNC_TRACE) console.error(trace.join('\n'));
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await svc?.stop();
    rmSync(csvDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
