#!/usr/bin/env node
'use strict';
/**
 * Unique value generation (docs/unique-values.md), two measures:
 *
 * 1. Cost: a provisioning export of N new people (default 20,000) to a file target, without and with a unique
 *    rule on the same target design. Two file targets with the same outbound flows (employeeId, givenName, sn,
 *    mail, a login); on the second the login is a `unique` rule (candidates: first initial + surname, first
 *    name.surname, initial + surname + counter; scope connector), on the first a plain transformScript of the
 *    first candidate. Exports in the order plain, unique, unique, plain (ABBA, each to a fresh target), so a
 *    warm-up or a drift of the machine's load weighs on both alike; the cost is the unique exports' mean over
 *    the plain exports' mean, minus 1 (goal: at most 10 %). The names of the cost run are distinct (every first
 *    candidate is free: one reservation per person, the common case).
 * 2. The figure: H hires (default 500) with colliding names (20 first names x 10 surnames) provisioned
 *    into two slapd directories whose uid rules share a pool (scope targets), by two exports started at once;
 *    every uid read back with ldapsearch must be distinct, and each run Completed with no error.
 *
 * 3. Projection time (--projection N, default the --users count; 0: skipped): full imports of N new people from a
 *    fresh HR file each, with a computed mesh attribute `login` (a MeshComposerRule): a plain transformScript of
 *    the first candidate, or `unique` with the three candidates (scope mesh), in the order plain, unique, unique,
 *    plain (the other rule deleted before each import; names distinct, so each person reserves its first
 *    candidate). Cost measured as for the exports.
 *
 * The machine these run on may be shared: besides wall seconds, each export's CPU seconds (the service and the
 * storage process) and its storage requests (a counting proxy in front of the table endpoint) are measured, and
 * their costs computed the same way.
 *
 * Prints JSON: per export its seconds, objects/s and stats; the cost ratio and whether it meets the goal; the
 * collision run's seconds, distinct uids, and how many hires needed a later candidate.
 *
 * Usage: npm run bench:unique [-- --users 20000 --hires 500]
 */
require('../ldap/ts-register');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSlapd } = require('../../test/support/slapd');
const { arg, onInterrupt, peakRssMB, startService } = require('../support');

const N = arg('users', 20000);
const HIRES = arg('hires', 500);
const PROJECTION = arg('projection', N);
const GOAL = 0.1;
const r2 = (x) => Math.round(x * 100) / 100;

const INITIAL = 'object.givenName.substring(0, 1).toLowerCase() + object.sn.toLowerCase()';
const FULL = 'object.givenName.toLowerCase() + "." + object.sn.toLowerCase()';
const COUNTED = 'object.givenName.substring(0, 1).toLowerCase() + object.sn.toLowerCase() + counter';
const GIVEN = [
  'John',
  'Jane',
  'Jim',
  'Joan',
  'Jake',
  'Jill',
  'Jack',
  'Julia',
  'Joe',
  'June',
  'Sam',
  'Sara',
  'Sean',
  'Sofia',
  'Saul',
  'Sue',
  'Seth',
  'Sian',
  'Sol',
  'Suki',
];
const SURNAMES = ['Smith', 'Stone', 'Shaw', 'Scott', 'Stewart', 'Simmons', 'Sharp', 'Spencer', 'Stevens', 'Sutton'];

function writeCsv(dir, rows) {
  const header = ['id', 'employeeId', 'givenName', 'sn', 'mail', 'department'];
  const esc = (v) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  fs.writeFileSync(path.join(dir, 'hr.csv'), [header.join(','), ...rows.map((r) => header.map((h) => esc(String(r[h] ?? ''))).join(','))].join('\n') + '\n');
}

