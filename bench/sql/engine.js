#!/usr/bin/env node
'use strict';
/**
 * The SQL connector end to end through the sync engine: N rows of hr_people in a private PostgreSQL, a `sql`
 * connector created over HTTP on the running service (local runtime, in-memory Azurite), a projection rule,
 * flow rules and a manager relationship. Prints JSON: the full import into an empty mesh (trigger to Completed,
 * target <= 60 s), a delta import of 1,000 changed rows (target <= 3 s), the service's peak RSS, and beside them
 * a plain pg-cursor read of the same rows in the same run.
 *
 * The service preloads lib/connectors/sql (NODE_OPTIONS=--require) until the app imports it itself.
 * Usage: npm run build && node bench/sql/engine.js [--rows 100000]
 */
const { spawn } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const root = path.resolve(__dirname, '../..');
const { Azurite, freePort } = require(path.join(root, 'dist/lib/runtime/azurite.js'));
const { QUERY, startBenchPostgres, connectorConfig, change1000 } = require('./pg');

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}
const N = arg('rows', 100000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function peakRss(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

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

async function main() {
  const pg = await startBenchPostgres(N);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sql-engine-bench-'));
  const azurite = new Azurite();
  await azurite.start();
  const port = await freePort();
  const preload = path.join(root, 'dist/lib/connectors/sql/index.js');
  const child = spawn(process.execPath, [path.join(root, 'dist/lib/runtime/cli.js'), 'start', '--app', root, '--port', String(port), '--data-dir', dataDir], {
    env: {
      ...process.env,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS || ''} --require ${preload}`.trim(),
      AzureWebJobsStorage: azurite.connectionString,
      AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
      Service__DataDir: dataDir,
      Authentication__Negotiate__Enabled: 'false',
      Engine__InstanceName: 'bench',
      LOG_FORMAT: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let logs = '';
  const keep = (d) => (logs = (logs + d.toString()).slice(-20000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const base = `http://127.0.0.1:${port}/api`;
  // Interrupted (timeout, Ctrl-C): stop what this script started before exiting.
  const onSignal = () => {
    child.kill('SIGKILL');
    void Promise.allSettled([azurite.stop(), pg.stop()]).then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`service exited:\n${logs.slice(-4000)}`);
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
    const conn = await must(call('POST', 'connectors', { name: 'HR database', type: 'sql', config: connectorConfig(pg) }), 201);
    const rule = (b) => must(call('POST', 'rules', { ruleName: `r${Math.random()}`, connectorId: conn.id, ...b }), 201);
    await rule({ ruleType: 'ProjectionRule', sourceAttribute: 'employee_id' });
    for (const [s, t] of [['employee_id', 'employeeId'], ['first_name', 'givenName'], ['last_name', 'sn'], ['email', 'mail'], ['manager_employee_id', 'managerId']]) {
      await rule({ ruleType: 'FlowRule', sourceAttribute: s, targetAttribute: t, confidence: 50 });
    }
    await rule({ ruleType: 'MeshComposerRule', connectorId: null, relationshipType: 'manager', sourceAttribute: 'managerId', targetAttribute: 'employeeId' });

    const runOnce = async (runType) => {
      const t0 = performance.now();
      const run = await must(call('POST', `connectors/${conn.id}/import`, { runType }), 202);
      for (;;) {
        const r = await must(call('GET', `runs/${run.runId}`), 200);
        if (!['Running', 'Queued'].includes(r.status)) return { seconds: (performance.now() - t0) / 1000, run: r };
        await sleep(100);
      }
    };
    const plain = await plainRead(pg);
    console.error(`plain read ${plain.seconds} s; full import through the engine...`);
    const full = await runOnce('FullImport');
    console.error(`full import ${full.seconds.toFixed(1)} s (${full.run.status}); delta...`);
    const rssAfterFull = peakRss(child.pid);
    await change1000(pg.admin, N);
    const delta = await runOnce('DeltaImport');
    console.log(
      JSON.stringify(
        {
          rows: N,
          plainCursorRead: plain,
          fullImport: { seconds: +full.seconds.toFixed(2), status: full.run.status, stats: full.run.stats, targetSeconds: 60, servicePeakRssMB: rssAfterFull },
          delta1000: { seconds: +delta.seconds.toFixed(2), status: delta.run.status, stats: delta.run.stats, targetSeconds: 3 },
          ratioFullImportToPlainRead: +(full.seconds / plain.seconds).toFixed(1),
          servicePeakRssMB: peakRss(child.pid),
        },
        null,
        2,
      ),
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await azurite.stop();
    await pg.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
