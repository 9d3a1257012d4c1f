#!/usr/bin/env node
'use strict';
/**
 * The mesh read model's start-up load (lib/mesh/feed.ts `MeshFeedReader.load`), with its breakdown.
 *
 * Seeds N mesh objects (22 attributes from two connectors, as the scale bench's directory + HR mesh: 18 from
 * the directory, 4 from HR, one relationship on a tenth of them) straight into the 16 mesh tables of a fresh
 * in-memory Azurite (no feed rows: the load reads the tables and then an empty feed), then times, in this
 * process, cumulative stages of the same scan (16 tables, 4 at a time, pages of 1,000):
 * - `fetch`: the pages only (HTTP to Azurite and the SDK's JSON parse);
 * - `decode`: the pages and lib/mesh/codec.ts decoding (`iterateMesh`);
 * - `readModel`: the whole load into a fresh MeshReadModel;
 * - `readModelAndJoinIndex`: the same with the sync engine's join index built from the scan (as at service start);
 * - `snapshotAndJoinIndex`: the same two loaded from the read model's snapshot on disk instead of the scan
 *   (lib/mesh/readModelSnapshot.ts; written once before the stages, not timed: a restart's load when the
 *   snapshot is usable). Its `snapshotWriteSeconds` and `snapshotBytes` are in the JSON.
 * Each stage's objects/s (wall and per CPU second of this process), and what it adds over the previous one.
 * Azurite's CPU seconds per stage too.
 *
 * Usage: npm run build && node --expose-gc bench/scale/readModelLoad.js [--objects 100000] [--rounds 2] [--stages readModel,...]
 *   [--profile file.cpuprofile] (a CPU profile of the measured stages) [--root /other/checkout] (measure its dist/)
 * Prints JSON (the best of `rounds` per stage).
 */
const path = require('node:path');
const os = require('node:os');
const { arg, cpuSeconds } = require('../support');

// --root: another checkout's build (the code before a change), measured with this script.
const ROOT = path.resolve(arg('root', path.resolve(__dirname, '../..')));
const N = arg('objects', 100000);
const ROUNDS = arg('rounds', 2);
const dist = (p) => require(path.join(ROOT, 'dist/lib', p));

const { meshObject } = require('./meshObjects');

// The service's log lines (lib/core/log.ts writes info to stdout) go to stderr: stdout is the JSON.
const printJson = console.log.bind(console);
console.log = (...args) => console.error(...args);

async function seed() {
  const { projectedMeshId, consolidate } = dist('mesh/model.js');
  const { toMeshEntity } = dist('mesh/store.js');
  const { table } = dist('storage/tables.js');
  const { submitBatched } = dist('storage/tableUtil.js');
  const t0 = performance.now();
  for (let start = 0; start < N; start += 10000) {
    const actions = [];
    for (let i = start; i < Math.min(N, start + 10000); i++) actions.push(['create', toMeshEntity(meshObject(i, projectedMeshId, consolidate))]);
    await submitBatched((pk) => table('Mesh' + pk[1]), actions, 4);
  }
  return (performance.now() - t0) / 1000;
}

async function stage(name, azuritePid, run) {
  if (global.gc) global.gc();
  const c0 = cpuSeconds(azuritePid);
  const p0 = process.cpuUsage();
  const t0 = performance.now();
  const objects = await run();
  const seconds = (performance.now() - t0) / 1000;
  const p = process.cpuUsage(p0);
  return {
    stage: name,
    objects,
    seconds: +seconds.toFixed(2),
    objectsPerSecond: Math.round(objects / seconds),
    serviceCpuSeconds: +((p.user + p.system) / 1e6).toFixed(1),
    // On a loaded machine the wall time carries other processes' share of the 2 cores: this does not.
    objectsPerServiceCpuSecond: Math.round(objects / ((p.user + p.system) / 1e6)),
    azuriteCpuSeconds: azuritePid ? +(cpuSeconds(azuritePid) - c0).toFixed(1) : null,
  };
}

