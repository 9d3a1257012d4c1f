import { conflict } from '../core/errors';
import { readConnectorRow } from '../storage/connectors';
import { readRunChanges } from '../storage/runChanges';
import { recentRuns, type RunStatus, type StoredRun } from '../storage/runs';
import type { OneObjectGuard } from '../sync/run/oneObjectPlan';

/**
 * The gate of a one-object sync (`POST /connectors/{id}/space/{csObjectId}/sync`): a sync of one object must
 * not go around the thresholds and approval its connector's runs pass.
 *
 * 1. Held: the object's connector, or a target its sync would export to, has a run AwaitingApproval whose plan
 *    changes the object (by its connector-space object or its mesh object): 409 naming the run, its connector
 *    and who requested it. The run's approval decides that change.
 * 2. Stopped by the gate: the object is in the plan of the newest run of that connector that the gate stopped
 *    (rejected, expired, or cancelled while it waited for approval), and no run of that connector has passed
 *    the gate since (a run that completed, with no approval needed or approved): 409 the same way. Else a
 *    parked run could be cancelled and its plan applied object by object.
 * 3. Deletes and disables: a sync that would delete a mesh object, or make a target delete or disable its
 *    object (a deprovisioning), is refused (409): those go through a run of the connector, where the thresholds
 *    and approval apply.
 *
 * The preview (read-only) is not gated. The look-up reads the connector's recent runs (newest first, at most
 * {@link LOOK_BACK}, stopping at the first run that passed the gate) and the plan of a run it finds, once per
 * process and run ({@link plannedObjects}); never anything per object of a run.
 */

/** Runs looked at, newest first, per connector. */
export const LOOK_BACK = 200;
const GATE_STATUSES: readonly RunStatus[] = ['AwaitingApproval', 'Completed', 'CompletedWithErrors', 'Rejected', 'Cancelled'];

const passedGate = (r: StoredRun) => r.status === 'Completed' || r.status === 'CompletedWithErrors';
const stoppedByGate = (r: StoredRun) => r.status === 'Rejected' || (r.status === 'Cancelled' && !!r.approval && !r.approvedBy);

interface Planned {
  csObjectIds: Set<string>;
  meshIds: Set<string>;
}

const planned = new Map<string, Promise<Planned>>();
/** Plans kept in memory (a held run's plan does not change while it waits; an ended run's never does). */
const KEEP = 4;

/** The objects a run planned and did not apply (outcome `planned`), by connector-space and mesh id. */
export function plannedObjects(runId: string): Promise<Planned> {
  let p = planned.get(runId);
  if (!p) {
    p = (async () => {
      const out: Planned = { csObjectIds: new Set(), meshIds: new Set() };
      for await (const page of readRunChanges(runId))
        for (const c of page) {
          if (c.outcome !== 'planned') continue;
          if (c.csObjectId) out.csObjectIds.add(c.csObjectId);
          if (c.meshObjectId) out.meshIds.add(c.meshObjectId);
        }
      return out;
    })();
    p.catch(() => planned.delete(runId));
    planned.set(runId, p);
    if (planned.size > KEEP) planned.delete(planned.keys().next().value!);
  }
  return p;
}

export interface ObjectKeys {
  csObjectIds: readonly string[];
  meshIds: readonly string[];
}

async function inPlan(run: StoredRun, keys: ObjectKeys): Promise<boolean> {
  const p = await plannedObjects(run.runId);
  return keys.csObjectIds.some((id) => p.csObjectIds.has(id)) || keys.meshIds.some((id) => p.meshIds.has(id));
}

export interface Hold {
  run: StoredRun;
  kind: 'held' | 'stopped';
}