async function main() {
  const stops = [];
  let svc;
  let slapd;
  try {
    svc = await startService({ countRequests: true });
    stops.push(onInterrupt(() => svc.stop()));
    const { call, must } = svc;
    const connector = async (body) => (await must(call('POST', 'connectors', body), 201)).id;
    const rule = (body) => must(call('POST', 'rules', { ruleName: `r${Math.random()}`, ...body }), 201);

    // 1. Cost.
    const hrDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-unique-hr-'));
    writeCsv(
      hrDir,
      Array.from({ length: N }, (_, i) => ({
        id: `u${i}`,
        employeeId: `E${String(i).padStart(6, '0')}`,
        givenName: `Given${i}`,
        sn: `Surname${i}`,
        mail: `user${i}@example.test`,
        department: `Dept ${i % 40}`,
      })),
    );
    const HR = await connector({
      name: 'HR',
      type: 'custom',
      config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'id' } },
    });
    await rule({ ruleType: 'ProjectionRule', connectorId: HR, sourceAttribute: 'employeeId' });
    for (const a of ['employeeId', 'givenName', 'sn', 'mail', 'department'])
      await rule({ ruleType: 'FlowRule', connectorId: HR, sourceAttribute: a, targetAttribute: a, confidence: 50 });
    console.error(`HR full import of ${N}...`);
    const imp = await svc.runImport(HR, 'FullImport');
    if (imp.run.status !== 'Completed') throw new Error(`HR import ${imp.run.status}`);

    const target = async (name, unique) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-unique-out-'));
      const id = await connector({
        name,
        type: 'custom',
        config: {
          implementation: 'file',
          objectType: 'User',
          settings: { path: dir, anchorColumn: 'employeeId' },
          deletionThreshold: { objects: N, percent: 100 },
        },
      });
      const out = (sourceAttribute, targetAttribute, extra = {}) =>
        rule({ ruleType: 'FlowRule', connectorId: id, direction: 'outbound', sourceAttribute, targetAttribute, ...extra });
      for (const a of ['employeeId', 'givenName', 'sn', 'mail', 'department']) await out(a, a);
      if (unique) await out('sn', 'login', { unique: { candidates: [INITIAL, FULL, COUNTED] } });
      else await out('sn', 'login', { transformScript: INITIAL });
      return id;
    };
    const exportOf = async (id, kind) => {
      svc.storageRequests();
      const r = await svc.runExport(id);
      const storageRequests = svc.storageRequests();
      const cpuSeconds = r2((r.cpu.serviceCpuSeconds ?? 0) + (r.cpu.azuriteCpuSeconds ?? 0));
      const x = {
        kind,
        seconds: r2(r.seconds),
        objectsPerSecond: Math.round(N / r.seconds),
        status: r.run.status,
        stats: r.run.stats,
        cpu: r.cpu,
        cpuSeconds,
        storageRequests,
      };
      console.error(`${kind} export ${x.seconds} s (${x.status})`);
      if (r.run.status !== 'Completed') x.firstErrors = (r.run.errors ?? []).slice(0, 3);
      return x;
    };
    const order = ['plain', 'unique', 'unique', 'plain'];
    const exports = [];
    for (const [k, kind] of order.entries()) exports.push(await exportOf(await target(`${kind} ${k}`, kind === 'unique'), kind));
    const mean = (kind, f = (e) => e.seconds) => exports.filter((e) => e.kind === kind).reduce((s, e) => s + f(e), 0) / 2;
    const cost = mean('unique') / mean('plain') - 1;
    // The machine is shared: CPU seconds (service + storage) and storage requests do not wait on other people's work.
    const cpuCost = mean('unique', (e) => e.cpuSeconds) / mean('plain', (e) => e.cpuSeconds) - 1;
    const requests = (e) => e.storageRequests.reads + e.storageRequests.writes;
    const requestCost = mean('unique', requests) / mean('plain', requests) - 1;

    // 3. Projection time: a computed attribute, plain or unique, over imports of new people.
    const projection = PROJECTION ? await projectionCost(svc, connector, rule) : undefined;

    // 2. The figure: H colliding hires, two directories sharing a pool, two exports at once.
    if (!HIRES) {
      console.log(
        JSON.stringify(
          {
            bench: 'unique',
            date: new Date().toISOString(),
            cost: { users: N, exports, cost: r2(cost), cpuCost: r2(cpuCost), requestCost: r2(requestCost) },
            projection,
          },
          null,
          2,
        ),
      );
      return;
    }
    slapd = await startSlapd();
    stops.push(onInterrupt(() => slapd.stop()));
    const hires = Array.from({ length: HIRES }, (_, i) => ({
      id: `h${i}`,
      employeeId: `H${String(i).padStart(5, '0')}`,
      givenName: GIVEN[i % GIVEN.length],
      sn: SURNAMES[Math.floor(i / GIVEN.length) % SURNAMES.length],
      department: i % 2 ? 'B' : 'A',
    }));
    const hiresDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-unique-hires-'));
    writeCsv(hiresDir, hires);
    const HIRED = await connector({
      name: 'Hires',
      type: 'custom',
      config: { implementation: 'file', objectType: 'User', settings: { path: hiresDir, anchorColumn: 'id' } },
    });
    await rule({ ruleType: 'ProjectionRule', connectorId: HIRED, sourceAttribute: 'employeeId' });
    for (const a of ['employeeId', 'givenName', 'sn', 'department'])
      await rule({ ruleType: 'FlowRule', connectorId: HIRED, sourceAttribute: a, targetAttribute: a, confidence: 60 });
    const { Client } = require('ldapts');
    const admin = new Client({ url: `ldap://127.0.0.1:${slapd.port}` });
    await admin.bind(slapd.rootDN, slapd.rootPassword);
    const dirs = [];
    for (const d of ['A', 'B']) {
      const base = `ou=bench${d},${slapd.suffix}`;
      await admin.add(base, { objectClass: 'organizationalUnit', ou: `bench${d}` });
      dirs.push({
        base,
        id: await connector({
          name: `Directory ${d}`,
          type: 'ldap',
          config: {
            host: '127.0.0.1',
            port: slapd.ldapsPort,
            security: 'ldaps',
            caCertificate: slapd.caCertificate,
            bindDN: slapd.rootDN,
            bindPassword: slapd.rootPassword,
            baseDN: base,
            exportDnTemplate: '"uid=" + dnEscape(source.uid) + "," + baseDN',
            provisioningCondition: `source.department == "${d}"`,
          },
        }),
      });
    }
    const connectorIds = dirs.map((d) => d.id);
    for (const d of dirs) {
      const out = (sourceAttribute, targetAttribute, extra = {}) =>
        rule({ ruleType: 'FlowRule', connectorId: d.id, direction: 'outbound', sourceAttribute, targetAttribute, ...extra });
      await out('sn', 'uid', { unique: { candidates: [INITIAL, FULL, COUNTED], scope: 'targets', connectorIds } });
      await out('employeeId', 'employeeNumber');
      await out('sn', 'sn');
      await out('givenName', 'cn', { transformScript: 'object.givenName + " " + object.sn' });
    }
    const hiredImport = await svc.runImport(HIRED, 'FullImport');
    if (hiredImport.run.status !== 'Completed') throw new Error(`Hires import ${hiredImport.run.status}`);
    console.error(`${HIRES} colliding hires into two directories at once...`);
    const t0 = performance.now();
    const runs = await Promise.all(dirs.map((d) => svc.runExport(d.id)));
    const seconds = (performance.now() - t0) / 1000;
    const uids = [];
    for (const d of dirs)
      for (const e of (await admin.search(d.base, { scope: 'one', filter: '(objectClass=inetOrgPerson)', attributes: ['uid', 'cn'], paged: { pageSize: 500 } }))
        .searchEntries)
        uids.push({ uid: String(e.uid), initial: String(e.cn)[0].toLowerCase() + String(e.cn).split(' ')[1].toLowerCase() });
    await admin.unbind();
    const collisions = {
      hires: HIRES,
      seconds: r2(seconds),
      runs: runs.map((r) => ({ status: r.run.status, stats: r.run.stats, seconds: r2(r.seconds) })),
      entries: uids.length,
      distinctUids: new Set(uids.map((u) => u.uid.toLowerCase())).size,
      firstCandidate: uids.filter((u) => u.uid === u.initial).length,
      laterCandidate: uids.filter((u) => u.uid !== u.initial).length,
    };
    collisions.ok = collisions.entries === HIRES && collisions.distinctUids === HIRES && runs.every((r) => r.run.status === 'Completed');

    const result = {
      bench: 'unique',
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memGB: Math.round(os.totalmem() / 2 ** 30), loadAtEnd: os.loadavg().map(r2) },
      date: new Date().toISOString(),
      cost: {
        users: N,
        target: 'file (custom implementation file), one CSV per target',
        order: order.join(', '),
        exports,
        plainMeanSeconds: r2(mean('plain')),
        uniqueMeanSeconds: r2(mean('unique')),
        cost: r2(cost),
        plainMeanCpuSeconds: r2(mean('plain', (e) => e.cpuSeconds)),
        uniqueMeanCpuSeconds: r2(mean('unique', (e) => e.cpuSeconds)),
        cpuCost: r2(cpuCost),
        plainMeanStorageRequests: Math.round(mean('plain', requests)),
        uniqueMeanStorageRequests: Math.round(mean('unique', requests)),
        requestCost: r2(requestCost),
        goal: GOAL,
        met: cost <= GOAL && exports.every((e) => e.status === 'Completed'),
        cpuMet: cpuCost <= GOAL && exports.every((e) => e.status === 'Completed'),
      },
      collisions,
      projection,
      servicePeakRssMB: peakRssMB(svc.pid),
    };
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await svc?.stop().catch(() => undefined);
    await slapd?.stop().catch(() => undefined);
    for (const s of stops) s?.();
  }
}

