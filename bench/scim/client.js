#!/usr/bin/env node
'use strict';
/**
 * SCIM client connector benchmark: the `scim` connector (lib/connectors/scim) against the reference SCIM
 * server of the tests (SCIMMY on express, in memory, in a child process: bench/scim/referenceServer.js), over
 * HTTP on 127.0.0.1. N users (default 1,000):
 * - addOneByOne: N adds, one POST each;
 * - fullImport: every user read back, pages of 100;
 * - updatePatch: N updates (department and title), one PATCH each;
 * - deltaNothingChanged: a delta import from the full import's watermark (the overlap lists every user again;
 *   none is reported);
 * - addBulk: N more adds through Bulk requests of 50.
 * Each step: wall seconds, the client's CPU seconds, the server's CPU seconds, requests sent. Prints JSON with
 * the machine's load. Transpiles the TypeScript sources on the fly (no build needed).
 *
 * Usage: npm run bench:scim:client [-- --users 1000]
 */
require('../ldap/ts-register');
const os = require('node:os');
const path = require('node:path');
const { fork } = require('node:child_process');
const { arg } = require('../support');
const { ScimConnector } = require('../../lib/connectors/scim');

const N = arg('users', 1000);

function startServer() {
  const child = fork(path.join(__dirname, 'referenceServer.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`reference server exited (${code})`)));
    child.once('message', (m) => resolve({ child, ...m }));
  });
}

const ask = (child) =>
  new Promise((resolve) => {
    child.once('message', resolve);
    child.send('cpu');
  });

const user = (i) => ({
  kind: 'add',
  objectType: 'User',
  attributes: {
    userName: `user${i}@contoso.example`,
    givenName: `Given${i}`,
    familyName: `Family${i}`,
    displayName: `Given${i} Family${i}`,
    email: `user${i}@contoso.example`,
    active: true,
    externalId: `E${i}`,
    employeeNumber: String(i),
    department: `Dept ${i % 50}`,
  },
});

async function main() {
  const server = await startServer();
  const steps = {};
  try {
    const make = (extra = {}) =>
      new ScimConnector({
        baseUrl: server.baseUrl,
        allowHttp: true,
        auth: { type: 'bearer', token: server.token },
        resourceTypes: ['User'],
        pageSize: 100,
        ...extra,
      });
    const step = async (name, c, fn) => {
      const before = await ask(server.child);
      const cpu0 = process.cpuUsage();
      const req0 = c.client.requests;
      const t0 = process.hrtime.bigint();
      const out = await fn();
      const wall = Number(process.hrtime.bigint() - t0) / 1e9;
      const cpu = process.cpuUsage(cpu0);
      const after = await ask(server.child);
      steps[name] = {
        wallSeconds: +wall.toFixed(3),
        clientCpuSeconds: +((cpu.user + cpu.system) / 1e6).toFixed(3),
        serverCpuSeconds: +(after.cpuSeconds - before.cpuSeconds).toFixed(3),
        requests: c.client.requests - req0,
        perSecond: +(N / wall).toFixed(1),
        ...out,
      };
    };

    const c = make();
    const anchors = [];
    await step('addOneByOne', c, async () => {
      for (let i = 0; i < N; i++) {
        const r = await c.export(user(i));
        if (r.status !== 'success') throw new Error(JSON.stringify(r));
        anchors.push(r.anchor);
      }
      return {};
    });
    let watermark;
    await step('fullImport', c, async () => {
      let objects = 0;
      for await (const p of c.fullImport({ pageSize: 100 })) {
        objects += p.objects.length;
        if (p.cursor === null) watermark = p.watermark;
      }
      return { objects };
    });
    await step('updatePatch', c, async () => {
      for (const a of anchors) {
        const r = await c.export({ kind: 'update', anchor: a, objectType: 'User', attributes: { department: 'Moved', title: 'Engineer' } });
        if (r.status !== 'success') throw new Error(JSON.stringify(r));
      }
      return {};
    });
    await step('deltaNothingChanged', c, async () => {
      // The updates above are newer than the watermark: a fresh full import first, then the delta.
      for await (const p of c.fullImport({ pageSize: 100 })) if (p.cursor === null) watermark = p.watermark;
      let changes = 0;
      const d0 = c.client.requests;
      const t = process.hrtime.bigint();
      for await (const p of c.deltaImport(watermark, { pageSize: 100 })) changes += p.changes.length;
      return { changes, deltaRequests: c.client.requests - d0, deltaWallSeconds: +(Number(process.hrtime.bigint() - t) / 1e9).toFixed(3) };
    });
    const b = make({ useBulk: true, bulkMaxOperations: 50 });
    await step('addBulk', b, async () => {
      const changes = Array.from({ length: N }, (_, i) => user(N + i));
      let ok = 0;
      for (let k = 0; k < changes.length; k += 500) ok += (await b.exportBatch(changes.slice(k, k + 500))).filter((r) => r.status === 'success').length;
      return { succeeded: ok };
    });
    const final = await ask(server.child);
    console.log(
      JSON.stringify(
        {
          bench: 'scim client connector against SCIMMY (reference server, in memory)',
          users: N,
          steps,
          serverUsers: final.users,
          machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadavg: os.loadavg().map((x) => +x.toFixed(2)), node: process.version },
          date: new Date().toISOString(),
        },
        null,
        2,
      ),
    );
  } finally {
    server.child.send('stop');
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
