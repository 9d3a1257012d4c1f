import type { AttributeValue } from '../../connectors/sdk';
import type { MeshObject } from '../../mesh/model';
import type { CompiledRule } from '../rules';
import { basisOf, uniqueRulesOf } from './candidates';

/**
 * The unique values of one export page, as lib/sync/unique/resolve.ts chose (and reserved) them before the page
 * is planned: the export planner writes them in place of evaluating the rule, and an object with an error (every
 * candidate taken, a candidate's script failed) gets that error and no change: it is held, not added half made.
 */
export interface UniqueUse {
  attribute: string;
  pool: string;
  /** The normalised value (the reservation's key). */
  key: string;
  value: string;
  ruleId: string;
}

export interface UniqueAssignments {
  /** Mesh object id -> target attribute -> value. */
  values: Map<string, Record<string, string>>;
  /** Mesh object id -> why it has no value (a RuleEvaluationError naming the rule). */
  errors: Map<string, Error>;
  /** Mesh object id -> the values an add of it carries (for the target's "already exists"). */
  used: Map<string, UniqueUse[]>;
}

export const noAssignments = (): UniqueAssignments => ({ values: new Map(), errors: new Map(), used: new Map() });

/**
 * The value a unique rule gives `doc` in a plan: its assignment, its error (thrown), or, where nothing was
 * resolved (a preview that reserves nothing), the first candidate's value.
 */
export function assignedValue(
  assignments: UniqueAssignments | undefined,
  fr: CompiledRule,
  doc: MeshObject,
  scope: { source: unknown; object: Record<string, unknown>; related: Record<string, unknown> },
): AttributeValue {
  const attribute = fr.rule.targetAttribute ?? '';
  const err = assignments?.errors.get(doc.id);
  if (err) throw err;
  const v = assignments?.values.get(doc.id)?.[attribute];
  if (v !== undefined) return v;
  const [c] = uniqueRulesOf([fr]);
  return basisOf(c, scope) || null;
}
