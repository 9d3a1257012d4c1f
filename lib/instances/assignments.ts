import { badRequest, conflict, notFound } from '../core/errors';
import { deleteAssignment, getAssignment, insertAssignment, setAssignmentInstanceName, type Assignment } from '../storage/assignments';
import { connectorExists } from '../storage/connectors';
import { getInstance } from '../storage/instances';

/**
 * Connector assignments: which engine instance runs a connector's imports and exports.
 *
 * Rules: a connector is assigned to at most one instance. Assigning it to the instance it has is a no-op
 * (200); to another instance while assigned is a 409 (unassign first). Two concurrent assigns of one
 * connector to different instances: the assignment row is created with an insert, so exactly one succeeds
 * and the other gets the 409. Unassigning is idempotent.
 */

/** The API's view of an assignment (the body of `PUT /connectors/{id}/instance`). */
export interface AssignmentView {
  connectorId: string;
  instanceId: string;
  instanceName: string;
  assignedOn: string;
}

const view = (a: Assignment): AssignmentView => ({
  connectorId: a.connectorId,
  instanceId: a.instanceId,
  instanceName: a.instanceName,
  assignedOn: a.assignedOn,
});

/** The id of the instance the connector is assigned to, or null (also when that instance was removed). */
export async function assignmentOf(connectorId: string): Promise<string | null> {
  const a = await getAssignment(connectorId);
  if (!a) return null;
  return (await getInstance(a.instanceId)) ? a.instanceId : null;
}

/** Drop the connector's assignment, if any (connector delete). Idempotent. */
export async function clearAssignment(connectorId: string): Promise<void> {
  await deleteAssignment(connectorId);
}

async function requireConnector(connectorId: string): Promise<void> {
  if (!(await connectorExists(connectorId))) throw notFound(`Connector '${connectorId}' does not exist.`);
}

const unknownInstance = () =>
  badRequest('The engine instance in the request does not exist.', [{ path: '/instanceId', message: 'is not a registered engine instance' }]);

/**
 * Assign a connector to an instance. 404 for an unknown connector; 400 (`/instanceId`) for an unknown
 * instance; 409 when the connector is assigned to another instance. `changed` is false when it was assigned
 * to this instance already.
 */
export async function assignConnector(connectorId: string, instanceId: string): Promise<{ assignment: AssignmentView; changed: boolean }> {
  await requireConnector(connectorId);
  const instance = await getInstance(instanceId);
  if (!instance) throw unknownInstance();
  const existing = await getAssignment(connectorId);
  if (existing) {
    if (existing.instanceId === instanceId) return { assignment: view(existing), changed: false };
    // An assignment to a removed instance (its removal was interrupted) does not hold the connector.
    if (await getInstance(existing.instanceId)) throw conflict('The connector is assigned to another engine instance; unassign it first.');
    await deleteAssignment(connectorId, existing.etag);
  }
  let inserted: Assignment;
  try {
    inserted = await insertAssignment(connectorId, instanceId, instance.name);
  } catch (err) {
    const winner = await getAssignment(connectorId);
    if (winner?.instanceId === instanceId) return { assignment: view(winner), changed: false };
    if (winner) throw conflict('The connector is assigned to another engine instance; unassign it first.');
    throw err;
  }
  // The instance or the connector may have gone (removal, delete) or been renamed while we wrote.
  const after = await getInstance(instanceId);
  if (!after || !(await connectorExists(connectorId))) {
    await deleteAssignment(connectorId, inserted.etag);
    if (!after) throw unknownInstance();
    throw notFound(`Connector '${connectorId}' does not exist.`);
  }
  if (after.name !== inserted.instanceName) await setAssignmentInstanceName(connectorId, instanceId, after.name);
  return { assignment: view((await getAssignment(connectorId)) ?? inserted), changed: true };
}

/** Unassign a connector (404 for an unknown connector; fine when it is not assigned). True when it was. */
export async function unassignConnector(connectorId: string): Promise<boolean> {
  await requireConnector(connectorId);
  return deleteAssignment(connectorId);
}
