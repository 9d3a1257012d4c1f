import { randomBytes } from 'node:crypto';
import { commitMeshWrite, existingMeshIds, getMeshObject, getMeshObjects, iterateMesh, readFeed } from '../../../lib/mesh/store';
import { getOverflow, putOverflow } from '../../../lib/storage/overflow';
import { resetTableClients, table } from '../../../lib/storage/tables';
import { readCsObjects, readCsPartition, writeCsObjects } from '../../../lib/sync/space/connectorSpace';
import type { MeshObject, Relationship } from '../../../lib/mesh/model';
import type { CsObject } from '../../../lib/sync/model';
import { gid, meshObject } from '../../unit/mesh/meshSupport';

/**
 * Objects too large for a table row, on Azurite: a group of 50,000 members is a mesh object of several
 * megabytes (its relationships) and a connector-space row of several megabytes (its member DNs). An entity
 * holds at most 1 MiB, so the stored form is kept apart (lib/storage/overflow.ts) and every reader gets the
 * whole object back: point reads, batched reads, scans, the change feed, connector-space reads.
 */
jest.setTimeout(120_000);

beforeAll(() => {
  process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
  process.env.Storage__TablePrefix = 'o' + randomBytes(5).toString('hex');
  resetTableClients();
});

const MEMBERS = 50_000;
const CONNECTOR = 'c0000000-0000-4000-8000-00000000000c';
const memberDn = (i: number) => `uid=u${String(i).padStart(6, '0')},ou=people,dc=example,dc=com`;

function bigGroup(): MeshObject {
  const g = meshObject(gid(900_001), 'all-staff', { cn: 'all-staff' }, { objectType: 'Group' });
  g.relationships = Array.from({ length: MEMBERS }, (_, i): Relationship => ({
    type: 'member',
    targetId: gid(i + 1),
    targetAnchor: `u${i}`,
    targetType: 'User',
    c: CONNECTOR,
    ca: `anchor-${i}`,
    v: memberDn(i),
    by: `@dn:${CONNECTOR}`,
  }));
  return g;
}

test('a text kept apart comes back whole; a missing one is an error that names no content', async () => {
  const text = 'x'.repeat(1_000_000) + 'é'.repeat(10);
  const key = await putOverflow(text);
  expect(await getOverflow(key)).toBe(text);
  // The same text again is the same rows (content-addressed, a replayed write is harmless).
  expect(await putOverflow(text)).toBe(key);
  await expect(getOverflow('0'.repeat(64))).rejects.toThrow(/missing or incomplete/);
});

test('a mesh group of 50,000 members is written and read back by every reader', async () => {
  const g = bigGroup();
  const small = meshObject(gid(900_002), 'small', { cn: 'small' });
  const seq = await commitMeshWrite({ upserts: [g, small], deletes: [] });
  expect(seq).toBeGreaterThan(0);
  // The row itself is small: the stored form is kept apart.
  const client = await table('Mesh' + g.id[0]);
  const row = await client.getEntity<Record<string, unknown>>('m' + g.id[0] + (parseInt(g.id[1], 16) & 3), g.id);
  expect(typeof row.dref).toBe('string');
  expect(row.dn).toBeUndefined();

  const one = await getMeshObject(g.id);
  expect(one!.relationships).toHaveLength(MEMBERS);
  expect(one!.relationships[MEMBERS - 1]).toEqual(g.relationships[MEMBERS - 1]);
  const many = await getMeshObjects([g.id, small.id]);
  expect(many.get(g.id)!.relationships).toHaveLength(MEMBERS);
  expect(many.get(small.id)!.anchorValue).toBe('small');
  // Existence only (the row keys selected, the large row not read whole): the missing one absent.
  const missing = gid(987654);
  expect(await existingMeshIds([g.id, small.id, missing])).toEqual(new Set([g.id, small.id]));
  const scanned: MeshObject[] = [];
  for await (const page of iterateMesh('Group')) scanned.push(...page);
  expect(scanned.find((o) => o.id === g.id)!.relationships).toHaveLength(MEMBERS);
  const feed = (await readFeed(0)).flatMap((r) => r.entries);
  const entry = feed.find((e) => e.id === g.id);
  expect(entry && 'state' in entry ? entry.state.relationships.length : -1).toBe(MEMBERS);
  expect(feed.find((e) => e.id === small.id)).toBeDefined();
});

test('a connector-space row with 50,000 member DNs is written and read back', async () => {
  const members = Array.from({ length: MEMBERS }, (_, i) => memberDn(i));
  const row: CsObject = {
    anchor: 'group-anchor',
    objectType: 'Group',
    dn: 'cn=all-staff,ou=groups,dc=example,dc=com',
    attributes: { cn: 'all-staff', member: members },
    hash: 'h',
    rulesHash: 'r',
    meshId: gid(900_001),
    exported: { member: members },
    refNames: ['member'],
    updatedOn: '2026-01-01T00:00:00.000Z',
  };
  await writeCsObjects(CONNECTOR, [row, { ...row, anchor: 'small', attributes: { cn: 'x' }, exported: undefined }]);
  const back = await readCsObjects(CONNECTOR, ['group-anchor', 'small']);
  expect(back.get('group-anchor')!.attributes.member).toEqual(members);
  expect(back.get('group-anchor')!.exported!.member).toEqual(members);
  expect(back.get('group-anchor')!.refNames).toEqual(['member']);
  expect(back.get('small')!.attributes).toEqual({ cn: 'x' });
  const all: CsObject[] = [];
  for (let p = 0; p < 64; p++) all.push(...(await readCsPartition(CONNECTOR, p)));
  expect(all.find((o) => o.anchor === 'group-anchor')!.attributes.member).toHaveLength(MEMBERS);
});
