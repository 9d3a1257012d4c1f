#!/usr/bin/env node
'use strict';
/**
 * Mesh query benchmark (issue 8). The mesh is built by the file connector through the running service:
 * an HR export of N rows (bench/mesh/data.js: 90 % User, 10 % Contact, 20 attributes on every row plus 2 on
 * some rows, two multi-valued) read by a `custom` connector with `implementation: 'file'`, two projection
 * rules (Contact when `kind` says so, else User) and one inbound flow rule per attribute, imported with
 * POST /connectors/{id}/import and polled on GET /runs/{id}, all over HTTP, on an in-memory Azurite.
 * Then the service is restarted on the same Azurite and measured. Prints JSON:
 * - csv: writing the export (set-up);
 * - import: the full import (trigger to Completed), its stats, the service's and Azurite's CPU seconds and the
 *   service's peak RSS (set-up, not a query figure);
 * - startup: a fresh service process on the imported mesh, spawn to /health, and spawn to the first
 *   GET /mesh/objects that answers with the full totalCount (host start + read model load); the load time
 *   the service logs;
 * - memory: the fresh process's RSS and heap used (after gc, read in the service by bench/mesh/memprobe.js)
 *   once loaded, minus a fresh service on an empty mesh on the same Azurite; the RSS of the loaded process
 *   when /health first answered (its load just begun); the model's heap loaded again in this process;
 * - checks: one query per operator (and multi-valued, non-ASCII, combined) with its totalCount against the
 *   count computed from the generated rows: the data really exercises each criterion;
 * - scenarios, per concurrency (1 and 8 connections): requests, rps, p50/p95/p99 latency (ms, every
 *   response's own time), non-2xx, errors; a 2 s warm-up per scenario is not counted (cold start excluded).
 *   The four of the issue (list objectType at a random page, anchor substring search, advanced search
 *   equals + contains + ispresent, detail) and one more search with the other operators;
 * - freshness: one row appended to the export and a delta import; the run's duration, then the time from
 *   the run reported Completed until the list shows the new object;
 * - inProcess: the same query mix evaluated in this process on a model loaded here (no HTTP).
 *
 * Usage: npm run bench:mesh -- [--objects 100000] [--duration 8]
 *   (or: npm run build && node --expose-gc bench/mesh/query.js [--objects N] [--duration S])
 */
const { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ATTRIBUTES, MULTI_VALUED, DEPTS, csvLine, makeRow, rng, writeMeshCsv } = require('./data');
const { ROOT: root, arg, cpuSeconds, onInterrupt, peakRssMB, sleep } = require('../support');
const { rssMB, startService } = require('./service');
const { measure: measureScenario, percentile } = require('./measure');

const { Azurite } = require(path.join(root, 'dist/lib/runtime/azurite.js'));

const N = arg('objects', 100000);
const DURATION = arg('duration', 8);
const WARMUP = 2;
const PREFIX = 'meshbench';
const EMPTY_PREFIX = 'meshbenchempty';
const PROBE = `--expose-gc --require ${path.join(__dirname, 'memprobe.js')}`;
const mb = (bytes) => Math.round(bytes / 1e6);
const measure = (base, headers, name, makeRequest, connections) =>
  measureScenario(base, headers, name, makeRequest, connections, { duration: DURATION, warmup: WARMUP });
const round = (x, d = 2) => (x === null || x === undefined ? null : Math.round(x * 10 ** d) / 10 ** d);
const pick = (a) => a[Math.floor(Math.random() * a.length)];

// The query mix (as before the mesh was imported: same needles and values).
const NEEDLES = ['ada.lov', 'hopper.0', '.knuth.01', '00042', 'grace', 'lamarr.09', 'e.t', 'zzz-none'];
const DEPT_VALUES = DEPTS.map((d) => d.toLowerCase());
const MAIL_PARTS = ['turing', 'hopper', 'ada', 'knuth.0', '@example'];
const advancedCriteria = () => [
  { attributeName: 'department', operator: 'equals', value: pick(DEPT_VALUES) },
  { attributeName: 'mail', operator: 'contains', value: pick(MAIL_PARTS) },
  { attributeName: 'description', operator: 'ispresent' },
];
const otherCriteria = () => [
  { attributeName: 'isActive', operator: 'istrue' },
  { attributeName: 'mobile', operator: 'isnotpresent' },
  { attributeName: 'memberOf', operator: 'equals', value: `grp-${Math.floor(Math.random() * 30)}` },
  { attributeName: 'city', operator: 'startswith', value: `city ${1 + Math.floor(Math.random() * 9)}` },
];

