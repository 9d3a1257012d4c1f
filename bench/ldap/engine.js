#!/usr/bin/env node
'use strict';
/**
 * The directory connector end to end through the sync engine (issue 6): slapd bulk-loaded (slapadd -q) with N
 * users (manager = user floor(i/10)) and N/100 groups (user i in group i % groups: N memberships), an `ldap`
 * connector created over HTTP on the running service (local runtime, in-memory Azurite; ldaps, accesslog
 * deltas), and rules: projections of users (uid) and groups (cn), a join on employeeNumber, flow rules (sn,
 * mail, employeeNumber, cn). Relationships (`--refs`): `space` (default), manager and member DNs resolved
 * through the connector space with no rule; `composer`, the DNs also flowed into the mesh (entryDN -> dn,
 * manager -> managerDn, member) and matched by two MeshComposerRules against the mesh attribute dn; `none`, no
 * reference attribute read (the baseline for what references cost). Prints JSON:
 * - ldapsearch: the same entries and attributes read by ldapsearch (paged 1000) in this run, over ldaps as the
 *   connector reads them and over plain LDAP;
 * - fullImport: into an empty mesh, trigger to Completed (target <= 60 s), the service's peak RSS (target
 *   <= 512 MB), CPU seconds of the service and of the Azurite table process;
 * - relationships: a sample of users and groups read back through GET /mesh/objects/{id} (manager and
 *   member relationships resolved, and how many);
 * - delta: 1,000 modified users (sn, title) and 10 deleted users (ldapmodify, then a DeltaImport by
 *   accesslog; target <= 3 s), and the mesh read back after it.
 *
 * `--attributes listed` (default): the connector reads the attributes the rules use (objectClass, uid, cn, sn,
 * mail, employeeNumber, title), plus `manager` and `member` unless `--refs none`, so `space` and `none` differ
 * by the reference attributes only; `--attributes all`: `*` except with `--refs none` (the set-up before
 * 2026-11-25, whose `space` also read givenName, departmentNumber and telephoneNumber the baseline did not).
 *
 * SYNC_BENCH_CPUPROF=<dir>: a V8 CPU profile of the service up to the end of the full import (bench/sync/cpuprof.js).
 *
 * Usage: npm run build && node bench/ldap/engine.js [--users 100000] [--groups users/100] [--refs space|composer|none] [--attributes listed|all]
 */
require('./ts-register');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { generate, groupDn, userDn } = require('./generate');
const { startSlapd } = require('../../test/support/slapd');
const { arg, onInterrupt, peakRssMB, sleep, startService } = require('../support');
const { countingLdapsearch } = require('./ldapsearch');

const N = arg('users', 100000);
/**
 * How relationships are made: `space` (default) the connector's reference attributes (manager, member)
 * resolved through the connector space, with no rule; `composer` also flows the DNs into the mesh and resolves
 * them with mesh-composer rules against the mesh attribute `dn` (the set-up before references went through
 * the connector space); `none` reads no reference attribute at all (the baseline for the cost of references).
 */
const REFS = (() => {
  const i = process.argv.indexOf('--refs');
  const v = i >= 0 ? process.argv[i + 1] : 'space';
  if (!['space', 'composer', 'none'].includes(v)) throw new Error('--refs is space, composer or none');
  return v;
})();
const ATTRIBUTES = arg('attributes', 'listed');
if (!['listed', 'all'].includes(ATTRIBUTES)) throw new Error('--attributes is listed or all');
/** The attributes the rules use (flows, projections, the join, the groups' condition). */
const LISTED = ['objectClass', 'uid', 'cn', 'sn', 'mail', 'employeeNumber', 'title'];
/** The connector's `attributes` for this set-up. */
const connectorAttributes = () => {
  if (REFS === 'none') return LISTED;
  const refs = REFS === 'composer' ? ['entryDN', 'manager', 'member'] : ['manager', 'member'];
  if (ATTRIBUTES === 'listed') return [...LISTED, ...refs];
  return REFS === 'composer' ? ['*', 'entryDN'] : ['*'];
};
const GROUPS = arg('groups', Math.max(1, Math.round(N / 100)));
const FILTER = '(|(objectClass=inetOrgPerson)(objectClass=groupOfNames))';
const uid = (i) => `u${String(i).padStart(6, '0')}`;
const groupCn = (g) => `g${String(g).padStart(4, '0')}`;