async function scan(each) {
  const { MESH_PARTITIONS } = dist('mesh/store.js');
  const parts = MESH_PARTITIONS.map((_, i) => i);
  let n = 0;
  const worker = async () => {
    for (let p = parts.shift(); p !== undefined; p = parts.shift()) {
      const k = await each(p);
      n += k;
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return n;
}

async function main() {
  const { Azurite } = dist('runtime/azurite.js');
  const azurite = new Azurite({ services: ['table'] });
  await azurite.start();
  process.env.AzureWebJobsStorage = azurite.connectionString;
  const pid = azurite.pids[0];
  const snapshotFile = path.join(os.tmpdir(), `readmodel-bench-${process.pid}.snapshot`);
  try {
    const seedSeconds = await seed();
    // A feed row, so that a snapshot has a position to name (the seeding writes the tables only): object 0 again.
    const { projectedMeshId, consolidate } = dist('mesh/model.js');
    await dist('mesh/store.js').commitMeshWrite({ upserts: [meshObject(0, projectedMeshId, consolidate)], deletes: [] });
    const { MESH_PARTITIONS, iterateMesh } = dist('mesh/store.js');
    const { table } = dist('storage/tables.js');
    const { MeshFeedReader } = dist('mesh/feed.js');
    const { MeshReadModel } = dist('mesh/readModel.js');
    const { preloadSharedIndex, dropSharedIndex, sharedIndex } = dist('mesh/joinIndex.js');
    const { snapshotSource, writeSnapshot } = dist('mesh/readModelSnapshot.js');
    const snapshotWrite = {};
    const stages = {
      fetch: () =>
        scan(async (p) => {
          let n = 0;
          const client = await table('Mesh' + MESH_PARTITIONS[p][1]);
          for await (const page of client.listEntities().byPage({ maxPageSize: 1000 })) n += page.length;
          return n;
        }),
      decode: () =>
        scan(async (p) => {
          let n = 0;
          for await (const page of iterateMesh(undefined, p)) n += page.length;
          return n;
        }),
      readModel: async () => {
        const m = new MeshReadModel();
        await new MeshFeedReader(m).load();
        return m.size;
      },
      readModelAndJoinIndex: async () => {
        dropSharedIndex();
        preloadSharedIndex(['employeeId', 'mail']);
        const m = new MeshReadModel();
        await new MeshFeedReader(m).load();
        const ix = await sharedIndex(['employeeId', 'mail']);
        if (ix.builtFrom !== 'read model scan' || ix.size !== m.size) throw new Error(`join index not built from the scan (${ix.builtFrom}, ${ix.size})`);
        dropSharedIndex();
        return m.size;
      },
      snapshotAndJoinIndex: async () => {
        dropSharedIndex();
        preloadSharedIndex(['employeeId', 'mail']);
        const m = new MeshReadModel();
        const reader = new MeshFeedReader(m, { snapshot: snapshotSource(snapshotFile) });
        await reader.load();
        const ix = await sharedIndex(['employeeId', 'mail']);
        if (!reader.fromSnapshot) throw new Error('the snapshot was not used');
        if (ix.builtFrom !== 'read model scan' || ix.size !== m.size) throw new Error(`join index not built from the load (${ix.builtFrom}, ${ix.size})`);
        dropSharedIndex();
        return m.size;
      },
    };
    const only = String(arg('stages', Object.keys(stages).join(','))).split(',');
    if (only.includes('snapshotAndJoinIndex')) {
      const { currentFeedSeq, feedRowTag } = dist('mesh/store.js');
      const m = new MeshReadModel();
      await new MeshFeedReader(m).load();
      const seq = await currentFeedSeq();
      const t0 = performance.now();
      if (!(await writeSnapshot(snapshotFile, m, seq, await feedRowTag(seq)))) throw new Error('the snapshot write gave up');
      snapshotWrite.snapshotWriteSeconds = +((performance.now() - t0) / 1000).toFixed(2);
      snapshotWrite.snapshotBytes = require('node:fs').statSync(snapshotFile).size;
    }
    const results = [];
    // --profile FILE: a CPU profile (Chrome .cpuprofile) of the measured stages only, not of the seeding.
    const profile = arg('profile', '');
    const inspector = profile ? new (require('node:inspector').Session)() : undefined;
    const post = (method, params) => new Promise((res, rej) => inspector.post(method, params, (err, out) => (err ? rej(err) : res(out))));
    if (inspector) {
      inspector.connect();
      await post('Profiler.enable');
      await post('Profiler.start');
    }
    for (const [name, run] of Object.entries(stages)) {
      if (!only.includes(name)) continue;
      let best;
      for (let r = 0; r < ROUNDS; r++) {
        const s = await stage(name, pid, run);
        if (s.objects !== N) throw new Error(`${name}: ${s.objects} objects, expected ${N}`);
        if (!best || s.seconds < best.seconds) best = s;
      }
      const prev = results[results.length - 1];
      results.push({ ...best, addsSeconds: prev ? +(best.seconds - prev.seconds).toFixed(2) : best.seconds });
    }
    if (inspector) require('node:fs').writeFileSync(profile, JSON.stringify((await post('Profiler.stop')).profile));
    printJson(
      JSON.stringify(
        {
          bench: 'readModelLoad',
          root: ROOT,
          objects: N,
          rounds: ROUNDS,
          seedSeconds: +seedSeconds.toFixed(1),
          ...snapshotWrite,
          stages: results,
          loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
          cpus: os.cpus().length,
          date: new Date().toISOString(),
        },
        null,
        2,
      ),
    );
  } finally {
    require('node:fs').rmSync(snapshotFile, { force: true });
    await azurite.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
