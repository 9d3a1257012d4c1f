#!/usr/bin/env node
'use strict';
/**
 * Two engine instances on one storage account (issue 21). One in-memory Azurite per scenario; two independent
 * HR sources of N users each (file connectors, the sync bench's rules, other people in each: ids offset by
 * N), full imports of both into an empty mesh:
 * - oneSequential: one instance runs the two imports one after the other;
 * - oneConcurrent: one instance, both triggered together (the engine runs them at once);
 * - twoInstances: two service processes (own data folders, own task hubs) on the same Azurite, each connector
 *   assigned to one of them (PUT /connectors/{id}/instance), both triggered together through instance A.
 * Each reports the wall time (first trigger to last run's end), objects/s (2N / wall), the CPU seconds of each
 * service process and of the Azurite table process, steal, the 1-min load, and the mesh as the API of EACH
 * instance lists it (totalCount, and one object of each source found by anchor), with the seconds the read
 * model of each took to show all 2N after the runs ended. Each data folder has its own development issuer:
 * B is configured to trust A's (Authentication__Jwt__Authority), so one token serves both (`tokenOfAAcceptedByB`).
 *
 * Usage: npm run build && node bench/scale/instances.js [--users 50000] [--scenarios oneSequential,oneConcurrent,twoInstances]
 */
const { mkdtempSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, arg, sleep, cpuSeconds, stealSeconds, peakRssMB, startService, hrSource, writeHrCsv } = require('../support');

const N = arg('users', 50000);
const SCENARIOS = arg('scenarios', 'oneSequential,oneConcurrent,twoInstances').split(',');
const FINAL = (s) => !['Running', 'Queued'].includes(s);
const anchorOf = (k) => `E${String(k).padStart(6, '0')}`;

/** Poll `svc`'s run until it has ended; the run. */
async function waitRun(svc, runId) {
  for (;;) {
    const r = await svc.must(svc.call('GET', `runs/${runId}`), 200);
    if (FINAL(r.status)) return r;
    await sleep(200);
  }
}

/** What `svc`'s API shows of the mesh: totalCount once it reaches 2N (seconds waited), and one object per source. */
async function meshSeen(svc, endedAt) {
  const deadline = Date.now() + 120_000;
  let total;
  for (;;) {
    total = (await svc.must(svc.call('GET', 'mesh/objects?take=1'), 200)).totalCount;
    if (total >= 2 * N || Date.now() > deadline) break;
    await sleep(100);
  }
  const seenAfterSeconds = +((performance.now() - endedAt) / 1000).toFixed(2);
  const found = async (k) =>
    (await svc.must(svc.call('GET', `mesh/objects?search=${anchorOf(k)}&take=5`), 200)).items.some((o) => o.anchorValue === anchorOf(k));
  return { totalCount: total, seenAfterSeconds, source1ObjectFound: await found(7), source2ObjectFound: await found(N + 7) };
}

async function scenario(name) {
  const { Azurite } = require(path.join(ROOT, 'dist/lib/runtime/azurite.js'));
  const azurite = new Azurite();
  await azurite.start();
  const tablePid = azurite.pids[0];
  const dirs = [mkdtempSync(path.join(os.tmpdir(), 'inst-bench-1-')), mkdtempSync(path.join(os.tmpdir(), 'inst-bench-2-'))];
  const services = [];
  try {
    const two = name === 'twoInstances';
    // Every instance on one storage account has the same secrets key (a process with another refuses to start).
    const Secrets__Key = require('node:crypto').randomBytes(32).toString('base64');
    services.push(await startService({ azurite, env: { Engine__InstanceName: 'inst-a', Secrets__Key } }));
    if (two) {
      // B trusts A's development issuer (each data folder has its own): one token for both, as behind a load balancer.
      const { issuer } = JSON.parse(readFileSync(path.join(services[0].dataDir, 'dev-issuer.json'), 'utf8'));
      const trustA = {
        Authentication__Jwt__Enabled: 'true',
        Authentication__Jwt__Authority: issuer,
        Authentication__Jwt__Audience: 'api://identity-mesh-sync',
      };
      services.push(await startService({ azurite, token: services[0].token, env: { Engine__InstanceName: 'inst-b', Secrets__Key, ...trustA } }));
    }
    const [a, b] = services;
    writeHrCsv(dirs[0], N);
    writeHrCsv(dirs[1], N, { offset: N });
    const c1 = (await hrSource(a, dirs[0], {}, { name: 'HR-1' })).conn.id;
    const c2 = (await hrSource(a, dirs[1], {}, { name: 'HR-2', composer: false })).conn.id;
    let crossToken = null;
    if (two) {
      const items = (await a.must(a.call('GET', 'instances'), 200)).items;
      const id = (n) => items.find((i) => i.name === n).id;
      await a.must(a.call('PUT', `connectors/${c1}/instance`, { instanceId: id('inst-a') }), 200);
      await a.must(a.call('PUT', `connectors/${c2}/instance`, { instanceId: id('inst-b') }), 200);
      crossToken = (await b.call('GET', 'instances')).status;
    }
    const cpu0 = { services: services.map((s) => cpuSeconds(s.pid)), azurite: cpuSeconds(tablePid), steal: stealSeconds() };
    const load0 = os.loadavg()[0];
    const t0 = performance.now();
    const trigger = (c) => a.must(a.call('POST', `connectors/${c}/import`, { runType: 'FullImport' }), 202);
    let runs;
    if (name === 'oneSequential') {
      const r1 = await waitRun(a, (await trigger(c1)).runId);
      const r2 = await waitRun(a, (await trigger(c2)).runId);
      runs = [r1, r2];
    } else {
      const started = await Promise.all([trigger(c1), trigger(c2)]);
      runs = await Promise.all(started.map((s) => waitRun(a, s.runId)));
    }
    const endedAt = performance.now();
    const wall = (endedAt - t0) / 1000;
    const used = (now, before) => (now === null || before === null ? null : +(now - before).toFixed(1));
    const cpu = {
      serviceCpuSeconds: services.map((s, i) => used(cpuSeconds(s.pid), cpu0.services[i])),
      azuriteCpuSeconds: used(cpuSeconds(tablePid), cpu0.azurite),
      stealSeconds: used(stealSeconds(), cpu0.steal),
    };
    const mesh = {};
    for (const [i, s] of services.entries()) mesh[i === 0 ? 'instanceA' : 'instanceB'] = await meshSeen(s, endedAt);
    return {
      scenario: name,
      users: 2 * N,
      wallSeconds: +wall.toFixed(2),
      objectsPerSecond: Math.round((2 * N) / wall),
      runs: runs.map((r) => ({
        status: r.status,
        instanceName: r.instanceName,
        seconds: +((Date.parse(r.completedAt) - Date.parse(r.startedAt)) / 1000).toFixed(2),
        objectsCreated: r.stats.objectsCreated,
      })),
      ...cpu,
      peakRssMB: services.map((s) => peakRssMB(s.pid)),
      load: { atStart: load0, atEnd: os.loadavg()[0] },
      mesh,
      ...(crossToken !== null ? { tokenOfAAcceptedByB: crossToken } : {}),
    };
  } finally {
    for (const s of services.reverse()) await s.stop();
    await azurite.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

async function main() {
  const out = {
    machine: `${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB`,
    date: new Date().toISOString(),
    usersPerSource: N,
    scenarios: [],
  };
  for (const s of SCENARIOS) {
    const r = await scenario(s);
    out.scenarios.push(r);
    process.stderr.write(`${JSON.stringify(r)}\n`);
  }
  console.log(JSON.stringify(out, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
