#!/usr/bin/env node
'use strict';
/**
 * The in-process work references add to a directory import, without a directory or storage: the entries
 * bench/ldap/engine.js loads into slapd (N users, manager = user floor(i/10); N/100 groups of 100), turned into
 * connector objects (lib/connectors/ldap/objects.ts), hashed, planned page by page (projection, join, flows
 * and, with `refs`, the manager and member references resolved through a CsCache), encoded for the mesh row and
 * the feed, and their connector-space entities built. Prints the process CPU of that work (ms) and the bytes of
 * the entity JSON (as sent, escaped) of mesh rows, feed entries and connector-space rows.
 * `none`: the same entries without manager and member (the baseline, as `--refs none` of engine.js).
 *
 * Usage: npm run build && node bench/ldap/refsInProcess.js [<checkout root, default this one>] [users, default 100000] [refs|none]
 * (the root lets a build of another commit, checked out beside this one, be measured with the same script).
 */
const root = process.argv[2] || require('node:path').resolve(__dirname, '../..');
const N = +process.argv[3] || 20000;
const MODE = process.argv[4] || 'refs';
const d = (p) => require(root + '/dist/lib/' + p);
const { toConnectorObject } = d('connectors/ldap/objects.js');
const { contentHash } = d('connectors/sdk.js');
const { compileRuleSet } = d('sync/rules.js');
const { planImport, WorkingSet } = d('sync/planner.js');
const { MeshIndex } = d('mesh/joinIndex.js');
const { CsCache } = d('sync/csCache.js');
const { referencePolicy } = d('sync/references.js');
const codec = d('mesh/codec.js');
const { encodeMeshObject } = codec;
const { toCsEntity } = d('sync/connectorSpace.js');
const { summarize } = d('sync/connectorSpace.js');
const cid = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
const now = new Date().toISOString();
const rule = (x) => ({
  ruleId: x.ruleName,
  connectorId: cid,
  priority: 100,
  isEnabled: true,
  sourceAttribute: null,
  targetAttribute: null,
  confidence: null,
  transformScript: null,
  createdOn: now,
  updatedOn: now,
  ...x,
});
const rules = [
  rule({ ruleName: 'users', ruleType: 'ProjectionRule', sourceAttribute: 'uid', objectType: 'User', priority: 10 }),
  rule({
    ruleName: 'groups',
    ruleType: 'ProjectionRule',
    sourceAttribute: 'cn',
    objectType: 'Group',
    priority: 20,
    transformScript: "object.objectClass.includes('groupOfNames')",
  }),
  rule({ ruleName: 'join', ruleType: 'JoinRule', sourceAttribute: 'employeeNumber', targetAttribute: 'employeeNumber' }),
  ...['employeeNumber', 'sn', 'mail', 'cn'].map((a) =>
    rule({ ruleName: 'flow ' + a, ruleType: 'FlowRule', sourceAttribute: a, targetAttribute: a, confidence: 50, direction: 'inbound' }),
  ),
];
const rs = compileRuleSet(cid, rules);
const policy = referencePolicy(cid, 'ldap', {}, rules);
const scope = {
  classes: new Map([
    ['inetorgperson', 'User'],
    ['groupofnames', 'Group'],
  ]),
  anchorAttribute: 'entryUUID',
  include: ['dc=example,dc=com'],
  exclude: [],
  isAd: false,
  references: new Set(['manager', 'member', 'secretary', 'owner', 'uniquemember', 'managedby']),
};
const G = Math.max(1, Math.round(N / 100));
const userDn = (i) => `uid=u${String(i).padStart(6, '0')},ou=people,dc=example,dc=com`;
const groupDn = (g) => `cn=g${String(g).padStart(4, '0')},ou=groups,dc=example,dc=com`;
const uuid = (i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
function entries() {
  const out = [];
  for (let i = 0; i < N; i++) {
    const e = {
      dn: userDn(i),
      objectClass: ['inetOrgPerson'],
      uid: `u${String(i).padStart(6, '0')}`,
      cn: `User ${i}`,
      sn: `Surname${i}`,
      mail: `u${i}@example.test`,
      employeeNumber: String(100000 + i),
      title: `Title ${i % 50}`,
      entryUUID: uuid(i),
    };
    if (MODE === 'refs' && i > 0) e.manager = userDn(Math.floor(i / 10));
    out.push(e);
  }
  for (let g = 0; g < G; g++) {
    const e = { dn: groupDn(g), objectClass: 'groupOfNames', cn: `g${String(g).padStart(4, '0')}`, entryUUID: uuid(N + g) };
    if (MODE === 'refs') {
      const m = [];
      for (let i = g; i < N; i += G) m.push(userDn(i));
      e.member = m;
    }
    out.push(e);
  }
  return out;
}
(async () => {
  const all = entries();
  const index = new MeshIndex([]);
  const cs = new CsCache(new Map());
  const lookup = cs.lookup(cid, policy);
  const t = { convert: 0, hash: 0, plan: 0, encode: 0, csset: 0 };
  let bytes = 0;
  const B = { meshRow: 0, feed: 0, csRow: 0 };
  const c0 = process.cpuUsage();
  for (let p = 0; p < all.length; p += 2000) {
    const page = all.slice(p, p + 2000);
    let s = process.hrtime.bigint();
    const objs = [];
    for (const e of page) objs.push(await toConnectorObject(null, e, scope));
    t.convert += Number(process.hrtime.bigint() - s);
    s = process.hrtime.bigint();
    const hashes = objs.map((o) => contentHash(o));
    t.hash += Number(process.hrtime.bigint() - s);
    s = process.hrtime.bigint();
    const ws = new WorkingSet(index);
    const plans = objs.map((o, i) => {
      const pl = planImport({ rules: rs, now, ws, refs: lookup }, o.anchor, o, hashes[i], undefined);
      cs.note(pl.cs);
      return pl;
    });
    t.plan += Number(process.hrtime.bigint() - s);
    s = process.hrtime.bigint();
    for (const id of ws.dirty) {
      const doc = ws.get(id);
      const t = codec.encodeMeshTexts ? codec.encodeMeshTexts(doc) : { row: encodeMeshObject(doc), feed: null };
      t.feed = t.feed ?? t.row;
      B.meshRow += JSON.stringify(t.row).length;
      B.feed += JSON.stringify(t.feed).length;
      bytes += t.row.length;
    }
    t.encode += Number(process.hrtime.bigint() - s);
    s = process.hrtime.bigint();
    for (const pl of plans) {
      bytes += JSON.stringify(pl.cs.attributes).length;
      B.csRow += JSON.stringify(toCsEntity(cid, pl.cs)).length;
      cs.set(pl.cs.anchor, summarize(cid, pl.cs));
    }
    t.csset += Number(process.hrtime.bigint() - s);
  }
  const c = process.cpuUsage(c0);
  const ms = (x) => Math.round(x / 1e6);
  console.log(
    JSON.stringify({
      root,
      MODE,
      N,
      convert: ms(t.convert),
      hash: ms(t.hash),
      plan: ms(t.plan),
      encodeAndCsJson: ms(t.encode),
      csset: ms(t.csset),
      cpuMs: Math.round((c.user + c.system) / 1000),
      MB: +(bytes / 1e6).toFixed(1),
      meshRowMB: +(B.meshRow / 1e6).toFixed(1),
      feedMB: +(B.feed / 1e6).toFixed(1),
      csRowMB: +(B.csRow / 1e6).toFixed(1),
    }),
  );
})();
