import { randomUUID } from 'node:crypto';
import type { ConnectorObject } from '../../connectors/sdk';
import { conflict, notFound } from '../../core/errors';
import { writeHistory } from '../../mesh/history';
import { cloneMeshObject, type MeshObject } from '../../mesh/model';
import { commitMeshWrite, getMeshObject } from '../../mesh/store';
import { sharedTombstoneIndex } from '../../mesh/tombstoneIndex';
import { getTombstone, getTombstones, type Tombstone } from '../../mesh/tombstones';
import { readCsObjects } from '../space/connectorSpace';
import type { CsObject } from '../model';
import { tombstonesToLoad, type WorkingSet } from '../planner';
import { cancelLeavers } from '../leavers';
import type { RuleSet } from '../rules';

/**
 * Tombstones seen from the sync engine: which tombstones a page's objects may come back to (read before
 * planning, lib/sync/planner.ts brings them back), and the Admin's restore of one. A mesh object that comes
 * back keeps its id, its creation and its history; it is linked again only to the targets whose
 * connector-space object is still linked to it with no deprovisioning started (the other targets see it as
 * new: a deprovisioning waiting for its grace is cancelled by the next export, lib/sync/deprovisioning.ts, and
 * a target whose object is gone is staged to provision it again).
 */

/**
 * A tombstone's state with its links reconciled with the connector spaces: a link stays only where that
 * connector's object is there, still linked to this id, and not being deprovisioned.
 */
export async function reconciledState(state: MeshObject): Promise<MeshObject> {
  const doc = cloneMeshObject(state);
  const keep = new Set<string>();
  await Promise.all(
    Object.entries(state.links).map(async ([c, anchor]) => {
      const row: CsObject | undefined = (await readCsObjects(c, [anchor]).catch(() => new Map<string, CsObject>())).get(anchor);
      if (row && !row.deleted && row.meshId === state.id && !row.deprovisioned) keep.add(c);
    }),
  );
  for (const c of Object.keys(doc.links)) if (!keep.has(c)) delete doc.links[c];
  if (doc.provisioned) {
    doc.provisioned = doc.provisioned.filter((c) => keep.has(c));
    if (!doc.provisioned.length) delete doc.provisioned;
  }
  return doc;
}

/**
 * Before planning a page: the tombstones its objects may come back to (lib/sync/planner.ts
 * `tombstonesToLoad`), read and reconciled into the working set. Nothing is read when there are no tombstones.
 */
export async function loadPageTombstones(
  ws: WorkingSet,
  rules: RuleSet,
  items: readonly { object: ConnectorObject | null; prev: CsObject | undefined }[],
): Promise<number> {
  if (!rules.projections.length) return 0;
  const index = await sharedTombstoneIndex();
  if (!index.size) return 0;
  ws.tombstones = index;
  const ids = new Set<string>();
  for (const it of items) for (const id of tombstonesToLoad(rules, index, it.object, it.prev)) ids.add(id);
  if (!ids.size) return 0;
  const found = await getTombstones(ids);
  ws.loadTombstones(await Promise.all([...found.values()].map((t) => reconciledState(t.state))));
  return found.size;
}

/** A tombstone as the API shows it (the state, when it was deleted and when it goes). */
export async function readTombstone(id: string): Promise<Tombstone | null> {
  return getTombstone(id);
}

/**
 * `POST /mesh/objects/{id}/restore`: the tombstone back as a live object with its attributes as they were (every
 * contribution kept), recorded in its history as `Restored`, and written to the change feed, so that the
 * targets' next exports provision it again (or cancel a deprovisioning waiting for its grace). A live object: 409;
 * unknown (or purged): 404.
 */
export async function restoreMeshObject(id: string): Promise<MeshObject> {
  if (await getMeshObject(id)) throw conflict(`Mesh object '${id}' is not deleted: only a deleted object can be restored.`);
  const t = await getTombstone(id);
  if (!t) throw notFound(`Mesh object '${id}' does not exist (a deleted object is kept until its purge, then it is gone).`);
  const now = new Date().toISOString();
  const doc = await reconciledState(t.state);
  doc.updatedOn = now;
  // Upserted, not inserted: two restores at once both succeed and leave the same object.
  await commitMeshWrite({ upserts: [doc], deletes: [], revived: [doc.id] });
  await writeHistory(randomUUID(), t.connector ?? Object.keys(t.state.links)[0] ?? '', now, [{ id: doc.id, before: null, after: doc, restored: true }]);
  await cancelLeavers([doc.id]);
  return doc;
}