/**
 * Imports of PROJECTION new people each (a fresh HR file and connector), with the mesh attribute `login` computed
 * by a plain MeshComposerRule (the first candidate's script) or a unique one (three candidates, scope mesh), in
 * the order plain, unique, unique, plain; only the step's rule exists during its import.
 */
async function projectionCost(svc, connector, rule) {
  const { call, must } = svc;
  const steps = ['plain', 'unique', 'unique', 'plain'];
  const imports = [];
  for (const [k, kind] of steps.entries()) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-unique-proj-'));
    writeCsv(
      dir,
      Array.from({ length: PROJECTION }, (_, i) => ({
        id: `p${k}-${i}`,
        employeeId: `P${k}${String(i).padStart(6, '0')}`,
        givenName: `Given${k}x${i}`,
        sn: `Surname${k}x${i}`,
        mail: `p${k}.${i}@example.test`,
        department: `Dept ${i % 40}`,
      })),
    );
    const hr = await connector({
      name: `HR projection ${k}`,
      type: 'custom',
      config: { implementation: 'file', objectType: 'User', settings: { path: dir, anchorColumn: 'id' } },
    });
    await rule({ ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employeeId' });
    for (const a of ['employeeId', 'givenName', 'sn', 'mail', 'department'])
      await rule({ ruleType: 'FlowRule', connectorId: hr, sourceAttribute: a, targetAttribute: a, confidence: 50 });
    const login = await rule(
      kind === 'unique'
        ? { ruleType: 'MeshComposerRule', targetAttribute: 'login', unique: { candidates: [INITIAL, FULL, COUNTED] } }
        : { ruleType: 'MeshComposerRule', targetAttribute: 'login', transformScript: INITIAL },
    );
    svc.storageRequests();
    console.error(`${kind} projection import of ${PROJECTION}...`);
    const r = await svc.runImport(hr, 'FullImport');
    const storageRequests = svc.storageRequests();
    imports.push({
      kind,
      seconds: r2(r.seconds),
      status: r.run.status,
      stats: r.run.stats,
      cpu: r.cpu,
      cpuSeconds: r2((r.cpu.serviceCpuSeconds ?? 0) + (r.cpu.azuriteCpuSeconds ?? 0)),
      storageRequests,
      ...(r.run.status !== 'Completed' ? { firstErrors: (r.run.errors ?? []).slice(0, 3) } : {}),
    });
    console.error(`${kind} projection import ${r2(r.seconds)} s (${r.run.status})`);
    await must(call('DELETE', `rules/${login.ruleId}`), 204);
  }
  const mean = (kind, f = (e) => e.seconds) => imports.filter((e) => e.kind === kind).reduce((s, e) => s + f(e), 0) / 2;
  const requests = (e) => e.storageRequests.reads + e.storageRequests.writes;
  return {
    users: PROJECTION,
    order: steps.join(', '),
    imports,
    cost: r2(mean('unique') / mean('plain') - 1),
    cpuCost: r2(mean('unique', (e) => e.cpuSeconds) / mean('plain', (e) => e.cpuSeconds) - 1),
    requestCost: r2(mean('unique', requests) / mean('plain', requests) - 1),
  };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
