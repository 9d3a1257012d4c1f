#!/usr/bin/env node
'use strict';
/**
 * A full import of N users from a real Active Directory domain controller (Samba 4's AD DC, the test fixture
 * test/support/samba.ts) through the `active_directory` connector over LDAPS, beside the two floors it cannot
 * beat, measured in the same run on the same machine:
 * - the directory's read: ldapsearch of the same entries and attributes (exactly the list the connector asks
 *   for, which it reports), LDAPS, paged 1000 (to a pipe that only counts entries);
 * - the storage's write: the service's Azurite batch-inserting N entities of similar size (100 per
 *   transaction, 4 in flight, as bench/sync/sync.js measures it).
 * Goal: the full import (trigger to Completed) in at most 1.3x the larger of the two floors.
 *
 * The users are loaded through Samba's own code (test/support/samLoad.py: the DC's sam.ldb opened with the system
 * session, as samba-tool does, so objectGUID, objectSid, USNs and the linked manager attribute are the DC's),
 * about twice as fast as LDAP adds (123–140 s for 20,000 on machine C). User i: CN=u<i>,OU=Bench,<base>, a dozen
 * attributes, manager = user floor(i/10).
 *
 * The DC is loaded once; each of `--runs` rounds starts a fresh service (empty mesh, in-memory Azurite), reads
 * with ldapsearch, imports, and measures the floor. Takes the fixture's machine-wide lock for the whole bench.
 * SYNC_TRACE=1 with BENCH_SERVICE_LOG=<file> writes the engine's per-page step timings to that file;
 * SYNC_BENCH_CPUPROF=<dir> a V8 CPU profile of the service up to the end of each import (bench/sync/cpuprof.js).
 * Each round also reads the entries with the connector alone (no engine, a process of its own): its wall and
 * CPU seconds are what the service's one thread spends on reading.
 *
 * Usage: npm run build && node bench/ldap/adImport.js [--users 20000] [--runs 3] [--page-size <connector pageSize>]
 *   [--service-node-options '<NODE_OPTIONS for the service>'] [--attributes sAMAccountName,sn,...]
 *   [--roots <dir>,<dir>...] [--round-node-options '<opts>|<opts>...'] [--round-attributes '<list>|<list>...']
 * A/B comparisons over one DC load: with --roots, round r runs the service built in roots[(r-1) % n] (another
 * checkout or a copy of the tree with its own dist/, node_modules linked), and with --round-node-options it
 * gets the r-th (mod n) of those NODE_OPTIONS instead of --service-node-options; with --round-attributes the r-th
 * (mod n) connector `attributes` (`*`: every user attribute, the product default; empty: attributesFromRules).
 * Prints JSON.
 */
require('./ts-register');
const { execFile } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');
const { startSambaAd } = require('../../test/support/samba');
const { arg, cpuSeconds, onInterrupt, peakRssMB, startService, storageFloor } = require('../support');
const { countingLdapsearch } = require('./ldapsearch');

const N = arg('users', 20000);
const RUNS = arg('runs', 3);
const PAGE_SIZE = arg('page-size', 0);
/** NODE_OPTIONS for the service (e.g. --max-semi-space-size=64), to try V8 settings. */
const SERVICE_NODE_OPTIONS = arg('service-node-options', '');
/**
 * The connector's `attributes` (comma-separated); default none: `attributesFromRules: true`, the connector reads what its rules use (with the
 * anchor, objectClass and the schema's reference attributes); `*` reads every user attribute. ldapsearch asks for
 * exactly what the connector asked for (the list it reports).
 */
const ATTRIBUTES = arg('attributes', '').split(',').filter(Boolean);
/** `attributes` per round in turn ('|'-separated lists, empty: the default), for A/B rounds over one DC load. */
const ROUND_ATTRIBUTES = process.argv.includes('--round-attributes')
  ? arg('round-attributes', '')
      .split('|')
      .map((x) => x.split(',').filter(Boolean))
  : null;
/** The bench's rules: one projection and seven flows (the same in every round). */
const FLOWS = ['sAMAccountName', 'employeeID', 'givenName', 'sn', 'mail', 'title', 'department'];
/** Service roots, one per round in turn (A/B rounds); default this tree. */
const ROOTS = arg('roots', '').split(',').filter(Boolean);
/** NODE_OPTIONS per round in turn ('|'-separated, may be empty); default --service-node-options every round. */
const ROUND_NODE_OPTIONS = process.argv.includes('--round-node-options') ? arg('round-node-options', '').split('|') : null;
const FILTER = '(|(&(objectClass=user)(!(objectClass=computer)))(objectClass=group))';

/**
 * ldapsearch of the users (LDAPS, paged 1000, every user attribute as the connector asks): seconds and entries.
 * By address: libldap canonicalizes `localhost` to the host name, which the DC certificate does not name.
 */
