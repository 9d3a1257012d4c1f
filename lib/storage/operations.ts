import { isStatus, table } from './tables';

/**
 * Pending operations (table `Operations`): work that an accepted request started and that must be finished
 * even when the process dies half-way, such as the cleanup after a connector delete. PartitionKey `pending`,
 * RowKey `<kind>|<targetId>` (one pending operation per kind and target, so a repeated request does not
 * queue the work twice). A row is removed when its work is done; the start step resumes every row left
 * (lib/api/operations.ts).
 */
export type OperationKind = 'deleteConnector';

export interface PendingOperation {
  kind: OperationKind;
  targetId: string;
  createdOn: string;
  /** Steps already done (informational: every step is safe to re-run). */
  completedSteps: string[];
}

const TABLE = 'Operations';
const PK = 'pending';
const rowKey = (kind: OperationKind, targetId: string) => `${kind}|${targetId}`;

/** Record the operation (an upsert: recording it twice is one operation). */
export async function recordOperation(kind: OperationKind, targetId: string): Promise<PendingOperation> {
  const client = await table(TABLE);
  const op: PendingOperation = { kind, targetId, createdOn: new Date().toISOString(), completedSteps: [] };
  await client.upsertEntity({ partitionKey: PK, rowKey: rowKey(kind, targetId), kind, targetId, createdOn: op.createdOn, completedSteps: '[]' }, 'Replace');
  return op;
}

export async function noteStepDone(op: PendingOperation, step: string): Promise<void> {
  op.completedSteps.push(step);
  const client = await table(TABLE);
  await client
    .updateEntity({ partitionKey: PK, rowKey: rowKey(op.kind, op.targetId), completedSteps: JSON.stringify(op.completedSteps) }, 'Merge')
    .catch((err: unknown) => {
      if (!isStatus(err, 404)) throw err;
    });
}

export async function completeOperation(op: Pick<PendingOperation, 'kind' | 'targetId'>): Promise<void> {
  const client = await table(TABLE);
  try {
    await client.deleteEntity(PK, rowKey(op.kind, op.targetId));
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

export async function listPendingOperations(): Promise<PendingOperation[]> {
  const client = await table(TABLE);
  const out: PendingOperation[] = [];
  for await (const e of client.listEntities<Record<string, unknown>>({ queryOptions: { filter: `PartitionKey eq '${PK}'` } })) {
    out.push({
      kind: String(e.kind) as OperationKind,
      targetId: String(e.targetId),
      createdOn: String(e.createdOn),
      completedSteps: JSON.parse(String(e.completedSteps ?? '[]')) as string[],
    });
  }
  return out;
}

/**
 * One step of a connector's deletion: every area that keeps data per connector (its rules, the sync engine's
 * connector space, its contributions to the mesh, watermarks...) has one, listed in lib/api/connectors.ts. A
 * step receives the connector id, must be safe to run again after a crash (delete what is there, ignore what
 * is gone), and runs after the connector has become invisible to readers and before its row is removed.
 */
export interface ConnectorCleanupStep {
  name: string;
  run(connectorId: string): Promise<void>;
}
