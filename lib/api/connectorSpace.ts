import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { notFound } from '../core/errors';
import type { ConnectorSpaceObject } from '../schemas/connectorSpace';
import { getConnectorRecord } from '../storage/connectors';
import type { PendingExport } from '../sync/model';
import { findSpaceObject, retrySpaceObject, type SpaceObject } from '../sync/spaceObjects';

/**
 * The connector space as the Admin API sees it: one object by its csObjectId (lib/sync/csIds.ts), and the
 * retry of a change the target refused.
 */

const OPERATIONS = { add: 'Add', update: 'Update', delete: 'Delete', rename: 'Rename' } as const;

function pendingView(p: PendingExport | null | undefined, fallbackOn: string): ConnectorSpaceObject['pendingExport'] {
  if (!p) return null;
  return { operation: OPERATIONS[p.kind], attributeCount: Object.keys(p.attributes).length, stagedOn: p.stagedOn ?? fallbackOn };
}

/** The API item of a connector-space object (a row, or a staged add: no anchor yet). */
export function spaceItem(obj: SpaceObject): ConnectorSpaceObject {
  if (obj.kind === 'staged') {
    const s = obj.staged;
    return {
      csObjectId: obj.csObjectId,
      anchor: null,
      dn: null,
      objectType: s.objectType,
      meshObjectId: s.meshId,
      pendingExport: pendingView(s.pendingExport, s.updatedOn),
      awaitingConfirmation: false,
      error: s.exportError ?? null,
      lastImportedOn: null,
      lastExportedOn: null,
    };
  }
  const r = obj.row;
  return {
    csObjectId: obj.csObjectId,
    anchor: r.anchor,
    dn: r.dn ?? null,
    objectType: r.objectType,
    meshObjectId: r.meshId,
    pendingExport: pendingView(r.pendingExport, r.updatedOn),
    awaitingConfirmation: !!r.exported && Object.keys(r.exported).length > 0,
    error: r.exportError ?? null,
    lastImportedOn: r.importedOn ?? null,
    lastExportedOn: r.exportedOn ?? null,
  };
}

/**
 * `POST /connectors/{id}/space/{csObjectId}/retry`: reset the object's export failure (attempts and error) so
 * that the next export tries its pending change again. 404 for an unknown connector or object. Audited as
 * `retry` on the `connectorSpaceObject` (its csObjectId, which names one connector's object).
 */
export async function retryConnectorSpaceObject(connectorId: string, csObjectId: string, caller: Caller): Promise<ConnectorSpaceObject> {
  await getConnectorRecord(connectorId);
  const missing = () => notFound(`Connector-space object '${csObjectId}' does not exist in connector '${connectorId}'.`);
  const found = await findSpaceObject(connectorId, csObjectId);
  if (!found) throw missing();
  const now = await retrySpaceObject(connectorId, found);
  if (!now) throw missing();
  await recordAudit(caller, 'retry', 'connectorSpaceObject', csObjectId);
  return spaceItem(now);
}
