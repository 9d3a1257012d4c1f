import { plainSnapshot } from '../config/snapshots';
import { storageWriter } from '../config/writer';
import { clearAssignment } from '../instances/assignments';
import { listConnectorRows, readConnectorRow, removeConnectorRow } from '../storage/connectors';
import { completeOperation, noteStepDone, recordOperation, type ConnectorCleanupStep, type PendingOperation } from '../storage/operations';
import { listRules } from '../storage/rules';
import { SYNC_CONNECTOR_CLEANUPS } from '../sync/run/cleanup';

/**
 * The end of a connector's deletion, apart from the request that decides it (lib/api/connectors.ts): its
 * cleanup steps, each safe to repeat, then its row; and the resume of the deletions a crash left. Used by the
 * delete itself, by an approved held delete and a configuration import (lib/api/configApplied.ts), and at start.
 */

/** Every step of a connector's deletion, in order: its rules, its engine assignment, then the sync engine's data. */
const CONNECTOR_CLEANUPS: readonly ConnectorCleanupStep[] = [
  { name: 'rules', run: deleteRulesVersioned },
  { name: 'assignment', run: clearAssignment },
  ...SYNC_CONNECTOR_CLEANUPS,
];

/** Delete every rule of a deleted connector, each with its version (so a restored connector can get them back). */
async function deleteRulesVersioned(connectorId: string): Promise<void> {
  for (const rule of await listRules({ connectorId })) {
    await storageWriter.apply(
      { targetType: 'rule', targetId: rule.ruleId, action: 'delete', before: plainSnapshot(rule), after: null },
      'system:connectorDelete',
    );
  }
}

/** Run every cleanup step (each is safe to repeat), then remove the connector and the operation. */
export async function finishConnectorDelete(op: PendingOperation): Promise<void> {
  for (const step of CONNECTOR_CLEANUPS) {
    await step.run(op.targetId);
    await noteStepDone(op, step.name);
  }
  await removeConnectorRow(op.targetId);
  await completeOperation(op);
}

/**
 * Resume what a crash left: every pending delete whose connector is `deleting` or already gone is finished;
 * a pending row whose connector is still `ready` is a delete that never got acknowledged (the marking
 * failed) and is dropped. A connector left `deleting` without its row (cannot happen with the order above,
 * but is cheap to cover) is finished too.
 */
export async function resumeConnectorDeletes(ops: PendingOperation[]): Promise<number> {
  let finished = 0;
  const seen = new Set<string>();
  for (const op of ops.filter((o) => o.kind === 'deleteConnector')) {
    seen.add(op.targetId);
    const row = await readConnectorRow(op.targetId);
    if (row && row.state === 'ready') {
      await completeOperation(op);
      continue;
    }
    await finishConnectorDelete(op);
    finished++;
  }
  for (const row of await listConnectorRows()) {
    if (row.state === 'deleting' && !seen.has(row.id)) {
      await finishConnectorDelete(await recordOperation('deleteConnector', row.id));
      finished++;
    }
  }
  return finished;
}
