import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { conflict, notFound } from '../core/errors';
import type { OneObjectSync } from '../schemas/connectorSpace';
import { getConnectorRecord } from '../storage/connectors';
import { findActiveRun } from '../storage/runs';
import { oneObjectGate, refuseDeletes } from '../runs/oneObjectGate';
import { syncSpaceObject } from '../sync/run/oneObject';
import { findSpaceObject, type SpaceObject } from '../sync/space/spaceObjects';

/**
 * One connector-space object through the rules on its own: preview (what a sync would do now, writing
 * nothing) and sync (doing it for this object). Both run the engine's own page pipeline (lib/sync/run/oneObject.ts).
 */

async function spaceObject(connectorId: string, csObjectId: string): Promise<SpaceObject> {
  await getConnectorRecord(connectorId);
  const found = await findSpaceObject(connectorId, csObjectId);
  if (!found) throw notFound(`Connector-space object '${csObjectId}' does not exist in connector '${connectorId}'.`);
  return found;
}

/**
 * `POST /connectors/{id}/space/{csObjectId}/preview`: writes nothing (no run, no mesh or connector-space change,
 * no audit record). Answered while a run of the connector is Running too: it shows the state as it is then.
 */
export async function previewSpaceObject(connectorId: string, csObjectId: string): Promise<OneObjectSync> {
  return syncSpaceObject(connectorId, await spaceObject(connectorId, csObjectId), false);
}

/**
 * `POST /connectors/{id}/space/{csObjectId}/sync`: the mesh and the targets' connector spaces are written for this
 * object; the targets' next exports send it. 409 while a run of the connector is Running or Queued (the run may
 * be writing the same object). Audited as `sync` on the `connectorSpaceObject`.
 *
 * Gated (lib/runs/oneObjectGate.ts): a 409 naming the run when the object's change is held for approval, or
 * is in the plan of a run the gate stopped; a 409 when the sync would delete or disable anything. The gate
 * looks at a preview first (nothing written, no cache touched), and the apply checks its own plan for deletes
 * and disables again before it writes.
 */
export async function syncOneSpaceObject(connectorId: string, csObjectId: string, caller: Caller): Promise<OneObjectSync> {
  const obj = await spaceObject(connectorId, csObjectId);
  const active = await findActiveRun(connectorId);
  if (active && active.status !== 'AwaitingApproval') throw conflict('A run of this connector is Running or Queued; sync the object when it has finished.');
  await syncSpaceObject(connectorId, obj, false, oneObjectGate(connectorId, csObjectId));
  if (active)
    throw conflict(
      `Run ${active.runId} of this connector is AwaitingApproval (requested by ${active.approval?.requestedBy ?? active.trigger.actorUpn ?? 'an unknown caller'}): it holds the connector until an Admin approves or rejects it; nothing was synchronized.`,
    );
  const result = await syncSpaceObject(connectorId, obj, true, refuseDeletes(connectorId));
  await recordAudit(caller, 'sync', 'connectorSpaceObject', csObjectId);
  return { ...result, applied: true };
}
