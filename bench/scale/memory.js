#!/usr/bin/env node
'use strict';
/**
 * What the engine keeps in memory per identity (issue 21: engine RSS at 1,000,000 identities). Builds, in this
 * process, the three per-object structures a service holds after full imports, from N synthetic mesh objects
 * shaped like bench:scale's people (ATTRS attributes, a manager relationship, anchors and join keys), and
 * measures the heap each adds (after full collections):
 * - the mesh read model (lib/mesh/readModel.ts: mesh queries);
 * - the join index (lib/mesh/joinIndex.ts: joins and references by value), indexing two attributes;
 * - one connector's connector-space summaries (lib/sync/space/csSummaries.ts, in a lib/sync/space/csCache.ts CsCache: hash
 *   comparison, DN references), with a DN, a sha256 content hash and rules hash (base64url, as the engine
 *   computes them), a mesh id and an object id; then its DN index (built by the first reference by DN).
 * Prints JSON: bytes per object of each, and the heap they would need at 1,000,000 identities with one and two
 * connectors' summaries cached.
 *
 * `--summaries map`: the summaries in a Map of summary objects (the layout before the compact one), to compare.
 *
 * Usage: npm run build && node --expose-gc bench/scale/memory.js [--objects 100000] [--attributes 12] [--summaries map]
 */
const crypto = require('node:crypto');
const path = require('node:path');
const { arg } = require('../support');

const ROOT = path.resolve(__dirname, '../..');
const { MeshReadModel } = require(path.join(ROOT, 'dist/lib/mesh/readModel.js'));
const { MeshIndex } = require(path.join(ROOT, 'dist/lib/mesh/joinIndex.js'));
const { CsCache } = require(path.join(ROOT, 'dist/lib/sync/space/csCache.js'));
const { dnKey } = require(path.join(ROOT, 'dist/lib/mesh/model.js'));

const N = arg('objects', 100000);
const ATTRS = arg('attributes', 12);
const AS_MAP = process.argv.includes('--summaries') && process.argv[process.argv.indexOf('--summaries') + 1] === 'map';
// Required only for the compact layout (a checkout from before it has none: compare with --summaries map).
const { CsSummaries } = AS_MAP ? {} : require(path.join(ROOT, 'dist/lib/sync/space/csSummaries.js'));
if (typeof global.gc !== 'function') throw new Error('run with node --expose-gc');

const NAMES = [
  'givenName',
  'sn',
  'mail',
  'employeeNumber',
  'department',
  'title',
  'l',
  'company',
  'status',
  'telephoneNumber',
  'costCenter',
  'uid',
  'division',
  'location',
  'displayName',
];
const SHARED = new Set(['department', 'title', 'l', 'company', 'status', 'costCenter', 'division', 'location']);

const uuid = (i) =>
  crypto
    .createHash('md5')
    .update(`id${i}`)
    .digest('hex')
    .replace(/(.{8})(.{4})(.{4})(.{4})(.{12})/, '$1-$2-$3-$4-$5');

function person(i) {
  const on = new Date(Date.UTC(2026, 10, 26, 5, 0, i % 3600)).toISOString();
  const attributes = {};
  for (const n of NAMES.slice(0, ATTRS)) {
    const value = SHARED.has(n) ? `${n} ${i % 40}` : `${n}-${i}-${(i * 7919) % 100003}`;
    attributes[n] = { value, sourceConnectorId: i % 2 ? 'ldap' : 'hr', confidence: 100, updatedOn: on };
  }
  const boss = Math.floor(i / 10);
  return {
    id: uuid(i),
    objectType: 'person',
    anchorValue: `E${String(i).padStart(7, '0')}`,
    createdOn: on,
    updatedOn: on,
    attributes,
    contributions: {},
    links: { ldap: `uid=u${i}`, hr: `E${i}` },
    pendingReferences: [],
    relationships: i ? [{ type: 'manager', targetId: uuid(boss), targetAnchor: `E${String(boss).padStart(7, '0')}`, targetType: 'person' }] : [],
  };
}

function heap() {
  global.gc();
  global.gc();
  // Typed arrays keep their bytes outside the JavaScript heap: counted too.
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

const keep = [];
const t0 = heap();
const model = new MeshReadModel();
keep.push(model);
for (let i = 0; i < N; i += 1000) model.loadPage(Array.from({ length: Math.min(1000, N - i) }, (_, j) => person(i + j)));
const t1 = heap();
const index = new MeshIndex(new Set(['employeeNumber', 'mail']));
keep.push(index);
for (let i = 0; i < N; i++) index.apply(uuid(i), person(i));
const t2 = heap();
const summaries = AS_MAP ? new Map() : new CsSummaries();
const sha = (s) => crypto.createHash('sha256').update(s).digest('base64url');
for (let i = 0; i < N; i++)
  summaries.set(`uid=u${i}`, {
    hash: sha(`row${i}`),
    // Each row's own copy, as read from storage.
    rulesHash: sha('rules-1'),
    meshId: uuid(i),
    deleted: false,
    exported: false,
    dn: `uid=u${i},ou=people,dc=example,dc=com`,
    cid: uuid(i + 1e8),
  });
// As loadCsSummaries leaves them.
if (!AS_MAP) summaries.fit();
const cs = new CsCache(summaries);
keep.push(cs);
const t3 = heap();
if (AS_MAP) {
  // The DN index as CsCache builds it (its own walk needs the compact layout).
  const dns = new Map();
  for (const [anchor, s] of summaries) if (s.dn && !s.deleted) dns.set(dnKey(s.dn), anchor);
  keep.push(dns);
} else cs.anchorOfDn('uid=u1,ou=people,dc=example,dc=com');
const t4 = heap();

const per = (a, b) => Math.round((b - a) / N);
const readModel = per(t0, t1);
const joinIndex = per(t1, t2);
const connectorSpace = per(t2, t3);
const dnIndex = per(t3, t4);
const at1M = (bytes) => Math.round((bytes * 1e6) / 1e6);
console.log(
  JSON.stringify(
    {
      objects: N,
      attributes: ATTRS,
      summaries: AS_MAP ? 'map' : 'compact',
      bytesPerObject: { readModel, joinIndex, connectorSpacePerConnector: connectorSpace, dnIndexPerConnector: dnIndex },
      heapMBAt1M: {
        readModel: at1M(readModel),
        joinIndex: at1M(joinIndex),
        oneConnectorCached: at1M(readModel + joinIndex + connectorSpace),
        twoConnectorsCached: at1M(readModel + joinIndex + 2 * connectorSpace),
      },
      rssMB: Math.round(process.memoryUsage().rss / 1e6),
      kept: keep.length,
    },
    null,
    2,
  ),
);