// Checks: a query per operator and the expected count, computed from the generated rows.
const fold = (v) => String(v).toLowerCase();
const valuesOf = (v) => (v === null || v === undefined ? [] : Array.isArray(v) ? v : [v]);
const any = (name, test) => (row) => valuesOf(row.values[name]).some((v) => test(fold(v)));
const TRUE = ['true', '1', 'yes'];
const FALSE = ['false', '0', 'no'];
const CHECKS = [
  ['objectType Contact', { objectType: 'contact' }, (row) => row.kind === 'Contact'],
  ['anchorSearch ada.lov', { anchorSearch: 'ADA.LOV' }, (row) => fold(row.account).includes('ada.lov')],
  ['anchorSearch non-ASCII ÉLODIE', { anchorSearch: 'ÉLODIE' }, (row) => fold(row.account).includes('élodie')],
  [
    'equals department',
    { criteria: [{ attributeName: 'department', operator: 'equals', value: 'department c' }] },
    any('department', (v) => v === 'department c'),
  ],
  ['contains mail', { criteria: [{ attributeName: 'Mail', operator: 'contains', value: 'HOPPER' }] }, any('mail', (v) => v.includes('hopper'))],
  ['startswith city', { criteria: [{ attributeName: 'city', operator: 'startswith', value: 'city 1' }] }, any('city', (v) => v.startsWith('city 1'))],
  [
    'endswith userPrincipalName',
    { criteria: [{ attributeName: 'userPrincipalName', operator: 'endswith', value: '7@corp.example.test' }] },
    any('userPrincipalName', (v) => v.endsWith('7@corp.example.test')),
  ],
  ['ispresent mobile (70 %)', { criteria: [{ attributeName: 'mobile', operator: 'ispresent' }] }, (row) => row.values.mobile !== null],
  ['isnotpresent description (50 %)', { criteria: [{ attributeName: 'description', operator: 'isnotpresent' }] }, (row) => row.values.description === null],
  ['istrue isActive', { criteria: [{ attributeName: 'isActive', operator: 'istrue' }] }, any('isActive', (v) => TRUE.includes(v))],
  ['isfalse isActive', { criteria: [{ attributeName: 'isActive', operator: 'isfalse' }] }, any('isActive', (v) => FALSE.includes(v))],
  ['equals memberOf, multi-valued', { criteria: [{ attributeName: 'memberOf', operator: 'equals', value: 'GRP-7' }] }, any('memberOf', (v) => v === 'grp-7')],
  [
    'startswith proxyAddresses, multi-valued',
    { criteria: [{ attributeName: 'proxyAddresses', operator: 'startswith', value: 'smtp:a0' }] },
    any('proxyAddresses', (v) => v.startsWith('smtp:a0')),
  ],
  [
    'User + equals + contains + ispresent',
    {
      objectType: 'User',
      criteria: [
        { attributeName: 'department', operator: 'equals', value: 'department a' },
        { attributeName: 'mail', operator: 'contains', value: 'ada' },
        { attributeName: 'description', operator: 'ispresent' },
      ],
    },
    (row) => row.kind === 'User' && fold(row.values.department) === 'department a' && row.values.mail.includes('ada') && row.values.description !== null,
  ],
];

/** The service's memory figures after gc (SIGUSR2 to bench/mesh/memprobe.js in the service). */
async function probe(svc, dir) {
  const before = new Set(readdirSync(dir));
  process.kill(svc.pid, 'SIGUSR2');
  for (let i = 0; i < 200; i++) {
    const file = readdirSync(dir).find((f) => f.startsWith(`${svc.pid}-`) && f.endsWith('.json') && !before.has(f));
    if (file) return JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
    await sleep(50);
  }
  throw new Error('the service wrote no memory figures');
}

/** Poll the list until it answers 200 with `expected` objects; ms since the service was spawned. */
async function untilServing(svc, headers, expected) {
  for (;;) {
    const r = await fetch(`${svc.base}/mesh/objects?take=1`, { headers });
    const text = await r.text();
    if (r.status === 200 && JSON.parse(text).totalCount === expected) return performance.now() - svc.spawnedAt;
    if (r.status !== 200 && r.status !== 503) throw new Error(`list answered ${r.status}: ${text}`);
    if (svc.child.exitCode !== null) throw new Error(`the service exited:\n${svc.logs().slice(-4000)}`);
    await sleep(50);
  }
}

