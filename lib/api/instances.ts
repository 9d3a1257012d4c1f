import { recordAudit } from '../audit';
import type { Caller } from '../auth/permissions';
import { notFound } from '../core/errors';
import { assignConnector, unassignConnector } from '../instances/assignments';
import { isInstanceId } from '../instances/config';
import { listInstances, removeInstance, renameInstanceByApi, setPaused } from '../instances/instances';
import { continuousChanged } from '../schedules/continuous';

/** An instance id from a route, lower-cased; a value that cannot be an instance id is a 404. */
export function instanceIdFromRoute(value: string | undefined): string {
  if (!isInstanceId(value ?? '')) throw notFound('The engine instance does not exist.');
  return value!.toLowerCase();
}

export async function listEngineInstances() {
  const items = await listInstances();
  return { items, totalCount: items.length };
}

/** Pause or resume an instance (its runs wait `Queued` while paused). Audited. */
export async function pauseInstance(id: string, paused: boolean, caller: Caller) {
  const instance = await setPaused(id, paused, caller.upn ?? caller.name);
  await recordAudit(caller, paused ? 'pause' : 'resume', 'instance', id);
  return instance;
}

export async function renameInstance(id: string, name: string, caller: Caller) {
  const instance = await renameInstanceByApi(id, name);
  await recordAudit(caller, 'rename', 'instance', id);
  return instance;
}

export async function removeEngineInstance(id: string, caller: Caller): Promise<void> {
  await removeInstance(id);
  await recordAudit(caller, 'remove', 'instance', id);
}

export async function assignConnectorTo(connectorId: string, instanceId: string, caller: Caller) {
  const { assignment } = await assignConnector(connectorId, instanceId.toLowerCase());
  continuousChanged();
  await recordAudit(caller, 'assign', 'connector', connectorId);
  return assignment;
}

export async function unassignConnectorFrom(connectorId: string, caller: Caller): Promise<void> {
  await unassignConnector(connectorId);
  continuousChanged();
  await recordAudit(caller, 'unassign', 'connector', connectorId);
}
