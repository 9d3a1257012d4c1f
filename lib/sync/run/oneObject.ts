import { csCaches } from './runContext';
import type { AttributeValue } from '../../connectors/sdk';
import { sameValue, winner, type MeshObject } from '../../mesh/model';
import { csObjectIdOf, stagedCsObjectId } from '../space/csIds';
import { shownValue } from '../../core/secretAttributes';
import { planOneObject, planStagedObject, type OneObjectGuard, type PlannedExport } from './oneObjectPlan';
import type { JoinDecision } from '../planner';
import type { SpaceObject } from '../space/spaceObjects';

/**
 * One connector-space object, previewed or synchronized on its own: the engine's page pipeline for one object
 * ({@link planOneObject}: the same planning a FullSync page does, join, projection, inbound flows with
 * precedence, composer, references; then every target's export planning), shown as what it changes.
 */

export interface MeshChange {
  attribute: string;
  old: AttributeValue;
  new: AttributeValue;
  /** The rule that gives the new value (the old one's, when the attribute goes). */
  ruleId: string | null;
}

export interface ExportPreview {
  connectorId: string;
  operation: 'Add' | 'Update' | 'Delete' | 'Rename';
  csObjectId: string;
  dn: string | null;
  attributes: Record<string, { old: AttributeValue; new: AttributeValue }>;
}

export interface OneObjectResult {
  csObjectId: string;
  meshObjectId: string | null;
  join: JoinDecision;
  meshChanges: MeshChange[];
  exports: ExportPreview[];
}

/** Attribute-level changes of one mesh object, secret attributes listed with their values masked (lib/core/secretAttributes.ts). */
export function meshChanges(before: MeshObject | null, after: MeshObject | null): MeshChange[] {
  const names = [...new Set([...Object.keys(before?.attributes ?? {}), ...Object.keys(after?.attributes ?? {})])].sort();
  const out: MeshChange[] = [];
  for (const name of names) {
    const old = before?.attributes[name]?.value ?? null;
    const now = after?.attributes[name]?.value ?? null;
    if (sameValue(old, now)) continue;
    const by = (after?.attributes[name] ? after : before)!;
    out.push({ attribute: name, old: shownValue(name, old), new: shownValue(name, now), ruleId: winner(by.contributions[name] ?? [])?.r ?? null });
  }
  return out;
}

/** The API view of an export a target's next export would make (secret attributes' values masked). */
export function exportView(e: PlannedExport): ExportPreview {
  const attributes: ExportPreview['attributes'] = {};
  for (const [name, v] of Object.entries(e.values))
    attributes[name] = { old: e.kind === 'add' ? null : shownValue(name, e.shown[name] ?? null), new: shownValue(name, v) };
  return {
    connectorId: e.connectorId,
    // As the run's changes and the connector space's pending list name it: a move of a directory object is a Rename.
    operation: e.operation,
    csObjectId: e.prev && !e.prev.deleted ? csObjectIdOf(e.connectorId, e.prev) : stagedCsObjectId(e.connectorId, e.meshId),
    dn: e.dn,
    attributes,
  };
}

/**
 * What a sync of the object does now (`apply` false: nothing is written) or did (`apply` true: the mesh and the
 * connector space are written, and every target is marked for its next export). `guard` sees the plan before
 * anything is written and may stop the sync by throwing. A staged add (an object a
 * target has not got yet) has no imported values: only its mesh object's export is planned.
 */
export async function syncSpaceObject(connectorId: string, obj: SpaceObject, apply: boolean, guard?: OneObjectGuard): Promise<OneObjectResult> {
  const info = { runId: `one-${obj.csObjectId}`, connectorId, runType: 'FullSync' as const, dryRun: !apply };
  if (obj.kind === 'staged') {
    const exports = await planStagedObject(connectorId, obj.staged.meshId, apply, guard);
    return {
      csObjectId: obj.csObjectId,
      meshObjectId: obj.staged.meshId,
      join: { outcome: 'joined', ruleId: null, candidates: [obj.staged.meshId] },
      meshChanges: [],
      exports: exports.map(exportView),
    };
  }
  // Applied, the object's sync counts as a run of its connector while it goes (lib/sync/space/csCaches.ts).
  const { plan, mesh, exports } = await planOneObject(info, obj.row, apply, guard).finally(() => csCaches.runEnded(info.runId));
  const own = plan.cs.meshId ? mesh.find((m) => m.id === plan.cs.meshId) : undefined;
  return {
    csObjectId: obj.csObjectId,
    meshObjectId: plan.cs.meshId,
    join: plan.join ?? { outcome: 'none', ruleId: null, candidates: [] },
    meshChanges: own ? meshChanges(own.before, own.after) : [],
    exports: exports.map(exportView),
  };
}