async function runImport(svc, connectorId, runType, tablePid) {
  const t0 = performance.now();
  const c0 = { service: cpuSeconds(svc.pid), azurite: cpuSeconds(tablePid) };
  const { body: started } = await svc.call('Admin', 'POST', `connectors/${connectorId}/import`, { runType }, 202);
  for (;;) {
    const { body: run } = await svc.call('Admin', 'GET', `runs/${started.runId}`, undefined, 200);
    if (!['Running', 'Queued'].includes(run.status)) {
      return {
        seconds: round((performance.now() - t0) / 1000),
        completedAt: performance.now(),
        status: run.status,
        stats: run.stats,
        serviceCpuSeconds: round(cpuSeconds(svc.pid) - c0.service, 1),
        azuriteCpuSeconds: round(cpuSeconds(tablePid) - c0.azurite, 1),
        errors: run.errors && run.errors.length ? run.errors.slice(0, 3) : undefined,
      };
    }
    await sleep(100);
  }
}

async function main() {
  const out = {
    objects: N,
    attributes: { onEveryObject: 20, onSomeObjects: { mobile: '70 %', description: '50 %' }, multiValued: MULTI_VALUED },
    builtWith: 'file connector import over HTTP (custom connector, implementation file, 2 projection rules, 22 inbound flow rules)',
    cpus: os.cpus().length,
    loadAverageAtStart: os.loadavg().map((x) => round(x, 1)),
  };
  const csvDir = mkdtempSync(path.join(os.tmpdir(), 'mesh-bench-csv-'));
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'mesh-bench-data-'));
  const emptyDir = mkdtempSync(path.join(os.tmpdir(), 'mesh-bench-empty-'));
  const probeDir = mkdtempSync(path.join(os.tmpdir(), 'mesh-bench-probe-'));
  const azurite = new Azurite(require('../support').azuriteOptions());
  const removeDirs = () => {
    for (const d of [csvDir, dataDir, emptyDir, probeDir]) rmSync(d, { recursive: true, force: true });
  };
  // Registered first, so an interruption stops the services (registered later) before their storage.
  const removeInterrupt = onInterrupt(async () => {
    await azurite.stop();
    removeDirs();
  });
  await azurite.start();
  const tablePid = azurite.pids[0];
  // For the in-process part (lib/config reads these when the store is first required).
  process.env.AzureWebJobsStorage = azurite.connectionString;
  process.env.Storage__TablePrefix = PREFIX;
  const running = new Set();
  const start = async (opts) => {
    const svc = await startService({ azurite, ...opts });
    running.add(svc);
    return svc;
  };
  const stop = async (svc) => {
    await svc.stop();
    running.delete(svc);
  };
  try {
    // The export, and what each check should find in it.
    const expected = CHECKS.map(() => 0);
    let users = 0;
    let t = performance.now();
    const csvFile = path.join(csvDir, 'people.csv');
    writeMeshCsv(csvFile, N, {
      onRow: (row) => {
        if (row.kind === 'User') users++;
        CHECKS.forEach(([, , test], i) => test(row) && expected[i]++);
      },
    });
    out.csv = { rows: N, megabytes: round(statSync(csvFile).size / 1e6, 1), seconds: round((performance.now() - t) / 1000) };

    // Import through the service.
    const importer = await start({ prefix: PREFIX, dataDir });
    const { body: conn } = await importer.call(
      'Admin',
      'POST',
      'connectors',
      {
        name: 'HR export',
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: csvDir, anchorColumn: 'account', multiValueColumns: MULTI_VALUED } },
      },
      201,
    );
    const rule = (body) => importer.call('Admin', 'POST', 'rules', { connectorId: conn.id, ...body }, 201);
    await rule({
      ruleName: 'Project contacts',
      ruleType: 'ProjectionRule',
      sourceAttribute: 'account',
      objectType: 'Contact',
      priority: 10,
      transformScript: "object.kind == 'Contact'",
    });
    await rule({ ruleName: 'Project users', ruleType: 'ProjectionRule', sourceAttribute: 'account', objectType: 'User', priority: 20 });
    for (const a of ATTRIBUTES) await rule({ ruleName: `Flow ${a}`, ruleType: 'FlowRule', sourceAttribute: a, targetAttribute: a, confidence: 50 });
    const rssBeforeImport = rssMB(importer.pid);
    const full = await runImport(importer, conn.id, 'FullImport', tablePid);
    delete full.completedAt;
    out.import = { ...full, serviceRssBeforeMB: rssBeforeImport, servicePeakRssMB: peakRssMB(importer.pid) };
    if (full.status !== 'Completed') throw new Error(`the import ended ${full.status}: ${JSON.stringify(full)}`);
    await stop(importer);

    // Baseline: a fresh service on an empty mesh (another table prefix, same Azurite, same code).
    const empty = await start({ prefix: EMPTY_PREFIX, dataDir: emptyDir, nodeOptions: PROBE, env: { MESH_BENCH_MEMPROBE: probeDir } });
    await untilServing(empty, await empty.headers('Viewer'), 0);
    await sleep(2000);
    const emptyMem = { rss: rssMB(empty.pid), heap: (await probe(empty, probeDir)).heapUsed };
    await stop(empty);

    // Start-up: a fresh service on the imported mesh, until the list answers with every object.
    const svc = await start({ prefix: PREFIX, dataDir, nodeOptions: PROBE, env: { MESH_BENCH_MEMPROBE: probeDir } });
    const rssAtHealth = rssMB(svc.pid);
    const headers = await svc.headers('Viewer');
    const servingMs = await untilServing(svc, headers, N);
    // The importer's stop wrote the read model's snapshot into the same data folder: the start loads it.
    const loaded = /\[mesh\] Read model loaded( from its snapshot)?: (\d+) object\(s\) in (\d+) ms/.exec(svc.logs());
    out.startup = {
      hostHealthSeconds: round(svc.healthMs / 1000),
      servingSeconds: round(servingMs / 1000),
      readModelLoadSeconds: loaded ? Number(loaded[3]) / 1000 : null,
      readModelFrom: loaded ? (loaded[1] ? 'snapshot' : 'scan') : null,
      objectsLoaded: loaded ? Number(loaded[2]) : null,
    };
    await sleep(2000);
    const loadedRss = rssMB(svc.pid);
    const loadedHeap = (await probe(svc, probeDir)).heapUsed;
    out.memory = {
      serviceRssEmptyMb: emptyMem.rss,
      serviceRssLoadedMb: loadedRss,
      readModelRssMb: loadedRss - emptyMem.rss,
      serviceRssAtHealthMb: rssAtHealth,
      servicePeakRssMb: peakRssMB(svc.pid),
      serviceHeapUsedEmptyMb: mb(emptyMem.heap),
      serviceHeapUsedLoadedMb: mb(loadedHeap),
      readModelHeapMb: mb(loadedHeap - emptyMem.heap),
    };

    // Checks: every operator finds exactly what the rows hold.
    out.checks = [];
    for (const [i, [name, query]] of CHECKS.entries()) {
      const { body } = await svc.call('Viewer', 'POST', 'mesh/objects/search', { ...query, criteria: query.criteria ?? [], take: 0 }, 200);
      out.checks.push({ check: name, totalCount: body.totalCount, expected: expected[i], ok: body.totalCount === expected[i] });
    }

    // Ids for the detail scenario, from a few list pages.
    const sampleIds = [];
    for (let k = 0; k < 5; k++) {
      const { body } = await svc.call('Viewer', 'GET', `mesh/objects?take=200&skip=${Math.floor(Math.random() * Math.max(1, N - 200))}`, undefined, 200);
      for (const item of body.items) sampleIds.push(item.meshObjectId);
    }

    const scenarios = [
      [
        'list objectType=User, random page',
        () => ({
          method: 'GET',
          path: `/api/mesh/objects?objectType=User&skip=${Math.floor(Math.random() * Math.max(1, users - 200))}&take=${pick([50, 200])}`,
        }),
      ],
      ['anchor substring search', () => ({ method: 'GET', path: `/api/mesh/objects?search=${encodeURIComponent(pick(NEEDLES))}&skip=${pick([0, 50, 1000])}` })],
      [
        'advanced search equals + contains + ispresent',
        () => ({
          method: 'POST',
          path: '/api/mesh/objects/search',
          body: JSON.stringify({ objectType: 'User', criteria: advancedCriteria(), skip: pick([0, 50, 500]), take: 50 }),
        }),
      ],
      ['detail', () => ({ method: 'GET', path: `/api/mesh/objects/${pick(sampleIds)}` })],
      [
        'advanced search istrue + isnotpresent + multi-valued equals + startswith',
        () => ({ method: 'POST', path: '/api/mesh/objects/search', body: JSON.stringify({ criteria: otherCriteria(), skip: pick([0, 50]), take: 50 }) }),
      ],
    ];
    out.targetsP95Ms = {
      'list objectType=User, random page': 30,
      'anchor substring search': 50,
      'advanced search equals + contains + ispresent': 100,
      detail: 15,
    };
    out.scenarios = [];
    for (const connections of [1, 8]) {
      for (const [name, make] of scenarios) out.scenarios.push(await measure(svc.base, headers, name, make, connections));
    }

    // Freshness: one more row in the export, a delta import, until the list shows it.
    const fresh = makeRow(N, rng(7));
    fresh.account = `Fresh.Row.${Date.now()}`;
    appendFileSync(csvFile, csvLine(fresh));
    const delta = await runImport(svc, conn.id, 'DeltaImport', tablePid);
    for (;;) {
      const { body } = await svc.call('Viewer', 'GET', `mesh/objects?search=${encodeURIComponent(fresh.account)}&take=0`, undefined, 200);
      if (body.totalCount === 1) break;
      if (performance.now() - delta.completedAt > 30000) throw new Error('the delta-imported object never showed');
      await sleep(10);
    }
    out.freshness = {
      deltaImportSeconds: delta.seconds,
      status: delta.status,
      stats: delta.stats,
      visibleAfterRunCompletedMs: Math.round(performance.now() - delta.completedAt),
    };

    if (global.gc) out.inProcess = await inProcess(sampleIds, users);
    out.loadAverageAtEnd = os.loadavg().map((x) => round(x, 1));
    console.log(JSON.stringify(out, null, 2));
  } finally {
    for (const s of running) await s.stop();
    await azurite.stop();
    removeDirs();
    removeInterrupt();
  }
}

