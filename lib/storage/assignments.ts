import { AppError } from '../core/errors';
import { isStatus, odata, table } from './tables';

/**
 * Connector assignments repository (table `ConnectorAssignments`): which engine instance runs a connector.
 *
 * One row per assigned connector, PartitionKey `assignment`, RowKey the connector id:
 * `{ instanceId, instanceName, assignedOn }`. The instance name is denormalized for display and kept current
 * by the rename cascade. The partition is small (one row per connector, bounded by the license), so "all
 * connectors of instance X" is one partition query.
 *
 * Concurrency: `insertAssignment` is an insert, which fails atomically when the connector already has a
 * row, so of two concurrent assigns to different instances exactly one succeeds.
 */
export interface Assignment {
  connectorId: string;
  instanceId: string;
  instanceName: string;
  assignedOn: string;
  etag: string;
}

const TABLE = 'ConnectorAssignments';
const PK = 'assignment';

interface AssignmentEntity {
  instanceId: string;
  instanceName: string;
  assignedOn: string;
}

function fromEntity(e: AssignmentEntity & { rowKey?: string; etag: string }): Assignment {
  return { connectorId: e.rowKey!, instanceId: e.instanceId, instanceName: e.instanceName, assignedOn: e.assignedOn, etag: e.etag };
}

export async function getAssignment(connectorId: string): Promise<Assignment | null> {
  const client = await table(TABLE);
  try {
    return fromEntity(await client.getEntity<AssignmentEntity>(PK, connectorId));
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** Insert the connector's assignment; a 409 ConflictError when it already has one (to any instance). */
export async function insertAssignment(connectorId: string, instanceId: string, instanceName: string): Promise<Assignment> {
  const client = await table(TABLE);
  try {
    await client.createEntity<AssignmentEntity>({ partitionKey: PK, rowKey: connectorId, instanceId, instanceName, assignedOn: new Date().toISOString() });
  } catch (err) {
    if (isStatus(err, 409)) throw new AppError('conflict', 'The connector is already assigned.');
    throw err;
  }
  return (await getAssignment(connectorId))!;
}

/** Delete the connector's assignment; with `etag`, only that version of it. True when a row was deleted. */
export async function deleteAssignment(connectorId: string, etag?: string): Promise<boolean> {
  const client = await table(TABLE);
  try {
    await client.deleteEntity(PK, connectorId, { etag: etag ?? '*' });
    return true;
  } catch (err) {
    if (isStatus(err, 404) || isStatus(err, 412)) return false;
    throw err;
  }
}

/** Every assignment, or those of one instance. */
export async function listAssignments(instanceId?: string): Promise<Assignment[]> {
  const client = await table(TABLE);
  const filter = `PartitionKey eq ${odata(PK)}` + (instanceId ? ` and instanceId eq ${odata(instanceId)}` : '');
  const out: Assignment[] = [];
  for await (const e of client.listEntities<AssignmentEntity>({ queryOptions: { filter } }))
    out.push(fromEntity(e as AssignmentEntity & { rowKey?: string; etag: string }));
  return out;
}

/**
 * Set the denormalized instance name on a connector's assignment when it is still assigned to `instanceId`
 * (rename cascade). Idempotent, and conditional on the row's ETag, so it never relabels an assignment that
 * moved to another instance meanwhile.
 */
export async function setAssignmentInstanceName(connectorId: string, instanceId: string, instanceName: string): Promise<void> {
  const client = await table(TABLE);
  for (;;) {
    const a = await getAssignment(connectorId);
    if (!a || a.instanceId !== instanceId || a.instanceName === instanceName) return;
    try {
      await client.updateEntity({ partitionKey: PK, rowKey: connectorId, instanceName }, 'Merge', { etag: a.etag });
      return;
    } catch (err) {
      if (!isStatus(err, 412) && !isStatus(err, 404)) throw err;
    }
  }
}
