'use strict';
/**
 * What the scale bench reads back (bench/scale/scale.js): the users the export provisioned in the target
 * directory (all counted, a sample compared), and the relationships in the mesh (a sample of users' managers,
 * the largest group's members).
 */
const { execFileSync } = require('node:child_process');
const { countingLdapsearch } = require('../ldap/ldapsearch');
const { DEPARTMENTS, uid } = require('./sources');

/** Every user provisioned in the target, and a sample of 20 with the right values. */
async function readBack(target, N) {
  const base = `ou=people,${target.suffix}`;
  const all = await countingLdapsearch([
    '-x',
    '-LLL',
    '-H',
    target.url,
    '-D',
    target.rootDN,
    '-w',
    target.rootPassword,
    '-b',
    base,
    '-E',
    'pr=1000/noprompt',
    '(uid=*)',
    '1.1',
  ]);
  const sample = Array.from({ length: 20 }, (_, k) => Math.floor((k * (N - 1)) / 19));
  const text = execFileSync('ldapsearch', [
    '-x',
    '-LLL',
    '-H',
    target.url,
    '-D',
    target.rootDN,
    '-w',
    target.rootPassword,
    '-b',
    base,
    `(|${sample.map((i) => `(uid=${uid(i)})`).join('')})`,
    'uid',
    'employeeNumber',
    'departmentNumber',
  ]).toString();
  // One entry per paragraph; its attribute lines as name -> value.
  const entries = new Map(
    text
      .split('\n\n')
      .map((e) => Object.fromEntries(e.split('\n').map((l) => [l.slice(0, l.indexOf(': ')), l.slice(l.indexOf(': ') + 2)])))
      .map((e) => [e.uid, e]),
  );
  const right = sample.filter((i) => {
    const e = entries.get(uid(i));
    return e && e.employeeNumber === String(100000 + i) && e.departmentNumber === DEPARTMENTS[i % DEPARTMENTS.length];
  }).length;
  return { entriesInTarget: all.entries, expected: N, sampled: sample.length, sampleWithRightValues: right, ldapsearchSeconds: all.seconds };
}

/** A sample read back through the mesh: 10 users' manager relationships (how many, all to the right person) and the largest group's members. */
async function relationships(svc, N, largestGroup) {
  const byAnchor = async (objectType, anchor) => {
    const page = await svc.must(svc.call('GET', `mesh/objects?objectType=${objectType}&search=${encodeURIComponent(anchor)}&take=5`), 200);
    const hit = page.items.find((x) => x.anchorValue === anchor);
    return hit ? svc.must(svc.call('GET', `mesh/objects/${hit.meshObjectId}`), 200) : null;
  };
  let right = 0;
  const managerRelationships = [];
  const sample = Array.from({ length: 10 }, (_, k) => 1 + Math.floor((k * (N - 2)) / 9));
  for (const i of sample) {
    const o = await byAnchor('User', uid(i));
    const boss = await byAnchor('User', uid(Math.floor(i / 10)));
    const m = o?.relationships.filter((r) => r.relationshipType === 'manager') ?? [];
    managerRelationships.push(m.length);
    if (m.length && boss && m.every((r) => r.targetMeshObjectId === boss.meshObjectId)) right++;
  }
  const big = await byAnchor('Group', 'g0000');
  return {
    sampledUsers: sample.length,
    withTheRightManager: right,
    managerRelationshipsEach: managerRelationships,
    largestGroupMembersExpected: largestGroup,
    largestGroupMemberRelationships: big?.relationships.filter((r) => r.relationshipType === 'member').length ?? null,
  };
}

module.exports = { readBack, relationships };
