import type { AttributeValue } from '../connectors/sdk';
import { COMPOSER, sameValue, type MeshObject } from '../mesh/model';
import type { StoredConnector } from '../storage/connectors';
import type { Rule } from '../storage/rules';
import { readHoldings, readReservation, type SkippedCandidate } from '../storage/uniqueValues';
import { readCsObjects } from '../sync/space/connectorSpace';
import { basisOf, normaliseValue, poolOf, uniqueRulesOf } from '../sync/unique/candidates';
import { attributeValues } from '../sync/planner';
import { scriptInputs } from '../mesh/explain';
import type { ExportState } from './flowState';

/**
 * Explain of an outbound flow with `unique` (docs/unique-values.md): the value the object holds (what the target
 * shows, else the value reserved for it), which candidate won and why the earlier ones were skipped (taken by
 * another mesh object, held in the target by an object the engine did not create, taken outside the engine as
 * the target's refusal said, the expression gave no value).
 */
export interface UniqueExplanation {
  pool: string;
  value: string | null;
  /** The winning candidate's index in the rule's list (null: nothing reserved yet). */
  candidate: number | null;
  counter: number | null;
  reservedOn: string | null;
  skipped: SkippedCandidate[];
}

/** The mesh attributes a unique rule's candidates read (explain lists the rule under each). */
export function uniqueInputs(rule: Rule): string[] {
  return (rule.unique?.candidates ?? []).flatMap((c) => scriptInputs(c));
}

export async function uniqueExportState(
  doc: MeshObject,
  connector: StoredConnector,
  rule: Rule,
  target: string,
): Promise<{ value: AttributeValue; state: ExportState; unique: UniqueExplanation }> {
  const pool = poolOf(rule, rule.unique!);
  const [holdings, rows] = await Promise.all([
    readHoldings(pool, [doc.id]),
    doc.links[connector.id] !== undefined ? readCsObjects(connector.id, [doc.links[connector.id]]) : null,
  ]);
  const h = holdings.get(doc.id);
  const row = rows?.get(doc.links[connector.id]);
  const unique: UniqueExplanation = {
    pool,
    value: h?.value ?? null,
    candidate: h ? h.candidate : null,
    counter: h?.counter ?? null,
    reservedOn: h?.reservedOn ?? null,
    skipped: h?.skipped ?? [],
  };
  const shown = row && !row.deleted ? (row.attributes[target] ?? row.exported?.[target]) : undefined;
  // No holding: the object won its first candidate (nothing skipped, nothing more to record).
  if (!h && shown !== undefined && shown !== null) {
    try {
      const values = attributeValues(doc);
      const [c] = uniqueRulesOf([{ rule, script: null }]);
      if (basisOf(c, { source: values[rule.sourceAttribute ?? ''] ?? null, object: values, related: {} }) === String(shown)) unique.candidate = 0;
    } catch {
      // A candidate that fails on the object now: the winning candidate is not known.
    }
  }
  if (shown !== undefined && shown !== null) {
    const confirmed = row!.attributes[target] !== undefined && (!h || sameValue(row!.attributes[target], h.value));
    return { value: shown, state: confirmed ? 'confirmed' : 'awaitingConfirmation', unique: { ...unique, value: unique.value ?? String(shown) } };
  }
  return { value: h?.value ?? null, state: 'pendingExport', unique };
}

/**
 * Explain of a unique computed attribute (a MeshComposerRule with `unique`): the value reserved for the object in
 * the rule's pool, which candidate won and why the earlier ones were skipped (its holding, written when the value
 * was chosen at projection time).
 */
export async function uniqueComputedState(doc: MeshObject, rule: Rule): Promise<UniqueExplanation> {
  const pool = poolOf(rule, rule.unique!);
  const h = (await readHoldings(pool, [doc.id])).get(doc.id);
  if (h) return { pool, value: h.value, candidate: h.candidate, counter: h.counter ?? null, reservedOn: h.reservedOn, skipped: h.skipped };
  // No holding: the object won its first candidate (nothing skipped); its reservation says when.
  const shown = doc.contributions[rule.targetAttribute ?? '']?.find((c) => c.c === COMPOSER && c.r === rule.ruleId)?.v;
  const value = typeof shown === 'string' ? shown : null;
  const reservation = value === null ? null : await readReservation(pool, normaliseValue(value, rule.unique!.caseSensitive));
  const mine = reservation?.owner === doc.id;
  return { pool, value, candidate: mine ? 0 : null, counter: null, reservedOn: mine ? reservation.reservedOn : null, skipped: [] };
}
