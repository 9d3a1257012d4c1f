#!/usr/bin/env node
'use strict';
/**
 * Sync engine benchmark: N users (15 attributes + a manager reference) in a CSV read by the file connector,
 * a projection rule, a join rule, 3 inbound flow rules and a manager relationship rule, imported through the
 * running service (local runtime, embedded in-memory Azurite) over HTTP. Prints JSON:
 * - fullImportSeconds: full import into an empty mesh (trigger to Completed), and the service's peak RSS;
 * - unchangedReimportSeconds: the same full import again, nothing changed;
 * - delta1000Seconds: a delta import of 1,000 changed rows;
 * - floor: the time the same Azurite takes to batch-insert N entities (100 per transaction, 4 in flight) in
 *   this run, and the ratio of the full import to it (and to inserting the entities the import writes).
 *
 * Usage: npm run build && node bench/sync/sync.js [--users 100000]
 */
const { spawn } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const root = path.resolve(__dirname, '../..');
const { Azurite, freePort } = require(path.join(root, 'dist/lib/runtime/azurite.js'));
const { TableClient } = require('@azure/data-tables');

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}
const N = arg('users', 100000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const HEADER = ['id', 'employeeId', 'givenName', 'sn', 'mail', 'title', 'department', 'company', 'office', 'phone', 'mobile', 'city', 'country', 'costCenter', 'hireDate', 'managerId'];

function row(i, variant = 0) {
  const mgr = i === 0 ? '' : `E${String(Math.floor((i * 7919) % N)).padStart(6, '0')}`;
  return [
    `u${i}`, `E${String(i).padStart(6, '0')}`, `Given${i}`, `Surname${i}${variant ? 'x' : ''}`, `user${i}@example.test`, `Title ${i % 50}`, `Dept ${i % 40}`,
    'Contoso', `Office ${i % 30}`, `+1 555 ${String(i).padStart(7, '0')}`, `+1 666 ${String(i).padStart(7, '0')}`, `City ${i % 100}`, 'US', `CC${i % 200}`, '2020-01-01', mgr === `E${String(i).padStart(6, '0')}` ? '' : mgr,
  ].join(',');
}

function writeUsers(dir, changed = new Set()) {
  const lines = [HEADER.join(',')];
  for (let i = 0; i < N; i++) lines.push(row(i, changed.has(i) ? 1 : 0));
  writeFileSync(path.join(dir, 'users.csv'), lines.join('\n') + '\n');
}

async function peakRss(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return null;
  }
}