async function ldapsearch(dc, base, attrs) {
  const c0 = cpuSeconds(dc.pid);
  const args = [
    '-x',
    '-LLL',
    '-H',
    `ldaps://127.0.0.1:${dc.ldapsPort}`,
    '-D',
    dc.adminDN,
    '-w',
    dc.adminPassword,
    '-b',
    base,
    '-E',
    'pr=1000/noprompt',
    FILTER,
    ...attrs,
  ];
  const r = await countingLdapsearch(args, { LDAPTLS_CACERT: dc.caCertificateFile });
  return { ...r, dcCpuSeconds: +(cpuSeconds(dc.pid) - c0).toFixed(1) };
}

/** The connector config of the bench (also used by the connector-only read). */
function connectorConfig(dc, ou, attributes) {
  return {
    ...dc.connection,
    containers: { include: [ou] },
    deltaStrategy: 'usn',
    ...(PAGE_SIZE ? { pageSize: PAGE_SIZE } : {}),
    // No list: the connector reads what its rules use (attributesFromRules); `*` every user attribute.
    ...(attributes.length ? { attributes } : { attributesFromRules: true }),
  };
}

/** The attributes the engine hands an import's connector for the bench's rules (lib/sync/import/readAttributes.ts). */
function importAttributes(config) {
  const { importReads } = require(path.join(__dirname, '../../dist/lib/sync/import/readAttributes'));
  const rule = (ruleType, sourceAttribute, extra = {}) => ({
    ruleType,
    connectorId: 'c',
    isEnabled: true,
    sourceAttribute,
    targetAttribute: sourceAttribute,
    transformScript: null,
    ...extra,
  });
  const rules = [rule('ProjectionRule', 'sAMAccountName', { targetAttribute: null }), ...FLOWS.map((a) => rule('FlowRule', a))];
  const reads = importReads('c', 'active_directory', config, rules);
  return Array.isArray(reads) && !config.attributes ? reads : undefined;
}

/**
 * The connector's own full read without the engine (compiled code in dist/, a child process of its own, engine
 * pages of 2,000 as the engine asks): wall and CPU seconds. What the service's one thread spends on reading.
 */
function connectorRead(dc, ou, attributes) {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      [__filename, '--read-child', JSON.stringify(connectorConfig(dc, ou, attributes))],
      { maxBuffer: 1 << 20 },
      (err, stdout, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve(JSON.parse(stdout))),
    ),
  );
}

async function readChild(cfgJson) {
  const { LdapConnector, closeParkedSearches } = require(path.join(__dirname, '../../dist/lib/connectors/ldap'));
  const config = JSON.parse(cfgJson);
  const c = new LdapConnector('active_directory', config, importAttributes(config));
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let objects = 0;
  let pages = 0;
  for await (const page of c.fullImport({ pageSize: 2000 })) {
    pages++;
    objects += page.objects.length;
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await c.close();
  await closeParkedSearches();
  process.stdout.write(
    JSON.stringify({ objects, pages, seconds: +seconds.toFixed(2), cpuSeconds: +((cpu.user + cpu.system) / 1e6).toFixed(2), attributes: c.readAttributes }),
  );
}

async function round(dc, ou, r) {
  const attributes = ROUND_ATTRIBUTES ? ROUND_ATTRIBUTES[(r - 1) % ROUND_ATTRIBUTES.length] : ATTRIBUTES;
  // The connector alone first: ldapsearch then asks for exactly the attributes it asked for.
  const { attributes: asked, ...read } = await connectorRead(dc, ou, attributes);
  const ldaps = await ldapsearch(dc, ou, asked);
  console.error(
    `round ${r}: ldapsearch ${ldaps.entries} entries in ${ldaps.seconds} s; connector alone ${read.seconds} s (${read.cpuSeconds} s CPU), ${asked.length} attributes asked; starting the service...`,
  );
  const prof = process.env.SYNC_BENCH_CPUPROF;
  const root = ROOTS.length ? path.resolve(ROOTS[(r - 1) % ROOTS.length]) : undefined;
  const roundOptions = ROUND_NODE_OPTIONS ? ROUND_NODE_OPTIONS[(r - 1) % ROUND_NODE_OPTIONS.length] : SERVICE_NODE_OPTIONS;
  if (root || ROUND_NODE_OPTIONS) console.error(`round ${r}: service from ${root ?? 'this tree'}, NODE_OPTIONS '${roundOptions}'`);
  const nodeOptions = [roundOptions, prof ? `--require ${path.join(__dirname, '../sync/cpuprof.js')}` : ''].filter(Boolean).join(' ');
  const svc = await startService({ ...(root ? { root } : {}), env: { ...dc.env, ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}) } });
  try {
    const { call, must } = svc;
    const conn = await must(
      call('POST', 'connectors', {
        name: 'AD',
        type: 'active_directory',
        config: connectorConfig(dc, ou, attributes),
      }),
      201,
    );
    const rule = (name, b) => must(call('POST', 'rules', { ruleName: name, connectorId: conn.id, ...b }), 201);
    await rule('users', { ruleType: 'ProjectionRule', sourceAttribute: 'sAMAccountName', objectType: 'User', priority: 10 });
    for (const a of FLOWS) {
      await rule(`flow ${a}`, { ruleType: 'FlowRule', sourceAttribute: a, targetAttribute: a, confidence: 50 });
    }
    console.error(`round ${r}: full import through the engine...`);
    const rssBefore = peakRssMB(svc.pid);
    const full = await svc.runImport(conn.id, 'FullImport');
    const rssAfter = peakRssMB(svc.pid);
    if (prof) process.kill(svc.pid, 'SIGUSR2');
    console.error(`round ${r}: full import ${full.seconds.toFixed(1)} s (${full.run.status}); storage floor...`);
    const count = (await must(call('GET', 'mesh/objects?objectType=User&take=0'), 200)).totalCount;
    const f = await storageFloor(svc.azurite.connectionString, `Floor${r}`, N, svc.tablePid);
    const larger = Math.max(ldaps.seconds, f.seconds);
    return {
      round: r,
      ...(root ? { serviceRoot: root } : {}),
      ...(ROUND_NODE_OPTIONS ? { serviceNodeOptions: roundOptions } : {}),
      attributes: attributes.length ? attributes : "the rules' (default)",
      attributesAsked: asked,
      ldapsearch: { ...ldaps, transport: 'ldaps, paged 1000' },
      connectorAlone: read,
      floor: f,
      fullImport: {
        seconds: +full.seconds.toFixed(2),
        status: full.run.status,
        stats: full.run.stats,
        error: full.run.error,
        ...full.cpu,
        servicePeakRssMB: rssAfter,
        servicePeakRssBeforeImportMB: rssBefore,
      },
      meshUsers: count,
      ratioToLdapsearch: +(full.seconds / ldaps.seconds).toFixed(2),
      ratioToStorageFloor: +(full.seconds / f.seconds).toFixed(2),
      ratioToLargerFloor: +(full.seconds / larger).toFixed(2),
      goalRatio: 1.3,
      goalMet: full.seconds <= 1.3 * larger && full.run.status === 'Completed' && count === N,
    };
  } finally {
    await svc.stop();
  }
}