/** The read model loaded in this process (heap, gc before and after) and the query mix on it, no HTTP. */
async function inProcess(sampleIds, users) {
  const { MeshReadModel } = require(path.join(root, 'dist/lib/mesh/readModel.js'));
  const { MeshFeedReader } = require(path.join(root, 'dist/lib/mesh/feed.js'));
  const { queryMesh, toListItem, toDetail } = require(path.join(root, 'dist/lib/mesh/query.js'));
  global.gc();
  const before = process.memoryUsage().heapUsed;
  const model = new MeshReadModel();
  const t = performance.now();
  await new MeshFeedReader(model).load();
  const loadSeconds = round((performance.now() - t) / 1000);
  global.gc();
  const heap = mb(process.memoryUsage().heapUsed - before);
  const time = (name, fn) => {
    const times = [];
    for (let i = 0; i < 300; i++) {
      const s = process.hrtime.bigint();
      fn();
      times.push(Number(process.hrtime.bigint() - s) / 1e6);
    }
    times.sort((a, b) => a - b);
    return { scenario: name, runs: times.length, p50Ms: percentile(times, 0.5), p95Ms: percentile(times, 0.95), p99Ms: percentile(times, 0.99) };
  };
  const page = (q) => queryMesh(model, q).items.map((r) => toListItem(model, r));
  return {
    readModelHeapMb: heap,
    loadSeconds,
    objectsInModel: model.size,
    scenarios: [
      time('list objectType=User, random page', () =>
        page({ objectType: 'User', skip: Math.floor(Math.random() * Math.max(1, users - 200)), take: pick([50, 200]) }),
      ),
      time('anchor substring search', () => page({ search: pick(NEEDLES), skip: pick([0, 50, 1000]), take: 50 })),
      time('advanced search equals + contains + ispresent', () =>
        page({ objectType: 'User', criteria: advancedCriteria(), skip: pick([0, 50, 500]), take: 50 }),
      ),
      time('detail', () => toDetail(model, model.get(pick(sampleIds)))),
      time('advanced search istrue + isnotpresent + multi-valued equals + startswith', () =>
        page({ criteria: otherCriteria(), skip: pick([0, 50]), take: 50 }),
      ),
    ],
  };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