/** ldapsearch of every user and group (paged 1000, to a pipe that only counts entries): seconds and entries. */
function ldapsearch(url, slapd, env = {}) {
  return countingLdapsearch(
    ['-x', '-LLL', '-H', url, '-D', slapd.rootDN, '-w', slapd.rootPassword, '-b', slapd.suffix, '-E', 'pr=1000/noprompt', FILTER, '*', 'entryUUID', 'entryDN'],
    env,
  );
}

/** Indexes of the users the delta modifies (1,000 spread over the directory) and deletes (10 without reports). */
function deltaSets() {
  // User i manages users 10i..10i+9: users at or past N/10 manage nobody.
  const deleted = [];
  for (let i = N - 1; deleted.length < 10 && i >= Math.ceil(N / 10); i -= 2) deleted.push(i);
  const gone = new Set(deleted);
  const want = Math.min(1000, N - deleted.length);
  const step = Math.max(1, Math.floor(N / want));
  const modified = [];
  for (let i = 0; modified.length < want && i < N; i += step) if (!gone.has(i)) modified.push(i);
  for (let i = 0; modified.length < want && i < N; i++) if (!gone.has(i) && !modified.includes(i)) modified.push(i);
  return { modified, deleted };
}

async function main() {
  if (!(N >= 100)) throw new Error('--users must be at least 100');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ldap-engine-bench-'));
  const removeDirOnInterrupt = onInterrupt(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ldif = path.join(dir, 'bulk.ldif');
  let t = performance.now();
  await generate(ldif, { users: N, groups: GROUPS });
  const generateSeconds = +((performance.now() - t) / 1000).toFixed(2);
  t = performance.now();
  const slapd = await startSlapd({ ldifFile: ldif, maxSizeBytes: 8 * 1024 ** 3 });
  const removeSlapdOnInterrupt = onInterrupt(() => slapd.stop());
  const slapaddAndStartSeconds = +((performance.now() - t) / 1000).toFixed(2);
  let svc;
  try {
    const ldaps = await ldapsearch(`ldaps://127.0.0.1:${slapd.ldapsPort}`, slapd, { LDAPTLS_CACERT: slapd.caCertificateFile });
    const plain = await ldapsearch(slapd.url, slapd);
    console.error(`ldapsearch ${ldaps.entries} entries: ldaps ${ldaps.seconds} s, plain ${plain.seconds} s; starting the service...`);

    const prof = process.env.SYNC_BENCH_CPUPROF;
    svc = await startService(
      prof ? { env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${path.join(__dirname, '../sync/cpuprof.js')}`.trim() } } : {},
    );
    const { call, must } = svc;
    const conn = await must(
      call('POST', 'connectors', {
        name: 'Directory',
        type: 'ldap',
        config: {
          host: 'localhost',
          port: slapd.ldapsPort,
          security: 'ldaps',
          caCertificate: slapd.caCertificate,
          baseDN: slapd.suffix,
          bindDN: slapd.rootDN,
          bindPassword: slapd.rootPassword,
          deltaStrategy: 'accesslog',
          // entryDN (operational, RFC 5020): the DN as an attribute, which the rules can flow and match on.
          attributes: connectorAttributes(),
        },
      }),
      201,
    );
    const rule = (name, b) => must(call('POST', 'rules', { ruleName: name, connectorId: conn.id, ...b }), 201);
    await rule('users', { ruleType: 'ProjectionRule', sourceAttribute: 'uid', objectType: 'User', priority: 10 });
    await rule('groups', {
      ruleType: 'ProjectionRule',
      sourceAttribute: 'cn',
      objectType: 'Group',
      priority: 20,
      transformScript: "object.objectClass.includes('groupOfNames')",
    });
    await rule('join employeeNumber', { ruleType: 'JoinRule', sourceAttribute: 'employeeNumber', targetAttribute: 'employeeNumber' });
    const flows = [
      ['employeeNumber', 'employeeNumber'],
      ['sn', 'sn'],
      ['mail', 'mail'],
      ['cn', 'cn'],
    ];
    if (REFS === 'composer') flows.push(['entryDN', 'dn'], ['manager', 'managerDn'], ['member', 'member']);
    for (const [s, d] of flows) await rule(`flow ${s}`, { ruleType: 'FlowRule', sourceAttribute: s, targetAttribute: d, confidence: 50 });
    if (REFS === 'composer') {
      await rule('manager', {
        ruleType: 'MeshComposerRule',
        connectorId: null,
        relationshipType: 'manager',
        sourceAttribute: 'managerDn',
        targetAttribute: 'dn',
      });
      await rule('member', { ruleType: 'MeshComposerRule', connectorId: null, relationshipType: 'member', sourceAttribute: 'member', targetAttribute: 'dn' });
    }

    console.error('full import through the engine...');
    const rssBeforeMB = peakRssMB(svc.pid);
    const full = await svc.runImport(conn.id, 'FullImport');
    const rssAfterFull = peakRssMB(svc.pid);
    if (prof) process.kill(svc.pid, 'SIGUSR2');
    console.error(`full import ${full.seconds.toFixed(1)} s (${full.run.status}${full.run.error ? `: ${full.run.error}` : ''}); checking relationships...`);

    /** Mesh object (detail) by its anchor, or null; the read model follows the feed, so wait a little for it. */
    const byAnchor = async (objectType, anchor) => {
      for (let i = 0; i < 50; i++) {
        const page = await must(call('GET', `mesh/objects?objectType=${objectType}&search=${encodeURIComponent(anchor)}&take=5`), 200);
        const hit = page.items.find((x) => x.anchorValue === anchor);
        if (hit) return must(call('GET', `mesh/objects/${hit.meshObjectId}`), 200);
        await sleep(100);
      }
      return null;
    };
    const count = async (objectType) => (await must(call('GET', `mesh/objects?objectType=${objectType}&take=0`), 200)).totalCount;
    const sampleUsers = Array.from({ length: 20 }, (_, k) => 1 + Math.floor((k * (N - 1)) / 20));
    const sampleGroups = Array.from({ length: Math.min(5, GROUPS) }, (_, k) => Math.floor((k * GROUPS) / 5));
    let usersFound = 0;
    let managerResolved = 0;
    let managerRight = 0;
    for (const i of sampleUsers) {
      const o = await byAnchor('User', uid(i));
      if (!o) continue;
      usersFound++;
      const rel = o.relationships.filter((r) => r.relationshipType === 'manager');
      if (rel.length) managerResolved++;
      if (rel.length === 1 && rel[0].targetAnchorValue === uid(Math.floor(i / 10))) managerRight++;
    }
    let groupsFound = 0;
    let memberRelationships = 0;
    let memberExpected = 0;
    for (const g of sampleGroups) {
      const o = await byAnchor('Group', groupCn(g));
      memberExpected += Math.ceil((N - g) / GROUPS);
      if (!o) continue;
      groupsFound++;
      memberRelationships += o.relationships.filter((r) => r.relationshipType === 'member').length;
    }
    const relationships = {
      meshUsers: await count('User'),
      meshGroups: await count('Group'),
      sampledUsers: sampleUsers.length,
      sampledUsersFound: usersFound,
      sampledUsersWithManagerRelationship: managerResolved,
      sampledUsersWithTheRightManager: managerRight,
      sampledGroups: sampleGroups.length,
      sampledGroupsFound: groupsFound,
      sampledGroupsMemberRelationships: memberRelationships,
      sampledGroupsMembersExpected: memberExpected,
      sampleRelationshipShape: usersFound ? ((await byAnchor('User', uid(sampleUsers[0])))?.relationships?.[0] ?? null) : null,
    };

    // The delta: 1,000 modified users and 10 deleted ones, over LDAP (through the overlays, into the access log).
    const { modified, deleted } = deltaSets();
    const changes = [
      ...modified.map(
        (i) => `dn: ${userDn(i, slapd.suffix)}\nchangetype: modify\nreplace: sn\nsn: Changed${i}\n-\nreplace: title\ntitle: Changed title ${i}\n`,
      ),
      ...deleted.map((i) => `dn: ${userDn(i, slapd.suffix)}\nchangetype: delete\n`),
    ];
    fs.writeFileSync(path.join(dir, 'delta.ldif'), changes.join('\n'));
    t = performance.now();
    execFileSync('ldapmodify', ['-x', '-H', slapd.url, '-D', slapd.rootDN, '-w', slapd.rootPassword, '-f', path.join(dir, 'delta.ldif')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const ldapmodifySeconds = +((performance.now() - t) / 1000).toFixed(2);
    await sleep(1100);
    console.error(`ldapmodify ${ldapmodifySeconds} s; delta import...`);
    const delta = await svc.runImport(conn.id, 'DeltaImport');
    // The read model follows the change feed: wait (up to 10 s) until the deletes show, and say how long it took.
    t = performance.now();
    let meshUsersAfter = await count('User');
    while (meshUsersAfter !== N - deleted.length && performance.now() - t < 10000) {
      await sleep(100);
      meshUsersAfter = await count('User');
    }
    const readModelWaitSeconds = +((performance.now() - t) / 1000).toFixed(2);
    const changedUser = await byAnchor('User', uid(modified[modified.length >> 1]));
    const deletedStillThere = (await Promise.all(deleted.slice(0, 3).map((i) => inMesh(call, must, uid(i))))).filter(Boolean).length;
    // A deleted user leaves its groups: refint rewrites the groups in the directory (not in the access log).
    const g = deleted[0] % GROUPS;
    const group = await byAnchor('Group', groupCn(g));
    const groupOut = execFileSync(
      'ldapsearch',
      ['-x', '-LLL', '-H', slapd.url, '-D', slapd.rootDN, '-w', slapd.rootPassword, '-b', groupDn(g, slapd.suffix), '-s', 'base', '(objectClass=*)', 'member'],
      { maxBuffer: 256 * 1024 * 1024 },
    ).toString();
    const afterDelta = {
      meshUsers: meshUsersAfter,
      expectedUsers: N - deleted.length,
      readModelWaitSeconds,
      modifiedUserSn: changedUser?.attributes?.find((a) => a.attributeName === 'sn')?.attributeValue ?? null,
      expectedSn: `Changed${modified[modified.length >> 1]}`,
      deletedUsersStillInMeshOfThreeChecked: deletedStillThere,
      groupOfADeletedUser: {
        group: groupCn(g),
        membersInDirectory: (groupOut.match(/^member: /gm) ?? []).length,
        memberValuesInMesh: group?.attributes?.filter((a) => a.attributeName === 'member').length ?? null,
        memberRelationshipsInMesh: group?.relationships?.filter((r) => r.relationshipType === 'member').length ?? null,
      },
    };

    console.log(
      JSON.stringify(
        {
          bench: 'ldap-engine',
          references: REFS,
          attributes: connectorAttributes(),
          users: N,
          groups: GROUPS,
          memberships: N,
          generateSeconds,
          slapaddAndStartSeconds,
          ldapsearch: { ...ldaps, transport: 'ldaps, paged 1000 (as the connector)' },
          ldapsearchPlain: { ...plain, transport: 'ldap (plain), paged 1000' },
          fullImport: {
            seconds: +full.seconds.toFixed(2),
            status: full.run.status,
            stats: full.run.stats,
            error: full.run.error,
            ...full.cpu,
            servicePeakRssMB: rssAfterFull,
            servicePeakRssBeforeImportMB: rssBeforeMB,
            targetSeconds: 60,
            targetRssMB: 512,
          },
          ratioFullImportToLdapsearch: +(full.seconds / ldaps.seconds).toFixed(1),
          relationships,
          delta: {
            modifiedUsers: modified.length,
            deletedUsers: deleted.length,
            ldapmodifySeconds,
            seconds: +delta.seconds.toFixed(2),
            status: delta.run.status,
            stats: delta.run.stats,
            error: delta.run.error,
            ...delta.cpu,
            targetSeconds: 3,
          },
          afterDelta,
          servicePeakRssMB: peakRssMB(svc.pid),
          loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
        },
        null,
        2,
      ),
    );
  } finally {
    await svc?.stop();
    await slapd.stop();
    removeSlapdOnInterrupt();
    fs.rmSync(dir, { recursive: true, force: true });
    removeDirOnInterrupt();
  }
}

/** Whether a user anchor is (still) in the mesh, without waiting. */
async function inMesh(call, must, anchor) {
  const page = await must(call('GET', `mesh/objects?objectType=User&search=${encodeURIComponent(anchor)}&take=5`), 200);
  return page.items.some((x) => x.anchorValue === anchor);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
