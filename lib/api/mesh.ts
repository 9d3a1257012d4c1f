import { recordAudit } from '../audit';
import type { Caller } from '../auth/permissions';
import type { AttributeValue } from '../connectors/sdk';
import { notFound } from '../core/errors';
import { secretFilterRefusal, shownValue } from '../core/secretAttributes';
import { distinctRelationships, type MeshObject } from '../mesh/model';
import { queryMesh, toDetail, toListItem, type MeshQuery } from '../mesh/query';
import { readyModel } from '../mesh/readModel';
import { getTombstones, listTombstoneHeads, type Tombstone } from '../mesh/tombstones';
import { readTombstone, restoreMeshObject } from '../sync/import/tombstones';
import { getMeshObject } from '../mesh/store';
import { connectorObjectsOf, displayNameById, docDisplayName, incomingRelationships, recordDisplayName } from './meshPerson';

/** `state` of a mesh object as the API shows it: live, or a tombstone kept until its purge. */
export type MeshObjectState = 'active' | 'deleted';

/**
 * The page `{ items, totalCount, skip, take }` of a mesh query (list and search; lib/mesh/query.ts). With
 * `state: 'deleted'`, the tombstones instead ({@link deletedPage}).
 */
export async function meshPage(q: MeshQuery & { state?: MeshObjectState }) {
  // A criterion on a secret attribute is a 400 before anything is read: its matches would reveal the value.
  const refused = secretFilterRefusal((q.criteria ?? []).map((c, i) => ({ name: c.attributeName, path: `/criteria/${i}/attributeName` })));
  if (refused) throw refused;
  if (q.state === 'deleted') return deletedPage(q);
  const model = await readyModel();
  const { items, totalCount } = queryMesh(model, q);
  return { items: items.map((r) => toListItem(model, r)), totalCount, skip: q.skip, take: q.take };
}

/**
 * The tombstones as a list page: the same order (anchor case-insensitive, then id), `objectType` and `search`
 * (anchor substring) filters, and items with `deletedOn` and `purgeOn`. A tombstone whose object is live again
 * (a restore under way) is left out.
 */
async function deletedPage(q: MeshQuery) {
  const model = await readyModel();
  const type = q.objectType?.toLowerCase();
  const search = q.search ? q.search.toLowerCase() : undefined;
  const heads = (await listTombstoneHeads())
    .filter(
      (h) =>
        !model.get(h.id) &&
        (type === undefined || h.objectType.toLowerCase() === type) &&
        (search === undefined || h.anchorValue.toLowerCase().includes(search)),
    )
    .map((h) => ({ ...h, lower: h.anchorValue.toLowerCase() }))
    .sort((a, b) => (a.lower < b.lower ? -1 : a.lower > b.lower ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const page = heads.slice(q.skip, q.skip + q.take);
  const found = await getTombstones(page.map((h) => h.id));
  const items = page.flatMap((h) => {
    const t = found.get(h.id);
    return t ? [deletedListItem(t)] : [];
  });
  return { items, totalCount: heads.length, skip: q.skip, take: q.take };
}

function deletedListItem(t: Tombstone) {
  const o = t.state;
  const attributeValues: Record<string, AttributeValue> = {};
  for (const [name, a] of Object.entries(o.attributes)) attributeValues[name] = shownValue(name, a.value);
  return { ...identity(o), attributeValues, state: 'deleted' as const, deletedOn: t.deletedOn, purgeOn: t.purgeOn };
}

const identity = (o: MeshObject) => ({
  meshObjectId: o.id,
  objectType: o.objectType,
  anchorValue: o.anchorValue,
  createdOn: o.createdOn,
  updatedOn: o.updatedOn,
});

/** A mesh object's detail shape from its state (a tombstone's, or a restored object's). */
function detailOf(o: MeshObject) {
  const attributes: { attributeName: string; attributeValue: string; source: string | null; confidence: number; updatedOn: string }[] = [];
  for (const name of Object.keys(o.attributes).sort()) {
    const a = o.attributes[name];
    const v = shownValue(name, a.value);
    for (const x of Array.isArray(v) ? v : [v]) {
      if (x === null || x === undefined || x === '') continue;
      attributes.push({ attributeName: name, attributeValue: String(x), source: a.sourceConnectorId, confidence: a.confidence, updatedOn: a.updatedOn });
    }
  }
  const relationships = distinctRelationships(o.relationships).map((r) => ({
    relationshipType: r.type,
    targetMeshObjectId: r.targetId,
    targetAnchorValue: r.targetAnchor,
    targetObjectType: r.targetType,
  }));
  return { ...identity(o), displayName: docDisplayName(o), attributes, relationships };
}

/** One mesh object with its attributes and relationships; a tombstone with `state: 'deleted'`; unknown: 404. */
export async function meshObject(id: string) {
  const model = await readyModel();
  const r = model.get(id);
  if (r) {
    // The whole person: its display name, its objects in every connector, who relates to it (lib/api/meshPerson.ts).
    const detail = toDetail(model, r);
    const doc = await getMeshObject(r.id);
    return {
      ...detail,
      displayName: recordDisplayName(model, r),
      relationships: detail.relationships.map((x) => ({ ...x, targetDisplayName: displayNameById(model, x.targetMeshObjectId) ?? x.targetAnchorValue })),
      incomingRelationships: incomingRelationships(model, r.id),
      connectorObjects: doc ? await connectorObjectsOf(doc) : [],
    };
  }
  const t = await readTombstone(id);
  if (!t) throw notFound(`Mesh object '${id}' does not exist.`);
  // A tombstone is linked to no connector and nothing relates to it any more.
  return { ...detailOf(t.state), incomingRelationships: [], connectorObjects: [], state: 'deleted' as const, deletedOn: t.deletedOn, purgeOn: t.purgeOn };
}

/** `POST /mesh/objects/{id}/restore`: the object live again (lib/sync/import/tombstones.ts), audited. */
export async function restoreMesh(id: string, caller: Caller) {
  const doc = await restoreMeshObject(id);
  await recordAudit(caller, 'restore', 'meshObject', doc.id);
  return { ...detailOf(doc), state: 'active' as const };
}
