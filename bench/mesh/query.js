#!/usr/bin/env node
'use strict';
/**
 * Mesh query benchmark: N mesh objects x 20 attributes (bench/mesh/generate.js), written through the mesh
 * store's own write API (lib/mesh/store.ts commitMeshWrite: the mesh rows and the change feed, as the sync
 * engine commits them) into an in-memory Azurite; then the service (local runtime) is started on that storage
 * and measured over HTTP with autocannon, cold start excluded. Prints JSON:
 * - seedSeconds: writing the mesh (not a query figure);
 * - startup: spawn to the first 200 of GET /mesh/objects (host start + read model load), and the load time
 *   the service logs;
 * - memory: the service's RSS with the mesh loaded minus a service on an empty mesh; and the read model's
 *   heap measured in this process (load the same model here, gc before and after, heapUsed delta);
 * - per scenario and concurrency: requests, rps, p50/p95/p99 latency (ms, from every response's own time),
 *   non-2xx count. Scenarios: list with objectType at random pages, anchor substring search, advanced search
 *   (equals + contains + ispresent), detail by id.
 * - freshness: a write committed here (one object through commitMeshWrite) until the service lists it.
 *
 * Usage: npm run build && node --expose-gc bench/mesh/query.js [--objects 100000] [--duration 8]
 */
const { spawn } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { generate } = require('./generate');

const root = path.resolve(__dirname, '../..');
const { Azurite, freePort } = require(path.join(root, 'dist/lib/runtime/azurite.js'));

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}
const N = arg('objects', 100000);
const DURATION = arg('duration', 8);
const CONNECTOR = '0b0b0b0b-1111-4222-8333-444444444444';
const PREFIX = 'meshbench';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : null;
}

async function startService(azurite, prefix) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'mesh-bench-'));
  const port = await freePort();
  const started = Date.now();
  const child = spawn(process.execPath, [path.join(root, 'dist/lib/runtime/cli.js'), 'start', '--app', root, '--port', String(port), '--data-dir', dataDir], {
    env: {
      ...process.env,
      AzureWebJobsStorage: azurite.connectionString,
      Storage__TablePrefix: prefix,
      AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
      Service__DataDir: dataDir,
      Authentication__Negotiate__Enabled: 'false',
      Engine__InstanceName: `bench-${prefix}`,
      LOG_FORMAT: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let logs = '';
  const keep = (d) => (logs = (logs + d.toString()).slice(-50000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const base = `http://127.0.0.1:${port}/api`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/health`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || i > 1200) throw new Error(`service did not start:\n${logs.slice(-4000)}`);
    await sleep(100);
  }
  const info = JSON.parse(readFileSync(path.join(dataDir, 'dev-issuer.json'), 'utf8'));
  const basic = Buffer.from(`${encodeURIComponent(info.clientId)}:${encodeURIComponent(info.clientSecret)}`).toString('base64');
  const tok = await (
    await fetch(info.tokenEndpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` }, body: 'grant_type=client_credentials&role=Viewer' })
  ).json();
  const headers = { authorization: `Bearer ${tok.access_token}`, 'content-type': 'application/json' };
  // Serving queries: the first 200 of the list (503 while the read model loads).
  for (;;) {
    const r = await fetch(`${base}/mesh/objects?take=1`, { headers });
    if (r.status === 200) break;
    if (r.status !== 503) throw new Error(`list answered ${r.status}: ${await r.text()}`);
    await sleep(200);
  }
  const servingMs = Date.now() - started;
  const loaded = /\[mesh\] Read model loaded: (\d+) object\(s\) in (\d+) ms/.exec(logs);
  return {
    child,
    base,
    headers,
    servingMs,
    loadMs: loaded ? Number(loaded[2]) : null,
    loadedObjects: loaded ? Number(loaded[1]) : null,
    logs: () => logs,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function percentile(sorted, p) {
  return sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] * 100) / 100 : null;
}

