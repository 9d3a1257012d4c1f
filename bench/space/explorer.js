#!/usr/bin/env node
'use strict';
/**
 * Connector space explorer benchmark (issue 17). A connector space of N objects (default 100,000) is written
 * straight into the service's Azurite (the engine's own repository, lib/sync/space/connectorSpace.ts, in pages of
 * 1,000: an import would take minutes and is not what is measured), with the states an explorer filters on:
 * 70 % joined, 30 % disconnectors, 5 % awaiting confirmation, 1 % pending export in error, and 50 staged adds.
 * Then, over HTTP as a Viewer, sequential requests (one connection), each scenario after a warm-up:
 * - first: the first list request of the process (it loads the connector's index);
 * - a page (take 50) at a random skip for no filter and for each state filter; a search by substring of the
 *   anchor or dn (a needle that matches a few and one that matches none); a detail by an id the list gave.
 * Prints JSON: per scenario requests, p50/p95/p99/max (ms), the service's RSS, machine and load.
 *
 * Usage: npm run bench:space -- [--objects 100000] [--requests 200]
 */
const os = require('node:os');
const path = require('node:path');
const { ROOT: root, arg, rssMB } = require('../support');
const { startService } = require('../support');

const N = arg('objects', 100000);
const REQUESTS = arg('requests', 200);
const STAGED = 50;

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return +s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))].toFixed(2);
};

async function main() {
  const s = await startService();
  try {
    const conn = await s.must(
      s.call('POST', 'connectors', {
        name: 'Directory',
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: os.tmpdir(), anchorColumn: 'id' } },
      }),
      201,
    );
    const connectorId = conn.id;
    process.env.AzureWebJobsStorage = s.azurite.connectionString;
    const { writeCsObjects } = require(path.join(root, 'dist/lib/sync/space/connectorSpace.js'));
    const { writeStagedAdds } = require(path.join(root, 'dist/lib/sync/export/stagedAdds.js'));
    const { stagedCsObjectId } = require(path.join(root, 'dist/lib/sync/space/csIds.js'));
    const { randomUUID } = require('node:crypto');
    const now = new Date().toISOString();
    const t0 = performance.now();
    for (let start = 0; start < N; start += 1000) {
      const page = [];
      for (let i = start; i < Math.min(N, start + 1000); i++) {
        const key = `u${String(i).padStart(6, '0')}`;
        const o = {
          anchor: randomUUID(),
          objectType: i % 10 === 9 ? 'Group' : 'User',
          attributes: { uid: key, cn: `Person ${i}`, sn: `Surname${i}`, mail: `${key}@example.org`, departmentNumber: `Dept${i % 40}` },
          hash: 'h' + i,
          rulesHash: 'r',
          meshId: i % 10 < 7 ? randomUUID() : null,
          dn: `uid=${key},ou=Dept${i % 40},dc=example,dc=org`,
          updatedOn: now,
        };
        if (i % 20 === 3) o.exported = { departmentNumber: `Dept${(i + 1) % 40}` };
        if (i % 100 === 5) {
          o.pendingExport = { kind: 'update', attributes: { departmentNumber: 'Sales' }, stagedOn: now };
          o.exportError = { message: 'Insufficient access', runId: randomUUID(), occurredOn: now, attempts: 1 + (i % 5) };
        }
        page.push(o);
      }
      await writeCsObjects(connectorId, page);
    }
    const staged = Array.from({ length: STAGED }, () => {
      const meshId = randomUUID();
      return {
        csObjectId: stagedCsObjectId(connectorId, meshId),
        meshId,
        objectType: 'User',
        pendingExport: { kind: 'add', attributes: { uid: 'x', cn: 'x' }, stagedOn: now },
        exportError: { message: 'Already exists', runId: randomUUID(), occurredOn: now, attempts: 1 },
        updatedOn: now,
      };
    });
    await writeStagedAdds(connectorId, staged);
    const writeSeconds = +((performance.now() - t0) / 1000).toFixed(1);

    const viewer = await viewerToken(s);
    const get = async (route) => {
      const t = performance.now();
      const r = await fetch(`${s.base}/${route}`, { headers: { authorization: `Bearer ${viewer}` } });
      const body = await r.json();
      if (r.status !== 200) throw new Error(`${route}: ${r.status} ${JSON.stringify(body)}`);
      return { ms: performance.now() - t, body };
    };
    const base = `connectors/${connectorId}/space`;
    const first = await get(`${base}?take=50`);
    if (first.body.totalCount !== N + STAGED) throw new Error(`totalCount ${first.body.totalCount}`);

    const counts = {};
    const scenarios = {};
    const run = async (name, route) => {
      for (let i = 0; i < 20; i++) await route(); // warm-up
      const times = [];
      let last;
      for (let i = 0; i < REQUESTS; i++) {
        const r = await get(await route());
        times.push(r.ms);
        last = r.body;
      }
      counts[name] = last.totalCount;
      scenarios[name] = { requests: REQUESTS, p50: pct(times, 50), p95: pct(times, 95), p99: pct(times, 99), max: pct(times, 100) };
    };
    const randomSkip = async (q) => {
      const total = (await get(`${base}?take=0${q}`)).body.totalCount;
      return () => `${base}?take=50&skip=${Math.floor(Math.random() * Math.max(1, total - 50))}${q}`;
    };
    for (const state of ['', 'joined', 'disconnector', 'pendingExport', 'awaitingConfirmation', 'error']) {
      const next = await randomSkip(state ? `&state=${state}` : '');
      await run(state ? `state=${state}` : 'all', async () => next());
    }
    await run('search (a few)', async () => `${base}?search=${encodeURIComponent(`UID=U00${Math.floor(Math.random() * 10)}12`)}`);
    await run('search (none)', async () => `${base}?search=zzz-none`);
    await run('search + state=error', async () => `${base}?state=error&search=ou%3Ddept${Math.random() < 0.5 ? 5 : 25},`);
    const ids = (await get(`${base}?take=200&skip=5000`)).body.items.map((i) => i.csObjectId);
    await run('detail', async () => `${base}/${ids[Math.floor(Math.random() * ids.length)]}`);
    console.log(
      JSON.stringify(
        {
          objects: N,
          staged: STAGED,
          date: new Date().toISOString(),
          machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memoryGB: Math.round(os.totalmem() / 1e9), node: process.version },
          loadAvg: os.loadavg().map((x) => +x.toFixed(2)),
          setup: { writeSeconds },
          firstRequestMs: +first.ms.toFixed(0),
          serviceRssMB: rssMB(s.pid),
          counts,
          scenarios,
        },
        null,
        2,
      ),
    );
  } finally {
    await s.stop();
  }
}

/** A Viewer token from the dev issuer the service wrote into its data folder. */
async function viewerToken(s) {
  const info = JSON.parse(require('node:fs').readFileSync(path.join(s.dataDir, 'dev-issuer.json'), 'utf8'));
  const basic = Buffer.from(`${encodeURIComponent(info.clientId)}:${encodeURIComponent(info.clientSecret)}`).toString('base64');
  const res = await fetch(info.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
    body: 'grant_type=client_credentials&role=Viewer',
  });
  return (await res.json()).access_token;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