/** The run of `connectorId` that holds the object's change (rules 1 and 2 of the module comment), or null. */
export async function holdOf(connectorId: string, keys: ObjectKeys): Promise<Hold | null> {
  for await (const run of recentRuns(connectorId, GATE_STATUSES, LOOK_BACK)) {
    if (run.dryRun) continue;
    if (run.status === 'AwaitingApproval') {
      if (await inPlan(run, keys)) return { run, kind: 'held' };
      continue;
    }
    if (passedGate(run)) return null;
    if (stoppedByGate(run)) return (await inPlan(run, keys)) ? { run, kind: 'stopped' } : null;
  }
  return null;
}

const requester = (run: StoredRun) => run.approval?.requestedBy ?? run.trigger.actorUpn ?? 'an unknown caller';

function stopText(run: StoredRun): string {
  if (run.status === 'Cancelled') return 'cancelled while it waited for approval';
  return run.error?.startsWith('Rejected by ') ? `rejected by ${run.error.slice('Rejected by '.length).split(':')[0]}` : 'rejected (its approval expired)';
}

async function nameOf(connectorId: string): Promise<string> {
  return (await readConnectorRow(connectorId))?.name ?? connectorId;
}

/** The 409 of a held object. */
export async function holdRefusal(csObjectId: string, hold: Hold): Promise<Error> {
  const { run } = hold;
  const what = `run ${run.runId} of connector '${await nameOf(run.connectorId)}' (${run.runType}, requested by ${requester(run)})`;
  if (hold.kind === 'held')
    return conflict(
      `The change of connector-space object '${csObjectId}' is held for approval: ${what} plans it and is AwaitingApproval. Nothing was synchronized: an Admin approves or rejects that run; a one-object sync does not go around it.`,
    );
  return conflict(
    `The change of connector-space object '${csObjectId}' is in the plan of ${what}, which the gate stopped (${stopText(run)}), and no run of that connector has passed the gate since. Nothing was synchronized: the change goes through a run of the connector, where the thresholds and approval apply.`,
  );
}

/**
 * The guard of a one-object sync's preview pass: rules 1 to 3. `connectorId` is the object's connector; the
 * targets looked at are those the sync would export to.
 */
export function oneObjectGate(connectorId: string, csObjectId: string): OneObjectGuard {
  return async (planned) => {
    await refuseDeletes(connectorId)(planned);
    const keys: ObjectKeys = { csObjectIds: [csObjectId], meshIds: planned.mesh.map((m) => m.id) };
    const connectors = [connectorId, ...new Set(planned.exports.map((e) => e.connectorId).filter((id) => id !== connectorId))];
    for (const id of connectors) {
      const hold = await holdOf(id, { csObjectIds: id === connectorId ? keys.csObjectIds : [], meshIds: keys.meshIds });
      if (hold) throw await holdRefusal(csObjectId, hold);
    }
  };
}

/** Rule 3 alone: also the guard of the sync's apply (for a plan that changed since its preview). */
export function refuseDeletes(connectorId: string): OneObjectGuard {
  return async ({ mesh, exports }) => {
    const meshDeletes = mesh.filter((m) => m.before && !m.after).map((m) => m.id);
    const gone = exports.filter((e) => e.kind === 'delete' || e.deprovisioning);
    if (!meshDeletes.length && !gone.length) return;
    const parts: string[] = [];
    const runs = new Set<string>();
    if (meshDeletes.length) {
      parts.push(`delete mesh object${meshDeletes.length > 1 ? 's' : ''} ${meshDeletes.map((id) => `'${id}'`).join(', ')}`);
      runs.add(`an import or FullSync of connector '${await nameOf(connectorId)}'`);
    }
    for (const e of gone) {
      const verb = e.kind === 'delete' || e.deprovisioning === 'delete' ? 'delete' : 'disable';
      const target = await nameOf(e.connectorId);
      parts.push(`${verb} ${e.dn ? `'${e.dn}'` : 'its object'} in connector '${target}'`);
      runs.add(`an export of connector '${target}'`);
    }
    throw conflict(
      `A one-object sync does not delete or disable: this one would ${parts.join(', and ')}. Nothing was synchronized: deletes and disables go through a run (${[...runs].join('; ')}), where the thresholds and approval apply.`,
    );
  };
}