async function main() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sync-bench-'));
  const csvDir = mkdtempSync(path.join(os.tmpdir(), 'sync-bench-csv-'));
  const azurite = new Azurite();
  // SYNC_BENCH_CPUPROF=<dir>: V8 CPU profiles of the service and of Azurite (written when they exit).
  const prof = process.env.SYNC_BENCH_CPUPROF;
  const nodeOptions = prof ? `${process.env.NODE_OPTIONS ?? ''} --require ${path.join(__dirname, 'cpuprof.js')}`.trim() : process.env.NODE_OPTIONS;
  const savedOptions = process.env.NODE_OPTIONS;
  if (prof) process.env.NODE_OPTIONS = nodeOptions;
  await azurite.start();
  if (prof) process.env.NODE_OPTIONS = savedOptions ?? '';
  const tablePid = azurite.pids[0];
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(root, 'dist/lib/runtime/cli.js'), 'start', '--app', root, '--port', String(port), '--data-dir', dataDir], {
    env: { ...process.env, ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}), AzureWebJobsStorage: azurite.connectionString, AZURE_FUNCTIONS_ENVIRONMENT: 'Development', Service__DataDir: dataDir, Authentication__Negotiate__Enabled: 'false', Engine__InstanceName: 'bench', LOG_FORMAT: '', SYNC_TRACE: process.env.SYNC_TRACE || '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let logs = '';
  const trace = [];
  const keep = (d) => {
    const text = d.toString();
    logs = (logs + text).slice(-20000);
    if (process.env.SYNC_TRACE) for (const l of text.split('\n')) if (l.includes('[sync]')) trace.push(l);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const base = `http://127.0.0.1:${port}/api`;
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/health`)).status === 200) break;
      } catch {
        // not yet
      }
      if (i > 600) throw new Error('service did not start');
      await sleep(100);
    }
    const info = JSON.parse(readFileSync(path.join(dataDir, 'dev-issuer.json'), 'utf8'));
    const basic = Buffer.from(`${encodeURIComponent(info.clientId)}:${encodeURIComponent(info.clientSecret)}`).toString('base64');
    const tok = await (await fetch(info.tokenEndpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` }, body: 'grant_type=client_credentials&role=Admin' })).json();
    const call = async (method, route, body) => {
      const r = await fetch(`${base}/${route}`, { method, headers: { authorization: `Bearer ${tok.access_token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await r.text();
      return { status: r.status, body: text ? JSON.parse(text) : undefined };
    };
    const must = async (p, status) => {
      const r = await p;
      if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}\n${logs.slice(-6000)}`);
      return r.body;
    };
    writeUsers(csvDir);
    const conn = await must(call('POST', 'connectors', { name: 'HR', type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: csvDir, anchorColumn: 'id' } } }), 201);
    const rule = (b) => must(call('POST', 'rules', { ruleName: `r${Math.random()}`, connectorId: conn.id, ...b }), 201);
    await rule({ ruleType: 'JoinRule', sourceAttribute: 'employeeId', targetAttribute: 'employeeId' });
    await rule({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId' });
    await rule({ ruleType: 'FlowRule', sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 });
    await rule({ ruleType: 'FlowRule', sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50, transformScript: 'source.toUpperCase()' });
    await rule({ ruleType: 'FlowRule', sourceAttribute: 'managerId', targetAttribute: 'managerId', confidence: 50 });
    await rule({ ruleType: 'MeshComposerRule', connectorId: null, relationshipType: 'manager', sourceAttribute: 'managerId', targetAttribute: 'employeeId' });

    const runOnce = async (runType) => {
      const t0 = performance.now();
      const c0 = { service: cpuSeconds(child.pid), azurite: cpuSeconds(tablePid) };
      trace.push(`--- ${runType}`);
      const run = await must(call('POST', `connectors/${conn.id}/import`, { runType }), 202);
      for (;;) {
        const r = await must(call('GET', `runs/${run.runId}`), 200);
        if (!['Running', 'Queued'].includes(r.status)) {
          const cpu = { serviceCpuSeconds: +(cpuSeconds(child.pid) - c0.service).toFixed(1), azuriteCpuSeconds: +(cpuSeconds(tablePid) - c0.azurite).toFixed(1), load: os.loadavg()[0] };
          return { seconds: (performance.now() - t0) / 1000, run: r, cpu };
        }
        await sleep(100);
      }
    };
    const rssBeforeMB = await peakRss(child.pid);
    const full = await runOnce('FullImport');
    const rssAfterFull = await peakRss(child.pid);
    if (prof) for (const pid of [tablePid, child.pid]) process.kill(pid, 'SIGUSR2');
    const again = await runOnce('FullImport');
    const changed = new Set();
    for (let k = 0; changed.size < 1000; k++) changed.add((k * 97) % N);
    await sleep(1100);
    writeUsers(csvDir, changed);
    const delta = await runOnce('DeltaImport');

    // The storage floor: batch-insert N entities of similar size into a scratch table, same Azurite.
    const client = TableClient.fromConnectionString(azurite.connectionString, 'FloorBench', { allowInsecureConnection: true });
    await client.createTable();
    const pad = 'x'.repeat(600);
    const t0 = performance.now();
    const floorCpu0 = cpuSeconds(tablePid);
    const batches = [];
    for (let i = 0; i < N; i += 100) batches.push(i);
    let next = 0;
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < batches.length) {
        const s = batches[next++];
        const actions = [];
        for (let i = s; i < Math.min(N, s + 100); i++) actions.push(['create', { partitionKey: `p${Math.floor(s / 10000)}`, rowKey: String(i).padStart(8, '0'), d: pad }]);
        await client.submitTransaction(actions);
      }
    }));
    const floorSeconds = (performance.now() - t0) / 1000;
    const floorAzuriteCpu = +(cpuSeconds(tablePid) - floorCpu0).toFixed(1);
    const out = {
      users: N,
      fullImport: { seconds: +full.seconds.toFixed(2), status: full.run.status, stats: full.run.stats, ...full.cpu, peakRssMB: rssAfterFull, peakRssBeforeImportMB: rssBeforeMB, targetSeconds: 60, targetRssMB: 512 },
      unchangedReimport: { seconds: +again.seconds.toFixed(2), status: again.run.status, stats: again.run.stats, ...again.cpu, targetSeconds: 10 },
      delta1000: { seconds: +delta.seconds.toFixed(2), status: delta.run.status, stats: delta.run.stats, ...delta.cpu, targetSeconds: 3 },
      floor: { entities: N, seconds: +floorSeconds.toFixed(2), entitiesPerSecond: Math.round(N / floorSeconds), azuriteCpuSeconds: floorAzuriteCpu },
      ratioFullImportToFloor: +(full.seconds / floorSeconds).toFixed(2),
      ratioTarget: 1.5,
      peakRssMB: await peakRss(child.pid),
      loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
    };
    if (process.env.SYNC_TRACE) console.error(trace.join('\n'));
    console.log(JSON.stringify(out, null, 2));
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await azurite.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(csvDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