async function measure(svc, name, makeRequest, connections) {
  const run = (duration) =>
    new Promise((resolve, reject) => {
      const times = [];
      const inst = autocannon(
        {
          url: svc.base,
          connections,
          duration,
          headers: svc.headers,
          requests: [{ setupRequest: (req) => ({ ...req, ...makeRequest() }) }],
        },
        (err, result) => (err ? reject(err) : resolve({ result, times })),
      );
      inst.on('response', (_client, _status, _bytes, responseTime) => times.push(responseTime));
    });
  await run(2);
  const { result, times } = await run(DURATION);
  times.sort((a, b) => a - b);
  return {
    scenario: name,
    connections,
    requests: result.requests.total,
    rps: Math.round(result.requests.average),
    p50Ms: percentile(times, 0.5),
    p95Ms: percentile(times, 0.95),
    p99Ms: percentile(times, 0.99),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

(async () => {
  const out = { objects: N, attributesPerObject: 20, builtWith: 'lib/mesh/store.ts commitMeshWrite (mesh rows + change feed)', cpus: os.cpus().length };
  const azurite = new Azurite();
  await azurite.start();
  process.env.AzureWebJobsStorage = azurite.connectionString;
  process.env.Storage__TablePrefix = PREFIX;
  const store = require(path.join(root, 'dist/lib/mesh/store.js'));
  const services = [];
  try {
    const objects = generate(N, CONNECTOR);
    const sampleIds = objects.filter((_, i) => i % 97 === 0).map((o) => o.id);
    let t = Date.now();
    const BATCH = 1000;
    let next = 0;
    const writer = async () => {
      while (next < objects.length) {
        const batch = objects.slice(next, (next += BATCH));
        await store.commitMeshWrite({ upserts: batch, deletes: [] });
      }
    };
    await Promise.all([writer(), writer()]);
    out.seedSeconds = (Date.now() - t) / 1000;
    objects.length = 0;

    out.loadAverageAtStart = os.loadavg().map((x) => Math.round(x * 10) / 10);
    const empty = await startService(azurite, 'meshbenchempty');
    services.push(empty);
    await sleep(2000);
    const emptyRss = rssMb(empty.child.pid);
    await empty.stop();
    services.pop();

    const svc = await startService(azurite, PREFIX);
    services.push(svc);
    await sleep(2000);
    const loadedRss = rssMb(svc.child.pid);
    out.startup = { servingSeconds: svc.servingMs / 1000, readModelLoadSeconds: svc.loadMs / 1000, objectsLoaded: svc.loadedObjects };
    out.memory = { serviceRssEmptyMb: emptyRss, serviceRssLoadedMb: loadedRss, readModelRssMb: loadedRss - emptyRss };

    const pick = (a) => a[Math.floor(Math.random() * a.length)];
    const needles = ['ada.lov', 'hopper.0', '.knuth.01', '00042', 'grace', 'lamarr.09', 'e.t', 'zzz-none'];
    const depts = Array.from({ length: 20 }, (_, i) => `department ${String.fromCharCode(97 + i)}`);
    const mails = ['turing', 'hopper', 'ada', 'knuth.0', '@example'];
    const scenarios = [
      ['list objectType=User, random page', () => ({ method: 'GET', path: `/api/mesh/objects?objectType=User&skip=${Math.floor(Math.random() * 89800)}&take=${pick([50, 200])}` })],
      ['anchor substring search', () => ({ method: 'GET', path: `/api/mesh/objects?search=${encodeURIComponent(pick(needles))}&skip=${pick([0, 50, 1000])}` })],
      [
        'advanced search equals + contains + ispresent',
        () => ({
          method: 'POST',
          path: '/api/mesh/objects/search',
          body: JSON.stringify({
            objectType: 'User',
            criteria: [
              { attributeName: 'department', operator: 'equals', value: pick(depts) },
              { attributeName: 'mail', operator: 'contains', value: pick(mails) },
              { attributeName: 'description', operator: 'ispresent' },
            ],
            skip: pick([0, 50, 500]),
            take: 50,
          }),
        }),
      ],
      ['detail', () => ({ method: 'GET', path: `/api/mesh/objects/${pick(sampleIds)}` })],
    ];
    out.scenarios = [];
    for (const connections of [1, 8]) {
      for (const [name, make] of scenarios) out.scenarios.push(await measure(svc, name, make, connections));
    }

    // Freshness: one object written here through the store, until the service lists it.
    const [fresh] = generate(1, CONNECTOR, 7);
    fresh.anchorValue = `fresh-${Date.now()}`;
    t = Date.now();
    await store.commitMeshWrite({ upserts: [fresh], deletes: [] });
    const committed = Date.now();
    for (;;) {
      const r = await fetch(`${svc.base}/mesh/objects?search=${fresh.anchorValue}`, { headers: svc.headers });
      if ((await r.json()).totalCount === 1) break;
      await sleep(20);
    }
    out.freshness = { commitMs: committed - t, visibleAfterCommitMs: Date.now() - committed };

    // The read model's heap, measured in this process.
    if (global.gc) {
      const { MeshReadModel } = require(path.join(root, 'dist/lib/mesh/readModel.js'));
      const { MeshFeedReader } = require(path.join(root, 'dist/lib/mesh/feed.js'));
      global.gc();
      const before = process.memoryUsage().heapUsed;
      const model = new MeshReadModel();
      t = Date.now();
      await new MeshFeedReader(model).load();
      const loadSeconds = (Date.now() - t) / 1000;
      global.gc();
      out.memory.readModelHeapMb = Math.round((process.memoryUsage().heapUsed - before) / 1e6);
      out.memory.inProcessLoadSeconds = loadSeconds;
      out.memory.objectsInModel = model.size;
      // The same query mix evaluated in this process (no HTTP, no auth, no JSON): the evaluator's own cost.
      const { queryMesh, toListItem, toDetail } = require(path.join(root, 'dist/lib/mesh/query.js'));
      const inProcess = (name, fn) => {
        const times = [];
        for (let i = 0; i < 300; i++) {
          const start = process.hrtime.bigint();
          fn();
          times.push(Number(process.hrtime.bigint() - start) / 1e6);
        }
        times.sort((a, b) => a - b);
        return { scenario: name, runs: times.length, p50Ms: percentile(times, 0.5), p95Ms: percentile(times, 0.95), p99Ms: percentile(times, 0.99) };
      };
      const page = (q) => queryMesh(model, q).items.map((r) => toListItem(model, r));
      out.inProcess = [
        inProcess('list objectType=User, random page', () => page({ objectType: 'User', skip: Math.floor(Math.random() * 89800), take: pick([50, 200]) })),
        inProcess('anchor substring search', () => page({ search: pick(needles), skip: pick([0, 50, 1000]), take: 50 })),
        inProcess('advanced search equals + contains + ispresent', () =>
          page({
            objectType: 'User',
            criteria: [
              { attributeName: 'department', operator: 'equals', value: pick(depts) },
              { attributeName: 'mail', operator: 'contains', value: pick(mails) },
              { attributeName: 'description', operator: 'ispresent' },
            ],
            skip: pick([0, 50, 500]),
            take: 50,
          }),
        ),
        inProcess('detail', () => toDetail(model, model.get(pick(sampleIds)))),
      ];
    }
    out.loadAverageAtEnd = os.loadavg().map((x) => Math.round(x * 10) / 10);
    console.log(JSON.stringify(out, null, 2));
  } finally {
    for (const s of services) await s.stop();
    await azurite.stop();
  }
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
