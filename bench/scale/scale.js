#!/usr/bin/env node
'use strict';
/**
 * The cost curve from 10k to 1M identities (issue 21). For each size N, from fresh data (new slapd, new
 * PostgreSQL, new service data folder; bench/scale/sources.js): the service with disk persistence as `npm start`
 * runs it (Azurite persisting under the data folder), then the phases, each with wall seconds, objects/s,
 * service and Azurite CPU seconds, steal, load and the run's stats:
 *   1. fullImportDirectory: users and groups (manager and member relationships) into an empty mesh;
 *   2. fullImportHr: the HR rows join the directory's people and add their attributes;
 *   3. reimportUnchanged: a full import of both again, nothing changed;
 *   4. delta1Percent: 1 % of the people modified over LDAP (accesslog DeltaImport) and their HR rows updated
 *      (SQL DeltaImport on row_version);
 *   5. exportToTarget: every user provisioned into an empty second slapd; a sample read back over LDAP;
 *   then the service and its Azurite are stopped (SIGTERM: Azurite saves) and the data folder measured;
 *   6. startup: the service started again on the same folder: seconds to /api/health, and to the mesh list
 *      answering with the full totalCount (read model loaded);
 *   7. meshQueries: the mesh bench's queries over HTTP at 1 connection on the restarted service, p50/p95/p99.
 * Beside them: the engine's and Azurite's peak RSS (VmHWM) over the size, the entities per table (a scan when N
 * <= --count-max, else estimated from the last scanned size: the JSON says which), and the storage floor: a
 * fresh Azurite persisting to disk batch-inserting as many entities, of the same average size, as the full
 * imports wrote; the ratio of the full imports' seconds to the floor's.
 *
 * Each size's JSON goes to bench/scale/results/<date>-<N>.json as soon as it is done; at the end a combined
 * JSON, a markdown table on stderr and bench/scale/results/scale.png (bench/scale/report.js). A phase that
 * fails (a run not Completed, the service or Azurite gone) is recorded with the logs' tail and ends that size;
 * the next size runs. Progress lines with timestamps go to stderr. Ctrl-C stops every server it started.
 *
 * Usage: npm run bench:scale -- --users 10000,30000 [--duration 8] [--count-max 100000] [--keep] [--root <checkout>]
 *          [--entities-per-user 4.04,5.07] [--export-last]
 *   (--root: run another checkout's build, e.g. to compare two versions with the same bench;
 *    --entities-per-user: entities per user after the full imports and at the end, for a size past --count-max
 *    run without a scanned size before it: the figures of a scanned run of the same data, e.g. 100,000;
 *    --export-last: the export after the start-up, the queries and the engine restart, so a size cut short in its
 *    long export has measured those; the data folder and start-up are then measured before the export)
 *        node bench/scale/scale.js --plot-only bench/scale/results [--files a.json,b.json]
 *        node bench/scale/scale.js --restart-only <a data folder kept by --keep> [--results dir] [--settle seconds]
 *   (--settle: leave the restarted service running that long before the stop, so its background work, such as
 *    the change feed's trim (Mesh__Feed* settings from the environment), reaches the folder; its size at the end
 *    is in the JSON)
 */
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { arg, freshStorageFloor, onInterrupt, peakRssMB, rssMB, sleep, startService } = require('../support');
const { measure } = require('../mesh/measure');
const { DEPARTMENTS, uid, startServers, createConnectors, applyDelta } = require('./sources');
const { countEntities } = require('./storage');
const { readBack, relationships } = require('./checks');
const report = require('./report');

