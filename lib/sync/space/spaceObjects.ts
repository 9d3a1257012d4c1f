import { clearCsExportError, readCsObjects } from './connectorSpace';
import { csObjectIdOf, findCsObjectRef } from './csIds';
import type { CsObject } from '../model';
import { clearStagedAddError, readStagedAdd, type StagedAdd } from '../export/stagedAdds';
import { findSpaceEntry, touchSpaceIndex } from './spaceIndex';
import { markExportDirty } from '../run/state';

/**
 * One connector-space object found by its csObjectId (lib/sync/space/csIds.ts): a row of the connector space (an
 * object the target has), or a staged add (an add the target refused). Used by the Admin API's
 * `/connectors/{id}/space/{csObjectId}` routes.
 */
export type SpaceObject = { kind: 'row'; csObjectId: string; row: CsObject } | { kind: 'staged'; csObjectId: string; staged: StagedAdd };

/** The object with this id, or null (not indexed, gone, or deleted from the target). Two point reads. */
export async function findSpaceObject(connectorId: string, csObjectId: string): Promise<SpaceObject | null> {
  // Ids of failed exports are in the id index; any other id the explorer listed, in its in-memory index.
  let ref: Awaited<ReturnType<typeof findCsObjectRef>> = await findCsObjectRef(connectorId, csObjectId);
  if (!ref) {
    const entry = await findSpaceEntry(connectorId, csObjectId);
    if (!entry) return null;
    ref = entry.stagedMeshId ? { stagedMeshId: entry.stagedMeshId } : { anchor: entry.anchor! };
  }
  if ('anchor' in ref) {
    const row = (await readCsObjects(connectorId, [ref.anchor])).get(ref.anchor);
    if (!row || row.deleted || csObjectIdOf(connectorId, row) !== csObjectId) return null;
    return { kind: 'row', csObjectId, row };
  }
  const staged = await readStagedAdd(connectorId, ref.stagedMeshId);
  return staged && staged.csObjectId === csObjectId ? { kind: 'staged', csObjectId, staged } : null;
}

/**
 * Reset an object's export failure so that the next export tries its change again: the error and its attempts
 * go, the pending change stays, and the object is marked for the next export to look at (an incremental export
 * reads only what changed or was marked). Returns the object as it is now. Safe to repeat.
 */
export async function retrySpaceObject(connectorId: string, obj: SpaceObject): Promise<SpaceObject | null> {
  touchSpaceIndex(connectorId);
  if (obj.kind === 'row') {
    if (!(await clearCsExportError(connectorId, obj.row.anchor))) return null;
    if (obj.row.meshId) await markExportDirty(connectorId, [obj.row.meshId]);
    const row = { ...obj.row };
    delete row.exportError;
    return { ...obj, row };
  }
  if (!(await clearStagedAddError(connectorId, obj.staged.meshId))) return null;
  await markExportDirty(connectorId, [obj.staged.meshId]);
  const staged = { ...obj.staged };
  delete staged.exportError;
  return { ...obj, staged };
}
