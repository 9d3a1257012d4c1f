import type { AttributeValue, Connector, ExportChange, ExportResult } from '../../connectors/sdk';
import type { MeshObject } from '../../mesh/model';
import type { PlanIndex } from '../../plans/planIndex';
import { connectorItems, exportFingerprint, type ExportItem } from '../../plans/record';
import type { ChangeOutcome, StoredChange } from '../../storage/runChanges';
import { csObjectIdOf } from '../space/csIds';
import type { CsObject } from '../model';

/**
 * An export's side of the run's changes (lib/plans/record.ts): the items of an export page's changes, as
 * planned (a dry run, a run over its deletes threshold) or as the target answered them, and the drift rule of an
 * export applying a plan. Keys: the mesh id of an object exported; `cs:<anchor>` for the deprovisioning of a
 * target object whose mesh object is gone.
 */

/** One change of an export: the target's object before it (if any), the change, the values it writes. */
export interface ExportRecord {
  key: string;
  change: ExportChange;
  doc: MeshObject | null;
  prev: CsObject | undefined;
  values: Record<string, AttributeValue>;
}

/** A deprovisioning's fingerprint: the target object as last seen, and that its mesh object is gone. */
export const goneFingerprint = (row: CsObject): string => `gone|${row.hash}|${row.meshId ?? ''}`;

export function fingerprintOf(r: ExportRecord): string {
  return r.doc ? exportFingerprint(r.doc, r.change.kind, r.values) : goneFingerprint(r.prev!);
}

/**
 * The items of these changes. `results` (one per change, in order): as the target answered; without them, the
 * changes as planned (`planned`, with fingerprints and the DN an add would get when the connector can tell).
 */
export function exportItems(
  connectorId: string,
  connector: Pick<Connector, 'plannedDn'> | null,
  records: readonly ExportRecord[],
  results?: readonly ExportResult[],
): StoredChange[] {
  const items: ExportItem[] = records.map((r, i) => {
    const res = results?.[i];
    const outcome: ChangeOutcome = !results ? 'planned' : res?.status === 'error' ? 'failed' : 'applied';
    const prev = r.prev && !r.prev.deleted ? r.prev : undefined;
    const anchor = res?.status === 'success' ? res.anchor : (prev?.anchor ?? null);
    const dnAfter =
      res?.status === 'success' ? (res.dn ?? prev?.dn ?? null) : r.change.kind === 'add' ? (connector?.plannedDn?.(r.change) ?? null) : (prev?.dn ?? null);
    return {
      kind: r.change.kind,
      key: r.key,
      meshObjectId: r.doc?.id ?? prev?.meshId ?? null,
      csObjectId: prev ? csObjectIdOf(connectorId, prev) : anchor ? csObjectIdOf(connectorId, { anchor }) : null,
      anchor,
      dnBefore: prev?.dn ?? null,
      dnAfter: r.change.kind === 'delete' ? null : dnAfter,
      shown: prev ? { ...prev.attributes, ...(prev.exported ?? {}) } : {},
      values: r.values,
      outcome,
      ...(res?.status === 'error' ? { error: res.error.message } : {}),
      fp: outcome === 'planned' ? fingerprintOf(r) : '',
    };
  });
  return connectorItems(items);
}

/**
 * The drift rule on an export's changes (a run applying a plan): the changes to apply, the drifted items, and
 * how many were left out (drifted, or not in the plan).
 */
export function filterByPlan<T>(
  plan: PlanIndex,
  changes: readonly T[],
  recordOf: (c: T) => ExportRecord,
): { kept: T[]; drifted: StoredChange[]; leftOut: number } {
  const kept: T[] = [];
  const drifted: StoredChange[] = [];
  for (const c of changes) {
    const r = recordOf(c);
    const verdict = plan.verdict(r.key, fingerprintOf(r));
    if (verdict === 'apply') kept.push(c);
    else if (verdict === 'drifted') drifted.push(plan.drifted(r.key, 'Its mesh object or the target object changed since the plan: not exported.'));
  }
  return { kept, drifted, leftOut: changes.length - kept.length };
}
