import type { AttributeValue } from '../../connectors/sdk';
import { AD_DISABLED, dueAt, isDue, isPseudoAttribute, showsDisableValues, type DeprovisioningSettings } from '../deprovisioning';
import type { CsObject } from '../model';

/**
 * Orphans (docs/orphans.md): objects of an export target's connector space that are joined to no active
 * identity. Pure: the report (./report.ts) loads the rows and what they are joined to, and the sweep
 * (./sweep.ts) applies what {@link sweepTargets} picks.
 *
 * - `disconnector`: joined to no mesh object (an account made in the target outside the engine, or a leaver the
 *   deprovisioning left as it was, action `none`);
 * - `tombstone`: joined to a deleted mesh object (a tombstone) whose deprovisioning grace is over, and not
 *   deprovisioned yet (the target's export has not run since);
 * - `overdue`: its deprovisioning is pending and its due time has passed (the export that applies it has not run);
 * - `gone`: joined to a mesh object that no longer exists at all (no tombstone: purged, or deleted before
 *   tombstones were kept).
 *
 * Not orphans: objects joined to a live mesh object (unless overdue), objects whose grace is still running
 * (the deprovisioning will handle them), objects the engine already disabled as leavers, deleted objects, and
 * objects of another object type than the one the target provisions.
 */
export type OrphanReason = 'disconnector' | 'tombstone' | 'overdue' | 'gone';
export const ORPHAN_REASONS: readonly OrphanReason[] = ['disconnector', 'tombstone', 'overdue', 'gone'];

/** Why an orphan is listed but never swept: an explicit disconnector (the correlation `disconnect`), or an Admin's keep mark. */
export type ExclusionReason = 'explicitDisconnector' | 'keep';

/** The object's enabled state in the target as last imported (`unknown`: the target's disable values cannot show it). */
export type TargetState = 'enabled' | 'disabled' | 'unknown';

export interface Exclusion {
  reason: ExclusionReason;
  by: string;
  on: string;
  note: string | null;
}

export interface Orphan {
  row: CsObject;
  reason: OrphanReason;
  /** Since when it is an orphan, as far as the engine knows (see {@link classifyOrphan}). */
  since: string;
  targetState: TargetState;
  excluded: Exclusion | null;
}

export interface OrphanInputs {
  /** The mesh ids (as the rows give them) that are live mesh objects. */
  live: ReadonlySet<string>;
  /** Tombstones' deletion times by lower-cased mesh id. */
  tombstones: ReadonlyMap<string, string>;
  /** Explicit disconnectors (the `ignore` decision) by anchor: who decided it and when. */
  disconnected: ReadonlyMap<string, { by: string; on: string }>;
  /** Keep marks by anchor. */
  keeps: ReadonlyMap<string, { by: string; on: string; note: string | null }>;
  settings: DeprovisioningSettings;
  /** The object type the target provisions (its `objectType`, default `User`). */
  objectType: string;
  now: Date;
}

/** The object's enabled state as last imported: AD's userAccountControl bit 2, else the target's disable values. */
export function targetStateOf(attributes: Record<string, AttributeValue>, settings: DeprovisioningSettings): TargetState {
  const uac = Object.entries(attributes).find(([k]) => k.toLowerCase() === 'useraccountcontrol')?.[1];
  const flags = Number(Array.isArray(uac) ? uac[0] : uac);
  if (uac !== undefined && uac !== null && Number.isInteger(flags)) return flags & 2 ? 'disabled' : 'enabled';
  const compared = Object.keys(settings.disableAttributes).filter((k) => !isPseudoAttribute(k) && k !== AD_DISABLED);
  if (!compared.length) return 'unknown';
  return showsDisableValues(attributes, settings) ? 'disabled' : 'enabled';
}

/**
 * The orphan this row is, or null. `since`: for an overdue deprovisioning its due time; for a tombstone the end
 * of its grace (its `deletedOn` plus `graceDays`); for a disconnector left by the deprovisioning when it was left,
 * else its last import; for a gone mesh object the row's last write.
 */
export function classifyOrphan(row: CsObject, inputs: OrphanInputs): Orphan | null {
  if (row.deleted || row.objectType !== inputs.objectType) return null;
  const m = row.deprovisioned;
  let reason: OrphanReason;
  let since: string;
  if (row.meshId) {
    const tombstone = inputs.tombstones.get(row.meshId.toLowerCase());
    if (m?.state === 'pending' && isDue(m.due, inputs.now)) {
      reason = 'overdue';
      since = m.due!;
    } else if (inputs.live.has(row.meshId)) return null;
    else if (m?.state === 'pending') return null;
    else if (tombstone) {
      const graceEnd = dueAt(new Date(tombstone), inputs.settings.graceDays);
      if (!isDue(graceEnd, inputs.now)) return null;
      reason = 'tombstone';
      since = graceEnd;
    } else {
      reason = 'gone';
      since = row.updatedOn;
    }
  } else {
    // Disabled by the engine as a leaver: handled (the leaver clock follows it), not an orphan.
    if (m?.state === 'disabled') return null;
    reason = 'disconnector';
    since = m?.at ?? row.importedOn ?? row.updatedOn;
  }
  const keep = inputs.keeps.get(row.anchor);
  const ignored = row.meshId ? undefined : inputs.disconnected.get(row.anchor);
  const excluded: Exclusion | null = keep
    ? { reason: 'keep', by: keep.by, on: keep.on, note: keep.note }
    : ignored
      ? { reason: 'explicitDisconnector', by: ignored.by, on: ignored.on, note: null }
      : null;
  return { row, reason, since, targetState: targetStateOf(row.attributes, inputs.settings), excluded };
}

/** The orphans of these rows, in anchor order (code units, as the connector-space list). */
export function classifyOrphans(rows: Iterable<CsObject>, inputs: OrphanInputs): Orphan[] {
  const out: Orphan[] = [];
  for (const row of rows) {
    const o = classifyOrphan(row, inputs);
    if (o) out.push(o);
  }
  return out.sort((a, b) => (a.row.anchor < b.row.anchor ? -1 : a.row.anchor > b.row.anchor ? 1 : 0));
}

/**
 * The rows a sweep changes: every orphan not excluded; with `orphanAction` `disable`, not those already
 * disabled (as last imported, or by the engine while linked).
 */
export function sweepTargets(orphans: readonly Orphan[], settings: DeprovisioningSettings): CsObject[] {
  return orphans
    .filter((o) => !o.excluded)
    .filter((o) => settings.orphanAction === 'delete' || (o.targetState !== 'disabled' && o.row.deprovisioned?.state !== 'disabled'))
    .map((o) => o.row);
}

/**
 * Why this target cannot be swept (null: it can): it is no export target, or it has no way to disable (no
 * disable values) while its sweep disables.
 */
export function sweepRefusal(connectorName: string, settings: DeprovisioningSettings, isTarget: boolean): string | null {
  if (!isTarget) return `${notTarget(connectorName)} Nothing was started.`;
  if (settings.orphanAction === 'disable' && !Object.keys(settings.disableAttributes).length)
    return (
      `Connector '${connectorName}' has no disable action: an orphan sweep disables with the values of config.deprovisioning.disableAttributes, ` +
      `and none are set. Set them (for example { "employeeType": "disabled" }), or set config.deprovisioning.orphanAction to "delete". Nothing was started.`
    );
  return null;
}

/** Why a connector has no orphans: orphans are accounts of a target (a connector with an enabled outbound flow rule). */
export const notTarget = (connectorName: string): string =>
  `Connector '${connectorName}' is not an export target (it has no enabled outbound flow rule): orphans are accounts of a target.`;