const RESULTS = arg('results', path.join(__dirname, 'results'));
const DURATION = arg('duration', 8);
const COUNT_MAX = arg('count-max', 100000);
const KEEP = process.argv.includes('--keep');
/** The export after the restart and the queries (a long size still measures its start-up if the export runs out of time). */
const EXPORT_LAST = process.argv.includes('--export-last');
/** With --restart-only: seconds to leave the restarted service running before the stop (its background work). */
const SETTLE = arg('settle', 0);
/** `--restart-only <data folder>`: see {@link restartOnly}. */
const RESTART_ONLY = arg('restart-only', '');
/** The checkout whose build (dist/) runs as the service, and whose Azurite class starts the storage (default: this one). */
const ROOT_DIR = path.resolve(arg('root', path.resolve(__dirname, '../..')));
const DATE = new Date().toISOString().slice(0, 10);
/**
 * The read model's snapshot (docs/mesh-queries.md) is written at the service's stops only, not after a quiet
 * minute: a write in the middle of the measured queries would be measured with them. A stop then includes
 * the write (in stopSeconds), and the next start loads it (readModelFrom).
 */
const SERVICE_ENV = { Mesh__ReadModelSnapshotIdleSeconds: '86400' };
const log = (msg) => process.stderr.write(`${new Date().toISOString()} [scale] ${msg}\n`);
/** Set on Ctrl-C / SIGTERM (bench/support.js onInterrupt stops the servers): no result is written for a cut size. */
let interrupted = false;
const r2 = (x) => (x === null || x === undefined ? null : +x.toFixed(2));

/** Disk usage of a folder in bytes (du -sb). */
const duBytes = (dir) => Number(execFileSync('du', ['-sb', dir]).toString().split('\t')[0]);
const alive = (pid) => fs.existsSync(`/proc/${pid}`);

/** A phase's figures from one or more runs (summed), for `objects` objects. */
function phaseFigures(objects, runs) {
  const sum = (f) => runs.reduce((a, r) => (a === null || f(r) === null ? null : a + f(r)), 0);
  const seconds = sum((r) => r.seconds);
  return {
    seconds: r2(seconds),
    objects,
    objectsPerSecond: Math.round(objects / seconds),
    msPerObject: r2((seconds * 1000) / objects),
    serviceCpuSeconds: r2(sum((r) => r.cpu.serviceCpuSeconds)),
    azuriteCpuSeconds: r2(sum((r) => r.cpu.azuriteCpuSeconds)),
    stealSeconds: r2(sum((r) => r.cpu.stealSeconds)),
    load: r2(Math.max(...runs.map((r) => r.cpu.load))),
    runs: runs.map((r) => ({ seconds: r2(r.seconds), status: r.run.status, stats: r.run.stats, ...(r.run.error ? { error: r.run.error } : {}) })),
  };
}

/**
 * `fn()` with a progress line every minute while it runs (long phases at 1M): elapsed seconds, the engine's and
 * Azurite's resident memory when `service()` gives a running service, and the load.
 */
async function heartbeat(label, service, fn) {
  const t0 = performance.now();
  const beat = setInterval(() => {
    const svc = service();
    const mb = (pid) => rssMB(pid) ?? 'gone';
    const mem = svc ? `, engine RSS ${mb(svc.pid)} MB, Azurite ${mb(svc.tablePid)} MB` : '';
    log(`${label}: ${Math.round((performance.now() - t0) / 1000)} s${mem}, load ${os.loadavg()[0].toFixed(2)}`);
  }, 60000);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}