/**
 * The bench's users: CN=u<i:06> in `parent`, with the attributes a directory of people carries, disabled, and
 * a manager (user floor(i/10); none for user 0): loaded through Samba's own sam.ldb (test/support/samLoad.py).
 */
function benchUsers(parent, count, realm) {
  const dn = (i) => `CN=u${String(i).padStart(6, '0')},${parent}`;
  return Array.from({ length: count }, (_, i) => {
    const sam = `u${String(i).padStart(6, '0')}`;
    const attributes = {
      userPrincipalName: `${sam}@${realm}`,
      givenName: `Given${i}`,
      sn: `Surname${i}`,
      displayName: `Given${i} Surname${i}`,
      mail: `${sam}@${realm}`,
      title: `Title ${i % 50}`,
      department: `Department ${i % 20}`,
      employeeID: `E${String(i).padStart(6, '0')}`,
      telephoneNumber: `+1 555 ${String(i).padStart(7, '0')}`,
    };
    if (i > 0) attributes.manager = dn(Math.floor(i / 10));
    return { dn: dn(i), sAMAccountName: sam, attributes };
  });
}

async function main() {
  if (!(N >= 10)) throw new Error('--users must be at least 10');
  let t = performance.now();
  const dc = await startSambaAd();
  const removeDcOnInterrupt = onInterrupt(() => dc.release());
  try {
    const startSeconds = +((performance.now() - t) / 1000).toFixed(1);
    const ou = await dc.addOU(`OU=Bench,${dc.baseDN}`);
    console.error(`DC up in ${startSeconds} s; loading ${N} users through sam.ldb...`);
    t = performance.now();
    await dc.samLoad({ users: benchUsers(ou, N, dc.realm.toLowerCase()) }, 3_600_000);
    const loadSeconds = +((performance.now() - t) / 1000).toFixed(1);
    console.error(`loaded in ${loadSeconds} s`);
    const rounds = [];
    for (let r = 1; r <= RUNS; r++) rounds.push(await round(dc, ou, r));
    console.log(
      JSON.stringify(
        {
          bench: 'ad-import',
          users: N,
          connectorPageSize: PAGE_SIZE || 'default',
          serviceNodeOptions: SERVICE_NODE_OPTIONS || null,
          attributes: ROUND_ATTRIBUTES ? ROUND_ATTRIBUTES.map((a) => (a.length ? a : 'default')) : ATTRIBUTES.length ? ATTRIBUTES : "the rules' (default)",
          dcStartSeconds: startSeconds,
          loadSeconds,
          rounds,
          loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
        },
        null,
        2,
      ),
    );
  } finally {
    await dc.release();
    removeDcOnInterrupt();
  }
}

(process.argv[2] === '--read-child' ? readChild(process.argv[3]) : main()).catch((err) => {
  console.error(err);
  process.exit(1);
});
