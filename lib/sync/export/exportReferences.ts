import type { AttributeValue } from '../../connectors/sdk';
import type { MeshObject } from '../../mesh/model';
import { attributeValues } from '../planner';
import { referenceValuesFor, type ReferenceKind } from '../references';
import type { RuleSet } from '../rules';

/**
 * Relationships in an export: an outbound FlowRule whose `sourceAttribute` is a relationship type (`manager`,
 * `member`) writes, in the target, each related mesh object's connector-space object there, in the target's
 * own terms: its DN in a directory, its anchor in an SQL table. A related object not (yet) in the target is
 * left out of the value until it is (the next export writes it). Because the value is computed from the
 * target's connector space at each export, a referenced object moved in the target (its DN changed) changes
 * the value of every object that names it.
 *
 * An outbound script also sees `related`: per relationship type, the consolidated attributes of the first
 * object it names (`related.manager.mail`).
 *
 * A name that is both a mesh attribute and a relationship type is read as the relationship.
 *
 * The engine owns a reference attribute it writes in a target: the value is the mesh's relationships from the
 * sources, never merged with what a target's (confirming) import read back of the engine's own writes (the
 * relationships of that type from any connector an outbound flow writes it into), so a changed manager
 * replaces the old one instead of joining it, and a single-valued reference never becomes a list.
 */
export interface ExportRelations {
  /** The outbound rules' source names that are relationship types on this page. */
  readonly types: ReadonlySet<string>;
  /** The connector-side value of relationship `type` of `doc`: a DN or anchor, several for a multi-valued one, or null. */
  valueOf(doc: MeshObject, type: string): AttributeValue;
  /** `related` of an outbound script. */
  relatedOf(doc: MeshObject): Record<string, Record<string, AttributeValue>>;
  /** How many related objects {@link valueOf} left out so far because they are not in the target yet. */
  readonly notInTarget: number;
  /** The mesh objects whose values left such related objects out. */
  readonly missingIn: ReadonlySet<string>;
}

export interface ExportRelationsSources {
  /** The target connector. */
  connectorId: string;
  /** Mesh objects by id (point reads). */
  loadDocs(ids: string[]): Promise<Map<string, MeshObject>>;
  /** The DN of the target connector's connector-space object with this anchor (directories). */
  dnOf(anchor: string): string | undefined;
  /** How the target names the objects it references. */
  targetKind: ReferenceKind;
  /**
   * The connectors an outbound flow writes each relationship type into (every export target of it, this one
   * included): their relationships of that type are what their imports read back of the engine's own writes.
   */
  echoes?: ReadonlyMap<string, ReadonlySet<string>>;
  /**
   * Mesh objects to count as not in the target yet (those the run applying a plan added in its first pass):
   * references to them are left to the second pass, so the first pass computes what the plan's dry run did.
   */
  notYet?: ReadonlySet<string>;
}

const NONE: ExportRelations = { types: new Set(), valueOf: () => null, relatedOf: () => ({}), notInTarget: 0, missingIn: new Set() };

/** Whether the page's outbound rules need relationships at all (no read otherwise). */
export function exportNeedsRelations(rules: RuleSet, docs: readonly MeshObject[], types?: ReadonlySet<string>): boolean {
  if (rules.outbound.some((fr) => usesRelated(fr.script?.source))) return true;
  const all = types ?? relationTypes(rules, docs);
  return rules.outbound.some((fr) => all.has(fr.rule.sourceAttribute ?? ''));
}

const usesRelated = (source: string | undefined) => !!source && /\brelated\b/.test(source);

function relationTypes(rules: RuleSet, docs: readonly MeshObject[]): Set<string> {
  const types = new Set<string>();
  for (const cr of rules.composers) if (cr.rule.relationshipType) types.add(cr.rule.relationshipType);
  for (const d of docs) {
    for (const r of d.relationships) types.add(r.type);
    for (const p of d.pendingReferences) types.add(p.type);
  }
  return types;
}