async function runSize(N, lastEntitiesPerUser) {
  const out = {
    bench: 'scale',
    users: N,
    root: ROOT_DIR,
    date: DATE,
    cpus: os.cpus().length,
    memoryGB: Math.round(os.totalmem() / 1e9),
    loadAverageAtStart: os.loadavg().map(r2),
  };
  out.phases = {};
  out.failures = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `scale-${N}-`));
  const dataDir = path.join(dir, 'data');
  const azuriteLocation = path.join(dataDir, 'azurite');
  fs.mkdirSync(dataDir);
  const removeDir = onInterrupt(() => !KEEP && fs.rmSync(dir, { recursive: true, force: true }));
  const peak = { engine: 0, azurite: 0 };
  const notePeaks = (svc) => {
    peak.engine = Math.max(peak.engine, peakRssMB(svc.pid) ?? 0);
    peak.azurite = Math.max(peak.azurite, peakRssMB(svc.tablePid) ?? 0);
  };
  let servers;
  let svc;
  let phase = 'generate';
  /** One phase: `fn` returns the runs; a run not Completed, or a dead service or Azurite, fails the size. */
  const step = async (name, objects, fn) => {
    phase = name;
    log(`N=${N} ${name}...`);
    const runs = await heartbeat(`N=${N} ${name}`, () => svc, fn);
    const fig = phaseFigures(objects, runs);
    out.phases[name] = fig;
    notePeaks(svc);
    log(`N=${N} ${name}: ${fig.seconds} s, ${fig.objectsPerSecond} objects/s (${runs.map((r) => r.run.status).join(', ')})`);
    const bad = runs.find((r) => r.run.status !== 'Completed');
    if (bad) throw new Error(`${name}: a run ended ${bad.run.status}${bad.run.error ? `: ${JSON.stringify(bad.run.error)}` : ''}`);
    if (!alive(svc.tablePid)) throw new Error(`${name}: the Azurite table process is gone`);
  };
  try {
    const t0 = performance.now();
    servers = await heartbeat(
      `N=${N} generation`,
      () => null,
      () => startServers(dir, N, log),
    );
    const removeServers = onInterrupt(() => servers.stop());
    out.generation = { ...servers.generation, seconds: r2((performance.now() - t0) / 1000) };
    const G = servers.generation.groups;
    try {
      phase = 'start';
      svc = await startService({ root: ROOT_DIR, env: SERVICE_ENV, dataDir, azuriteLocation, startTimeoutSeconds: 600 });
      out.firstStartSeconds = r2(svc.startSeconds);
      out.azurite = { persistence: 'disk', location: 'data folder/azurite', limitsAsNpmStart: svc.azuriteLimits };
      const conns = await createConnectors(svc, servers);
      await step('fullImportDirectory', N + G, async () => [await svc.runImport(conns.directory.id, 'FullImport')]);
      await step('fullImportHr', N, async () => [await svc.runImport(conns.hr.id, 'FullImport')]);
      // What the full imports wrote (the floor inserts as many): a scan up to --count-max users, else estimated.
      phase = 'entities';
      if (N <= COUNT_MAX) out.entities = { method: 'scan after the full imports', ...(await countEntities(svc.azurite.connectionString)) };
      await step('reimportUnchanged', 2 * N + G, async () => [
        await svc.runImport(conns.directory.id, 'FullImport'),
        await svc.runImport(conns.hr.id, 'FullImport'),
      ]);
      phase = 'delta1Percent';
      const delta = await applyDelta(servers, N, dir);
      await sleep(1100);
      await step('delta1Percent', delta.people + delta.hrRows, async () => [
        await svc.runImport(conns.directory.id, 'DeltaImport'),
        await svc.runImport(conns.hr.id, 'DeltaImport'),
      ]);
      out.phases.delta1Percent.change = delta;
      if (!EXPORT_LAST) {
        await step('exportToTarget', N, async () => [await svc.runExport(conns.target.id)]);
        out.phases.exportToTarget.readBack = await readBack(servers.target, N);
      }
      phase = 'relationships';
      out.relationships = await relationships(svc, N, servers.generation.largestGroup);

      const count = async (q) => (await svc.must(svc.call('GET', `mesh/objects?take=0${q}`), 200)).totalCount;
      out.mesh = { objects: await count(''), users: await count('&objectType=User'), groups: await count('&objectType=Group') };
      if (N <= COUNT_MAX) out.entitiesAtEnd = { method: 'scan before the stop', total: (await countEntities(svc.azurite.connectionString)).total };
      notePeaks(svc);
      phase = 'stop';
      log(`N=${N} stopping the service (SIGTERM; Azurite saves)...`);
      let t = performance.now();
      await svc.stop();
      out.stopSeconds = r2((performance.now() - t) / 1000);
      out.dataFolderMB = Math.round(duBytes(dataDir) / 1e6);
      out.azuriteFolderMB = Math.round(duBytes(azuriteLocation) / 1e6);

      phase = 'startup';
      log(`N=${N} start-up on the saved data folder...`);
      t = performance.now();
      svc = await heartbeat(
        `N=${N} start-up`,
        () => null,
        () => startService({ root: ROOT_DIR, env: SERVICE_ENV, dataDir, azuriteLocation, startTimeoutSeconds: 1800 }),
      );
      const healthSeconds = (performance.now() - t) / 1000;
      const serving = await untilServing(svc, out.mesh.objects);
      out.phases.startup = {
        healthSeconds: r2(healthSeconds),
        servingSeconds: r2((performance.now() - t) / 1000),
        readModelLoadSeconds: serving.readModelLoadSeconds,
        readModelFrom: serving.readModelFrom,
        includes: 'Azurite start (loading its saved tables) + service start + token',
      };
      log(`N=${N} startup: health ${out.phases.startup.healthSeconds} s, serving ${out.phases.startup.servingSeconds} s`);
      phase = 'meshQueries';
      out.phases.meshQueries = await meshQueries(svc, N);
      notePeaks(svc);

      // The engine alone restarted, its storage running (as with an external storage account or Azurite).
      phase = 'engineRestart';
      log(`N=${N} engine restart on the running storage...`);
      const first = svc;
      t = performance.now();
      await first.stopEngine();
      const engineStopSeconds = r2((performance.now() - t) / 1000);
      t = performance.now();
      const engine = await startService({ root: ROOT_DIR, env: SERVICE_ENV, dataDir, azurite: first.azurite, startTimeoutSeconds: 1800 });
      try {
        const serving = await untilServing(engine, out.mesh.objects);
        out.phases.engineRestart = {
          healthSeconds: r2(engine.startSeconds),
          servingSeconds: r2((performance.now() - t) / 1000),
          readModelLoadSeconds: serving.readModelLoadSeconds,
          readModelFrom: serving.readModelFrom,
          includes: 'service start + token, the storage already running',
          stopBeforeSeconds: engineStopSeconds,
        };
        peak.engine = Math.max(peak.engine, peakRssMB(engine.pid) ?? 0);
        log(`N=${N} engine restart: health ${out.phases.engineRestart.healthSeconds} s, serving ${out.phases.engineRestart.servingSeconds} s`);
        if (EXPORT_LAST) {
          svc = engine;
          await step('exportToTarget', N, async () => [await engine.runExport(conns.target.id)]);
          out.phases.exportToTarget.readBack = await readBack(servers.target, N);
          out.phases.exportToTarget.when = 'after the start-up, the queries and the engine restart (--export-last)';
        }
      } finally {
        await engine.stop();
        svc = first;
      }
      await first.stop();
      svc = undefined;
    } finally {
      removeServers();
      await servers.stop();
    }
  } catch (err) {
    out.failures.push({ phase, error: String(err?.stack ?? err).slice(0, 4000), serviceLogTail: svc?.logs().slice(-6000) });
    log(`N=${N} FAILED in ${phase}: ${String(err?.message ?? err).split('\n')[0]}`);
    if (svc) {
      notePeaks(svc);
      await svc.stop().catch(() => undefined);
    }
  }
  out.peakRssMB = { engine: peak.engine || null, azuriteTable: peak.azurite || null };

  // The floor: as many entities, of the same average size, batch-inserted into a fresh disk-persisting Azurite.
  if (out.phases.fullImportDirectory && out.phases.fullImportHr && !interrupted) {
    try {
      const per = lastEntitiesPerUser;
      if (!out.entities)
        out.entities = {
          method: `estimated from the entities per user of ${per.source}`,
          perUser: r2(per.imports),
          total: Math.round(per.imports * N),
        };
      if (!out.entitiesAtEnd) out.entitiesAtEnd = { method: 'estimated as above', perUser: r2(per.end), total: Math.round(per.end * N) };
      const entities = out.entities.total;
      // The average entity's size on disk: Azurite's folder after the save over the entities it then held.
      const bytes = out.azuriteFolderMB ? Math.max(100, Math.round((out.azuriteFolderMB * 1e6) / out.entitiesAtEnd.total)) : 600;
      log(`N=${N} floor: ${entities} entities of ${bytes} bytes into a fresh Azurite on disk...`);
      const floorDir = path.join(dir, 'floor');
      out.floor = await heartbeat(
        `N=${N} floor`,
        () => null,
        () => freshStorageFloor(entities, ROOT_DIR, { location: floorDir, bytes }),
      );
      fs.rmSync(floorDir, { recursive: true, force: true });
      const imports = out.phases.fullImportDirectory.seconds + out.phases.fullImportHr.seconds;
      out.floor.ratioFullImportsToFloor = r2(imports / out.floor.seconds);
    } catch (err) {
      out.failures.push({ phase: 'floor', error: String(err?.stack ?? err).slice(0, 4000) });
    }
  }
  out.loadAverageAtEnd = os.loadavg().map(r2);
  out.goals = report.goals(out);
  if (!KEEP) fs.rmSync(dir, { recursive: true, force: true });
  else out.keptFolder = dir;
  removeDir();
  return out;
}

