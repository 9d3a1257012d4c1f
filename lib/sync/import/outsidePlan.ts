import { canonicalJsonOf } from '../../config/canonical';
import type { ConnectorObject } from '../../connectors/sdk';
import type { MeshObject } from '../../mesh/model';
import type { CsObject } from '../model';
import { planImport, WorkingSet, type IndexView, type ObjectPlan, type PlanInput } from '../planner';

/**
 * Applying a plan: the objects of a page the plan does not list (new in the source since the plan, or changed
 * only in the connector space when it was made). Each is planned now, on a copy of the page's mesh objects
 * that nothing is written from. One whose plan changes no mesh object and no other connector-space object (a
 * disconnector staying one or leaving the source, a joined object whose flows give the mesh the values it
 * has) is recorded in the connector space by the apply: the plan's promise is about the mesh, and the
 * connector space must hold every object of the source (the orphan report, correlation). Any other (it would
 * project, join, leave its mesh object, flow new values, fail) is left for the next run, as before.
 */
export interface OutsideObject {
  anchor: string;
  object: ConnectorObject | null;
  hash: string;
  prev: CsObject | undefined;
}

/** The plans of the objects that the apply records, by their position in `objects`; the others are left out. */
export function planOutside(input: Omit<PlanInput, 'ws'>, ws: WorkingSet, objects: readonly OutsideObject[]): Map<number, ObjectPlan> {
  const out = new Map<number, ObjectPlan>();
  if (!objects.length) return out;
  const scratch = new WorkingSet(readOnly(ws.index));
  for (const [id, doc] of ws.docs) {
    scratch.docs.set(id, doc);
    scratch.before.set(id, ws.before.get(id) ?? null);
  }
  objects.forEach((o, i) => {
    const plan = planImport({ ...input, ws: scratch }, o.anchor, o.object, o.hash, o.prev);
    if (csOnly(plan, o.prev, scratch)) out.set(i, plan);
    // What a left-out object changed is put back, so that the next object is planned on the page's state.
    for (const id of scratch.dirty) {
      if (ws.docs.has(id)) scratch.docs.set(id, ws.docs.get(id)!);
      else scratch.docs.delete(id);
    }
    scratch.dirty.clear();
  });
  return out;
}

/** True when an object's plan changes its connector-space row only (see {@link planOutside}). */
function csOnly(plan: ObjectPlan, prev: CsObject | undefined, scratch: WorkingSet): boolean {
  if (plan.outcome === 'error' || plan.error || plan.followUps.length) return false;
  const meshBefore = prev && !prev.deleted ? (prev.meshId ?? null) : null;
  const meshAfter = plan.cs.deleted ? null : (plan.cs.meshId ?? null);
  if (meshBefore !== meshAfter) return false;
  // A joined object whose DN moved is a Rename of its mesh object in a plan (and references to it resolve again).
  if (meshAfter && (prev?.dn ?? null) !== (plan.cs.dn ?? null)) return false;
  for (const id of scratch.dirty) {
    const before = scratch.before.get(id);
    const after = scratch.get(id);
    if (!before || !after || meshState(before) !== meshState(after)) return false;
  }
  return true;
}

/** A mesh object as a text, less what planning it again always renews (its `updatedOn`, the order of contributions). */
function meshState(doc: MeshObject): string {
  const { updatedOn: _updatedOn, contributions, ...rest } = doc;
  const sorted: Record<string, MeshObject['contributions'][string]> = {};
  for (const [name, list] of Object.entries(contributions)) sorted[name] = [...list].sort((a, b) => (a.c < b.c ? -1 : a.c > b.c ? 1 : 0));
  return canonicalJsonOf({ ...rest, contributions: sorted });
}

/** The page's index for planning that is not applied: lookups as the page sees them, changes not kept. */
function readOnly(index: IndexView): IndexView {
  return {
    find: (by, key) => index.find(by, key),
    ...(index.entries ? { entries: (by: string) => index.entries!(by) } : {}),
    get generation() {
      return index.generation;
    },
    info: (id) => index.info(id),
    waiting: (by, key) => index.waiting(by, key),
    incoming: (id) => index.incoming(id),
    apply: () => undefined,
  };
}
