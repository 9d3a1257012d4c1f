#!/usr/bin/env node
'use strict';
/**
 * Storage that explain and history add per changed mesh object, computed from the service's own encoders
 * (dist/, `npm run build` first): the mesh row's growth from recording the run on contributions and the
 * run and connector that created the object (a created object writes no history row: its `Created` entry is
 * derived when read), and the history row of an updated one, for the user of bench/sync/sync.js (3 inbound
 * attributes) and for one with 15 attributes. Sizes: the entity's JSON text (what Azurite stores) and Azure
 * Table Storage's billed size (4 + 2 x (PartitionKey + RowKey characters) + per property 8 + 2 x name characters
 * + the value: 4 + 2 x characters for a string).
 */
const { randomUUID } = require('node:crypto');
const { encodeMeshObject } = require('../../dist/lib/mesh/codec');
const { historyRows } = require('../../dist/lib/mesh/history');
const { consolidate } = require('../../dist/lib/mesh/model');

function azureBytes(e) {
  let n = 4 + 2 * (e.partitionKey.length + e.rowKey.length);
  for (const [k, v] of Object.entries(e)) {
    if (k === 'partitionKey' || k === 'rowKey') continue;
    n += 8 + 2 * k.length + (typeof v === 'string' ? 4 + 2 * v.length : 8);
  }
  return n;
}
const textBytes = (e) => Buffer.byteLength(JSON.stringify(e));

function user(i, attrs, run) {
  const connector = randomUUID();
  const at = new Date(Date.UTC(2026, 10, 25, 0, 0, i % 60)).toISOString();
  const contributions = {};
  for (const [name, v] of Object.entries(attrs))
    contributions[name] = [{ c: connector, r: randomUUID(), conf: 50, pri: 100, v, at, ...(run ? { u: run } : {}) }];
  const o = {
    id: randomUUID(),
    objectType: 'User',
    anchorValue: `E${String(i).padStart(6, '0')}`,
    createdOn: at,
    updatedOn: at,
    attributes: {},
    contributions,
    links: { [connector]: `u${i}` },
    relationships: [],
    pendingReferences: [],
  };
  consolidate(o);
  return o;
}

function measure(label, attrs) {
  const run = randomUUID();
  const without = user(1, attrs);
  const withRun = {
    ...without,
    contributions: Object.fromEntries(Object.entries(without.contributions).map(([k, l]) => [k, l.map((c) => ({ ...c, u: run }))])),
  };
  const changed = structuredClone(withRun);
  const first = Object.keys(attrs)[1];
  changed.contributions[first][0].v = String(changed.contributions[first][0].v) + 'X';
  consolidate(changed);
  const created = { ...withRun, createdRun: run, createdBy: Object.keys(withRun.links)[0] };
  const [updated] = historyRows(run, randomUUID(), new Date().toISOString(), [{ id: withRun.id, before: withRun, after: changed }]);
  return {
    label,
    attributes: Object.keys(attrs).length,
    meshRowText: { before: encodeMeshObject(without).length, after: encodeMeshObject(withRun).length, withCreation: encodeMeshObject(created).length },
    historyRowsOfCreated: historyRows(run, randomUUID(), new Date().toISOString(), [{ id: withRun.id, before: null, after: created }]).length,
    historyUpdatedOneAttribute: { textBytes: textBytes(updated), azureBytes: azureBytes(updated) },
  };
}

const bench = { employeeId: 'E000001', sn: 'SURNAME1', managerId: 'E007919' };
const wide = {
  ...bench,
  givenName: 'Given1',
  mail: 'user1@example.test',
  title: 'Title 1',
  department: 'Dept 1',
  company: 'Contoso',
  office: 'Office 1',
  phone: '+1 555 0000001',
  mobile: '+1 666 0000001',
  city: 'City 1',
  country: 'US',
  costCenter: 'CC1',
  hireDate: '2020-01-01',
};
console.log(JSON.stringify([measure('bench:sync user (3 attributes)', bench), measure('15 attributes', wide)], null, 2));