/** Waits until the mesh list answers with the full count (the read model loaded); the load's seconds as logged. */
async function untilServing(svc, objects) {
  for (;;) {
    const r = await svc.call('GET', 'mesh/objects?take=1');
    if (r.status === 200 && r.body.totalCount === objects) break;
    if (r.status !== 200 && r.status !== 503) throw new Error(`the list answered ${r.status}: ${JSON.stringify(r.body)}`);
    if (!alive(svc.pid)) throw new Error(`the service exited during start-up:\n${svc.logs().slice(-4000)}`);
    await sleep(100);
  }
  const loaded = /\[mesh\] Read model loaded( from its snapshot)?: (\d+) object\(s\) in (\d+) ms/.exec(svc.logs());
  return { readModelLoadSeconds: loaded ? Number(loaded[3]) / 1000 : null, readModelFrom: loaded ? (loaded[1] ? 'snapshot' : 'scan') : null };
}

/** The mesh bench's scenarios on this data, 1 connection, after the restart. */
async function meshQueries(svc, N) {
  const headers = { authorization: `Bearer ${svc.token}`, 'content-type': 'application/json' };
  const pick = (a) => a[Math.floor(Math.random() * a.length)];
  const ids = [];
  for (let k = 0; k < 5; k++) {
    const page = await svc.must(svc.call('GET', `mesh/objects?objectType=User&take=200&skip=${Math.floor(Math.random() * Math.max(1, N - 200))}`), 200);
    ids.push(...page.items.map((x) => x.meshObjectId));
  }
  const scenarios = [
    [
      'list objectType=User, random page',
      () => ({ method: 'GET', path: `/api/mesh/objects?objectType=User&skip=${Math.floor(Math.random() * Math.max(1, N - 200))}&take=${pick([50, 200])}` }),
    ],
    [
      'anchor substring search',
      () => ({ method: 'GET', path: `/api/mesh/objects?search=${uid(Math.floor(Math.random() * N)).slice(0, 5)}&skip=${pick([0, 50])}` }),
    ],
    [
      'advanced search equals + contains + ispresent',
      () => ({
        method: 'POST',
        path: '/api/mesh/objects/search',
        body: JSON.stringify({
          objectType: 'User',
          criteria: [
            { attributeName: 'department', operator: 'equals', value: pick(DEPARTMENTS) },
            { attributeName: 'mail', operator: 'contains', value: `u${Math.floor(Math.random() * 100)}` },
            { attributeName: 'jobTitle', operator: 'ispresent' },
          ],
          skip: pick([0, 50]),
          take: 50,
        }),
      }),
    ],
    ['detail', () => ({ method: 'GET', path: `/api/mesh/objects/${pick(ids)}` })],
  ];
  const results = [];
  for (const [name, make] of scenarios) {
    log(`N=${N} query: ${name}`);
    results.push(await measure(svc.base, headers, name, make, 1, { duration: DURATION }));
  }
  return { connections: 1, durationSeconds: DURATION, scenarios: results };
}

