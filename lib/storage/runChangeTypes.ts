/** The items of a run's changes list (lib/storage/runChanges.ts stores them, lib/storage/changeCodec.ts encodes them). */

export const CHANGE_TARGETS = ['mesh', 'connector'] as const;
export const CHANGE_OPERATIONS = ['Add', 'Update', 'Delete', 'Rename'] as const;
export const CHANGE_OUTCOMES = ['applied', 'planned', 'failed', 'drifted'] as const;
export type ChangeTarget = (typeof CHANGE_TARGETS)[number];
export type ChangeOperation = (typeof CHANGE_OPERATIONS)[number];
export type ChangeOutcome = (typeof CHANGE_OUTCOMES)[number];

type Value = string | number | boolean | null | (string | number | boolean | null)[];

/** One change, as GET /runs/{id}/changes shows it. */
export interface RunChange {
  target: ChangeTarget;
  /** The connector of the item's connector-space object (the run's; a target's for an import plan's preview). */
  connectorId: string | null;
  operation: ChangeOperation;
  csObjectId: string | null;
  meshObjectId: string | null;
  anchor: string | null;
  dn: string | null;
  attributes: Record<string, { old: Value; new: Value }>;
  outcome: ChangeOutcome;
  error: string | null;
}

/**
 * A change as stored: the item plus, for a plan, the key of the object in its run (`key`: the anchor of an
 * import, the mesh id of an export) and the fingerprint of its inputs (`fp`), which an apply compares.
 */
export interface StoredChange extends Omit<RunChange, 'connectorId'> {
  /** Stored only when it is not the run's connector (the target items of an import plan). */
  connectorId?: string;
  key?: string;
  fp?: string;
}
