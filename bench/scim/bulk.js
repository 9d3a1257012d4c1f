#!/usr/bin/env node
'use strict';
/**
 * SCIM push benchmark: N users (default 10,000) pushed to the SCIM endpoint through Bulk requests of 50, C
 * requests in flight (default 4), into a `scim_inbound` connector with a projection on userName and three flow
 * rules, on the running service (local runtime, embedded Azurite). Every SCIM answer waits for the connector's
 * DeltaImport run, so when the last Bulk request is answered its users are in the mesh; the bench then checks
 * the mesh holds N objects. Prints JSON:
 * - bulk: seconds for all N, users per second, Bulk latency (p50/p95/max), the runs it took (group commit: a run
 *   imports the writes of every request that arrived while the previous run went);
 * - meshObjects: the mesh's totalCount after the push (must be N);
 * - single: latency of one POST /Users (one user, one run) and of the lookup Entra makes before a create
 *   (`userName eq`), each over 20 sequential requests;
 * - the machine's load and the service's peak RSS.
 *
 * Usage: npm run bench:scim [-- --users 10000 --concurrency 4]
 */
const os = require('node:os');
const path = require('node:path');
const { readFileSync } = require('node:fs');
const { arg, peakRssMB, startService } = require('../support');

const N = arg('users', 10000);
const C = arg('concurrency', 4);
const PER = 50;
const CORE = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENT = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

async function operatorToken(dataDir) {
  const info = JSON.parse(readFileSync(path.join(dataDir, 'dev-issuer.json'), 'utf8'));
  const basic = Buffer.from(`${encodeURIComponent(info.clientId)}:${encodeURIComponent(info.clientSecret)}`).toString('base64');
  const res = await fetch(info.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
    body: 'grant_type=client_credentials&role=Operator',
  });
  if (res.status !== 200) throw new Error(`dev issuer token: ${res.status}`);
  return (await res.json()).access_token;
}

const user = (i) => ({
  schemas: [CORE, ENT],
  externalId: `E${i}`,
  userName: `user${i}@contoso.example`,
  name: { givenName: `Given${i}`, familyName: `Family${i}` },
  displayName: `User ${i}`,
  title: 'Engineer',
  active: true,
  emails: [{ value: `user${i}@contoso.example`, type: 'work', primary: true }],
  [ENT]: { employeeNumber: String(i), department: `Dept ${i % 50}` },
});

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return +s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))].toFixed(3);
};

async function main() {
  let svc;
  try {
    svc = await startService({ env: { Scim__Enabled: 'true' } });
    const token = await operatorToken(svc.dataDir);
    const scimUrl = `${svc.base}/scim/v2`;
    const scim = async (method, route, body) => {
      const r = await fetch(`${scimUrl}${route}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      return { status: r.status, body: text ? JSON.parse(text) : undefined };
    };
    const conn = await svc.must(svc.call('POST', 'connectors', { name: 'Entra push', type: 'scim_inbound', config: {} }), 201);
    await svc.must(
      svc.call('POST', 'rules', { ruleName: 'project', ruleType: 'ProjectionRule', connectorId: conn.id, sourceAttribute: 'userName', objectType: 'User' }),
      201,
    );
    for (const a of ['displayName', 'department', 'email']) {
      await svc.must(
        svc.call('POST', 'rules', {
          ruleName: `flow-${a}`,
          ruleType: 'FlowRule',
          connectorId: conn.id,
          sourceAttribute: a,
          targetAttribute: a,
          confidence: 50,
        }),
        201,
      );
    }

    // Bulk: N users, PER per request, C requests in flight.
    const batches = [];
    for (let i = 0; i < N; i += PER) batches.push(Array.from({ length: Math.min(PER, N - i) }, (_, k) => i + k));
    const latencies = [];
    let next = 0;
    const t0 = performance.now();
    const worker = async () => {
      while (next < batches.length) {
        const b = batches[next++];
        const t = performance.now();
        const r = await scim('POST', '/Bulk', {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'],
          Operations: b.map((i) => ({ method: 'POST', bulkId: `u${i}`, path: '/Users', data: user(i) })),
        });
        latencies.push((performance.now() - t) / 1000);
        if (r.status !== 200) throw new Error(`Bulk: ${r.status} ${JSON.stringify(r.body)}\n${svc.logs().slice(-4000)}`);
        const failed = r.body.Operations.filter((o) => o.status !== '201');
        if (failed.length) throw new Error(`Bulk operations failed: ${JSON.stringify(failed.slice(0, 3))}`);
      }
    };
    await Promise.all(Array.from({ length: C }, worker));
    const bulkSeconds = (performance.now() - t0) / 1000;
    const mesh = await svc.must(svc.call('GET', 'mesh/objects?take=1'), 200);
    const runs = await svc.must(svc.call('GET', `runs?connectorId=${conn.id}&take=100`), 200);

    // One user at a time: each POST is one run; the lookup before a create is an index read.
    const single = [];
    const lookup = [];
    for (let i = 0; i < 20; i++) {
      let t = performance.now();
      const r = await scim('POST', '/Users', user(N + i));
      single.push((performance.now() - t) / 1000);
      if (r.status !== 201) throw new Error(`POST /Users: ${r.status}`);
      t = performance.now();
      await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "user${i}@contoso.example"`)}`);
      lookup.push((performance.now() - t) / 1000);
    }

    console.log(
      JSON.stringify(
        {
          users: N,
          bulk: {
            requests: batches.length,
            operationsPerRequest: PER,
            concurrency: C,
            seconds: +bulkSeconds.toFixed(2),
            usersPerSecond: +(N / bulkSeconds).toFixed(1),
            latencySeconds: { p50: pct(latencies, 50), p95: pct(latencies, 95), max: pct(latencies, 100) },
            runs: runs.totalCount,
            runStatuses: [...new Set(runs.items.map((r) => r.status))],
          },
          meshObjects: mesh.totalCount,
          single: {
            postUserSeconds: { p50: pct(single, 50), p95: pct(single, 95) },
            lookupByUserNameSeconds: { p50: pct(lookup, 50), p95: pct(lookup, 95) },
          },
          peakRssMB: peakRssMB(svc.pid),
          cpus: os.cpus().length,
          loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
          date: new Date().toISOString(),
        },
        null,
        2,
      ),
    );
  } finally {
    await svc?.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