/**
 * `--restart-only <data folder>`: the start-up, the mesh queries and the engine restart alone, on a data
 * folder a size left behind (`--keep`, or a copy of one): Azurite loads it, the service starts on it (the mesh
 * queries), then the engine restarts on the running storage (the mesh queries again). JSON to <results>/<date>-restart-<objects>.json.
 */
async function restartOnly(dataDir) {
  const azuriteLocation = path.join(dataDir, 'azurite');
  const out = {
    bench: 'scale --restart-only',
    root: ROOT_DIR,
    date: DATE,
    dataFolderMB: Math.round(duBytes(dataDir) / 1e6),
    loadAverageAtStart: os.loadavg().map(r2),
    phases: {},
  };
  log(`restart on ${dataDir} (${out.dataFolderMB} MB)...`);
  let t = performance.now();
  // When the embedded storage has every table in memory: its stats file drops `loading` once the tables it
  // loads in the background (Storage__AzuriteBackgroundLoadMB) are all loaded.
  const statsFile = path.join(azuriteLocation, 'azurite-table-stats.json');
  const t0 = t;
  const wallT0 = Date.now();
  let storageLoadedSeconds = null;
  let sawLoading = false;
  let answeredAt = 0;
  const statsPoll = setInterval(() => {
    try {
      const st = JSON.parse(fs.readFileSync(statsFile, 'utf8'));
      if (st.loading) sawLoading = true;
      // Only a file written after the storage answered (the launcher writes one early, before its load ends).
      // (Without a background load, every table was in memory when the storage answered.)
      else if (storageLoadedSeconds === null && answeredAt && Date.parse(st.updatedAt) >= answeredAt)
        storageLoadedSeconds = sawLoading ? r2((performance.now() - t0) / 1000) : r2((answeredAt - wallT0) / 1000);
    } catch {
      // not written yet
    }
  }, 500);
  statsPoll.unref();
  const svc = await heartbeat(
    'start-up',
    () => null,
    () => startService({ root: ROOT_DIR, env: SERVICE_ENV, dataDir, azuriteLocation, startTimeoutSeconds: 1800 }),
  );
  answeredAt = Date.now();
  try {
    const healthSeconds = (performance.now() - t) / 1000;
    // The mesh's size, once the read model answers with it (the count grows no more).
    let objects = -1;
    for (;;) {
      const r = await svc.call('GET', 'mesh/objects?take=0');
      if (r.status === 200 && r.body.totalCount === objects && objects > 0) break;
      if (r.status === 200) objects = r.body.totalCount;
      await sleep(objects > 0 ? 2000 : 200);
    }
    const serving = await untilServing(svc, objects);
    const users = (await svc.must(svc.call('GET', 'mesh/objects?take=0&objectType=User'), 200)).totalCount;
    out.mesh = { objects, users };
    out.phases.startup = {
      healthSeconds: r2(healthSeconds),
      servingSeconds: r2((performance.now() - t) / 1000),
      readModelLoadSeconds: serving.readModelLoadSeconds,
      readModelFrom: serving.readModelFrom,
      includes: 'Azurite start (loading its saved tables) + service start + token; serving is seen up to 2 s late',
    };
    log(`startup: health ${out.phases.startup.healthSeconds} s, serving ${out.phases.startup.servingSeconds} s`);
    out.phases.meshQueries = await meshQueries(svc, users);
    while (storageLoadedSeconds === null && performance.now() - t0 < 1_800_000) await sleep(500);
    clearInterval(statsPoll);
    out.phases.startup.storageLoadedSeconds = storageLoadedSeconds;
    out.phases.startup.storageLoadedInBackground = sawLoading;
    log(
      `startup: every table in memory after ${storageLoadedSeconds} s (${sawLoading ? 'large tables loaded in the background' : 'all before the storage answered'})`,
    );
    t = performance.now();
    await svc.stopEngine();
    const engineStopSeconds = r2((performance.now() - t) / 1000);
    t = performance.now();
    const engine = await startService({ root: ROOT_DIR, env: SERVICE_ENV, dataDir, azurite: svc.azurite, startTimeoutSeconds: 1800 });
    try {
      const again = await untilServing(engine, objects);
      out.phases.engineRestart = {
        healthSeconds: r2(engine.startSeconds),
        servingSeconds: r2((performance.now() - t) / 1000),
        readModelLoadSeconds: again.readModelLoadSeconds,
        readModelFrom: again.readModelFrom,
        includes: 'service start + token, the storage already running',
        stopBeforeSeconds: engineStopSeconds,
      };
      log(`engine restart: health ${out.phases.engineRestart.healthSeconds} s, serving ${out.phases.engineRestart.servingSeconds} s`);
      // Again on the restarted engine: the first start may be finishing work the stopped service left.
      out.phases.meshQueriesAfterEngineRestart = await meshQueries(engine, users);
      if (SETTLE) {
        // Background work of the running service (the change feed's trim, the storage's saves) before the stop.
        log(`settling ${SETTLE} s...`);
        await heartbeat(
          'settle',
          () => engine,
          () => sleep(SETTLE * 1000),
        );
        out.settleSeconds = SETTLE;
      }
      out.peakRssMB = { engine: peakRssMB(engine.pid), azuriteTable: peakRssMB(svc.tablePid) };
    } finally {
      await engine.stop();
    }
  } finally {
    await svc.stop();
  }
  out.dataFolderMBAtEnd = Math.round(duBytes(dataDir) / 1e6);
  out.feedSettings = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('Mesh__Feed')));
  const file = path.join(RESULTS, `${DATE}-restart-${out.mesh?.objects}${SETTLE ? '-settled' : ''}.json`);
  fs.writeFileSync(file, JSON.stringify(out, null, 2) + '\n');
  log(`done: ${file}`);
}