/** Read what the page's relationship flows and `related` need: the related mesh objects, once each. */
export async function exportRelations(rules: RuleSet, docs: readonly MeshObject[], src: ExportRelationsSources): Promise<ExportRelations> {
  const all = relationTypes(rules, docs);
  if (!exportNeedsRelations(rules, docs, all)) return NONE;
  const types = new Set(rules.outbound.map((fr) => fr.rule.sourceAttribute ?? '').filter((t) => all.has(t)));
  const wantRelated = rules.outbound.some((fr) => usesRelated(fr.script?.source));
  const ids = new Set<string>();
  for (const d of docs) {
    const firstOfType = new Set<string>();
    for (const r of d.relationships) {
      if (isEcho(src, r.type, r.c)) continue;
      if (types.has(r.type)) ids.add(r.targetId);
      else if (wantRelated && !firstOfType.has(r.type)) ids.add(r.targetId);
      firstOfType.add(r.type);
    }
  }
  const targets = await src.loadDocs([...ids]);
  const echo = (type: string, c: string | undefined) => isEcho(src, type, c);
  let notInTarget = 0;
  const missingIn = new Set<string>();
  return {
    types,
    missingIn,
    get notInTarget() {
      return notInTarget;
    },
    valueOf(doc, type) {
      const linkOf = (id: string) => (src.notYet?.has(id) ? undefined : targets.get(id)?.links[src.connectorId]);
      const { values } = referenceValuesFor(doc, type, src.targetKind, linkOf, src.dnOf, (c) => echo(type, c));
      // Owed: a related object not linked in the target, or linked with no DN known there yet (its link written,
      // its connector-space row not: a stop in between). Either way the value leaves it out for now.
      for (const r of doc.relationships) {
        if (r.type !== type || echo(type, r.c)) continue;
        const anchor = linkOf(r.targetId);
        if (anchor !== undefined && (src.targetKind !== 'dn' || src.dnOf(anchor) !== undefined)) continue;
        notInTarget++;
        missingIn.add(doc.id);
      }
      if (!values.length) return null;
      return values.length === 1 && !isMultiValued(doc, type, (c) => echo(type, c)) ? values[0] : values;
    },
    relatedOf(doc) {
      const out: Record<string, Record<string, AttributeValue>> = {};
      if (!wantRelated) return out;
      for (const r of doc.relationships) {
        if (out[r.type] || echo(r.type, r.c)) continue;
        const t = targets.get(r.targetId);
        if (t) out[r.type] = attributeValues(t);
      }
      return out;
    },
  };
}

/** A relationship type with several targets on this object, or one that came from a multi-valued reference (a group's `member`). */
function isMultiValued(doc: MeshObject, type: string, skip: (c: string | undefined) => boolean): boolean {
  let n = 0;
  for (const r of doc.relationships) if (r.type === type && !skip(r.c)) n++;
  for (const p of doc.pendingReferences) if (p.type === type && !skip(p.c)) n++;
  return n > 1 || type.toLowerCase() === 'member' || type.toLowerCase() === 'uniquemember';
}

/** A relationship a target's import read back of what the engine writes there (see {@link ExportRelationsSources.echoes}). */
function isEcho(src: ExportRelationsSources, type: string, c: string | undefined): boolean {
  return c !== undefined && (c === src.connectorId || !!src.echoes?.get(type)?.has(c));
}

/** Per relationship type, the connectors an enabled outbound flow writes it into. */
export function relationshipEchoes(
  rules: readonly { ruleType: string; direction?: string; isEnabled?: boolean; connectorId?: string | null; sourceAttribute?: string | null }[],
): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const r of rules)
    if (r.ruleType === 'FlowRule' && r.direction === 'outbound' && r.isEnabled !== false && r.connectorId && r.sourceAttribute)
      out.set(r.sourceAttribute, new Set([...(out.get(r.sourceAttribute) ?? []), r.connectorId]));
  return out;
}
