#!/usr/bin/env node
'use strict';
/**
 * What the embedded storage's saves cost while the engine writes (issue 21): the engine's import and export
 * pages spread their writes over every connector-space and mesh table (16 tables each), so a persistence that
 * rewrites each changed table whole at every save pays for the whole database at every save.
 *
 * A fresh Azurite persisting to disk (as `npm start` runs it: the runtime's launcher, 5-second saves) gets N
 * entities of about 1 KB spread over 16 tables, written in batches of 100 (4 in flight), then every entity
 * updated once the same way, then a trickle (1 % of the entities, spread over every table, updated by
 * batches of 10 at a steady pace for 30 s: the engine's delta and export pages touch a few rows of each
 * table), then the service is stopped (final save) and started again (load). Prints JSON: seconds,
 * entities/s and the table process's CPU seconds for the inserts, the updates and the trickle, the saves
 * (count, total and longest ms, bytes written), the stop and the start, the data folder's size and the peak
 * RSS. `--root` runs another checkout's build (its Azurite launcher): the same bench before and after a change.
 *
 * Usage: npm run build && node bench/scale/persistWrites.js [--entities 100000] [--root <checkout>]
 * Run under `flock /tmp/bench.lock`.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { TableClient } = require('@azure/data-tables');
const { arg, cpuSeconds, peakRssMB } = require('../support');

const ROOT = path.resolve(arg('root', path.resolve(__dirname, '../..')));
const N = arg('entities', 100000);
const TABLES = 16;
const r2 = (x) => +x.toFixed(2);

const entity = (i, round) => ({
  partitionKey: `p${i % 64}`,
  rowKey: `r${String(i).padStart(8, '0')}`,
  n: i,
  round,
  body: `${round}:`.padEnd(900, 'x'),
});

async function writeAll(clients, round, kind) {
  const batches = [];
  for (let t = 0; t < TABLES; t++) {
    const byPartition = new Map();
    for (let i = t; i < N; i += TABLES) {
      const e = entity(i, round);
      if (!byPartition.has(e.partitionKey)) byPartition.set(e.partitionKey, []);
      byPartition.get(e.partitionKey).push(e);
    }
    for (const list of byPartition.values()) for (let b = 0; b < list.length; b += 100) batches.push({ t, list: list.slice(b, b + 100) });
  }
  // Interleave the tables as the engine's pages do.
  batches.sort((a, b) => a.list[0].n - b.list[0].n);
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      const { t, list } = batches[next++];
      await clients[t].submitTransaction(list.map((e) => (kind === 'create' ? ['create', e] : ['upsert', e, 'Replace'])));
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
}

/** 1 % of the entities updated in batches of 10 (one table, one partition each) over 30 s, one batch at a time. */
async function trickle(clients, pid) {
  const c0 = cpuSeconds(pid);
  const count = Math.max(10, Math.round(N / 100));
  const batches = Math.ceil(count / 10);
  const t0 = performance.now();
  let slowest = 0;
  for (let b = 0; b < batches; b++) {
    // Table t holds the ids i with i % 16 === t; its partition p (i % 64) is one of t, t + 16, t + 32, t + 48.
    const t = b % TABLES;
    const p = t + TABLES * (Math.floor(b / TABLES) % 4);
    const first = 10 * Math.floor(b / (TABLES * 4));
    const ids = Array.from({ length: 10 }, (_, j) => p + 64 * ((first + j) % Math.floor(N / 64)));
    const s0 = performance.now();
    await clients[t].submitTransaction(ids.map((i) => ['upsert', entity(i, 2), 'Replace']));
    slowest = Math.max(slowest, performance.now() - s0);
    const due = t0 + ((b + 1) * 30_000) / batches;
    if (performance.now() < due) await new Promise((r) => setTimeout(r, due - performance.now()));
  }
  return { entities: count, seconds: r2((performance.now() - t0) / 1000), azuriteCpuSeconds: r2(cpuSeconds(pid) - c0), slowestBatchMs: Math.round(slowest) };
}

async function phase(pid, f) {
  const c0 = cpuSeconds(pid);
  const t0 = performance.now();
  await f();
  const seconds = (performance.now() - t0) / 1000;
  return { seconds: r2(seconds), entitiesPerSecond: Math.round(N / seconds), azuriteCpuSeconds: r2(cpuSeconds(pid) - c0) };
}

(async () => {
  const { Azurite } = require(path.join(ROOT, 'dist/lib/runtime/azurite.js'));
  const location = fs.mkdtempSync(path.join(os.tmpdir(), 'persist-writes-'));
  const saves = [];
  const onLog = (line) => {
    const m = /Table data saved in (\d+) ms \((\d+) tables.*?(\d+) bytes\)/.exec(line);
    if (m) saves.push({ ms: Number(m[1]), bytes: Number(m[3]) });
  };
  const out = {
    bench: 'persistWrites',
    entities: N,
    tables: TABLES,
    root: ROOT,
    node: process.version,
    cpus: os.cpus().length,
    loadavgAtStart: os.loadavg().map(r2),
  };
  let azurite = new Azurite({ services: ['table'], location, onLog });
  try {
    await azurite.start();
    let pid = azurite.pids[0];
    const clients = Array.from({ length: TABLES }, (_, t) =>
      TableClient.fromConnectionString(azurite.connectionString, `Bench${t.toString(16)}`, { allowInsecureConnection: true }),
    );
    for (const c of clients) await c.createTable();
    out.insert = await phase(pid, () => writeAll(clients, 0, 'create'));
    out.update = await phase(pid, () => writeAll(clients, 1, 'upsert'));
    out.trickle = await trickle(clients, pid);
    // Saves slower than a second are logged by the launcher: the ones that matter.
    out.savesOverOneSecond = { count: saves.length, totalMs: saves.reduce((a, s) => a + s.ms, 0), longestMs: Math.max(0, ...saves.map((s) => s.ms)) };
    out.azuritePeakRssMB = peakRssMB(pid);
    const t0 = performance.now();
    await azurite.stop();
    out.stopSeconds = r2((performance.now() - t0) / 1000);
    out.dataFolderMB = Math.round(fs.readdirSync(location).reduce((a, f) => a + fs.statSync(path.join(location, f)).size, 0) / 1048576);
    const t1 = performance.now();
    azurite = new Azurite({ services: ['table'], location });
    await azurite.start();
    pid = azurite.pids[0];
    out.startSeconds = r2((performance.now() - t1) / 1000);
    const last = TableClient.fromConnectionString(azurite.connectionString, `Bench${((N - 1) % TABLES).toString(16)}`, { allowInsecureConnection: true });
    out.lastEntityRound = (await last.getEntity(entity(N - 1, 1).partitionKey, entity(N - 1, 1).rowKey)).round;
  } finally {
    await azurite.stop().catch(() => undefined);
    fs.rmSync(location, { recursive: true, force: true });
  }
  out.loadavgAtEnd = os.loadavg().map(r2);
  console.log(JSON.stringify(out, null, 2));
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