async function main() {
  const plotOnly = arg('plot-only', '');
  if (plotOnly) return report.finish(report.load(plotOnly, arg('files', '')), path.join(plotOnly, 'scale.png'), log);
  const sizes = arg('users', '10000,30000')
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => n > 0);
  if (!sizes.length || sizes.some((n) => !Number.isInteger(n) || n < 1000)) throw new Error('--users is a comma-separated list of sizes of at least 1000');
  fs.mkdirSync(RESULTS, { recursive: true });
  if (RESTART_ONLY) return restartOnly(path.resolve(String(RESTART_ONLY)));
  onInterrupt(() => {
    interrupted = true;
    log('interrupted: stopping every server started; the size under way is not written');
  });
  const all = [];
  // Entities per user after the full imports and at the end, for sizes past --count-max (from the last scanned size).
  const given = String(arg('entities-per-user', '')).split(',').map(Number);
  let perUser =
    given.length === 2 && given.every((x) => x > 0)
      ? { imports: given[0], end: given[1], source: '--entities-per-user' }
      : { imports: 5, end: 7, source: 'a default guess' };
  for (const N of sizes) {
    log(`=== N=${N} (load ${os.loadavg()[0].toFixed(2)})`);
    const res = await runSize(N, perUser);
    if (interrupted) return;
    if (res.entities?.method.startsWith('scan') && res.entitiesAtEnd?.method.startsWith('scan'))
      perUser = { imports: res.entities.total / N, end: res.entitiesAtEnd.total / N, source: `the scan at ${N}` };
    const file = path.join(RESULTS, `${DATE}-${N}.json`);
    fs.writeFileSync(file, JSON.stringify(res, null, 2) + '\n');
    log(`N=${N} done: ${file}${res.failures.length ? ` (${res.failures.length} failure(s))` : ''}`);
    all.push(res);
  }
  const combined = path.join(RESULTS, `${DATE}-combined.json`);
  fs.writeFileSync(combined, JSON.stringify(all, null, 2) + '\n');
  log(`combined: ${combined}`);
  await report.finish(all, path.join(RESULTS, 'scale.png'), log);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
