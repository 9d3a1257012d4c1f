import type { AttributeValue, ExportChange } from '../../connectors/sdk';
import { isWriteOnlySecret } from '../../core/secretAttributes';
import { CLOCK, type CompiledExpression, type EvaluationClock } from '../../expression';
import { isEmptyValue, sameValue, type MeshObject } from '../../mesh/model';
import type { RunObjectError } from '../../storage/runs';
import { disableValues, dueAt, enableValues, isDue, type DeprovisioningSettings } from '../deprovisioning';
import type { ExportRelations } from './exportReferences';
import type { CsObject } from '../model';
import { attributeValues } from '../planner';
import { ruleFailureMessage, ruleValue, type RuleSet } from '../rules';
import { assignedValue, type UniqueAssignments } from '../unique/assignments';

/**
 * The export planner: from the mesh states of a page of objects and what the target's connector space holds
 * for them, the changes an export would send, with no I/O and no switches. The export run (load, plan, gate,
 * apply, record), its dry run and plans, the import plan's target preview, the one-object preview and the
 * connector space's `pendingExport` state all call it, so one object has one answer everywhere.
 */

/**
 * Write-only secrets (Active Directory's unicodePwd; lib/core/secretAttributes.ts, with the list of secrets every
 * read masks): the target never shows them, so they are never compared with what it shows and never recorded in
 * the connector space (`exported`): an outbound flow to one is sent with an add, and with an update only when the
 * target's configuration says passwordOnUpdate.
 */
export { isWriteOnlySecret };
export function withoutWriteOnlySecrets(values: Record<string, AttributeValue>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [k, v] of Object.entries(values)) if (!isWriteOnlySecret(k)) out[k] = v;
  return out;
}

export const truthyValue = (v: unknown) => (typeof v === 'string' ? v !== '' && !/^(false|0|no)$/i.test(v) : !!v);

/** One change of an export page, with what the engine records when it is applied. */
export interface DocChange {
  change: ExportChange;
  doc: MeshObject;
  prev: CsObject | undefined;
  values: Record<string, AttributeValue>;
  /**
   * Deprovisioning: `disable` (the disable values; the link stays), `delete` (the object deleted and unlinked),
   * `clear` (the object's deprovisioning marker goes: a re-enable, a pending one cancelled, a rehire).
   */
  tag?: 'disable' | 'delete' | 'clear';
  disabled?: { written: string[]; previous: Record<string, AttributeValue> };
}

/** What the target shows of an object now: its last import, then what was exported to it since. */
export const shownOf = (row: CsObject): Record<string, AttributeValue> => ({ ...row.attributes, ...(row.exported ?? {}) });

export interface ExportPlanInput {
  connectorId: string;
  at: Date;
  /** The object type an add creates (the connector's `objectType`). */
  objectType: string;
  /** A write-only secret goes with every update too. */
  passwordOnUpdate: boolean;
  /** The provisioning condition, compiled (null: every object). */
  condition: CompiledExpression | null;
  settings: DeprovisioningSettings;
  rules: RuleSet;
  docs: readonly MeshObject[];
  /** The target's connector-space rows of the objects, by anchor (those linked, and those waiting in a grace). */
  rows: ReadonlyMap<string, CsObject>;
  /** A mesh object back inside the grace of its deprovisioning here: mesh id -> the target object's anchor. */
  waiting: ReadonlyMap<string, string>;
  relations: ExportRelations;
  /**
   * Target attributes whose values are DNs (references written in a directory): compared as DNs (escapes and
   * case as the directory's rules say), so `ou=Sales\, EMEA` and `ou=Sales\2C EMEA` are one value.
   */
  dnAttributes: ReadonlySet<string>;
  /** The target's own word on which attributes hold DNs (lib/sync/references.ts `dnValued`), per row. */
  dnValued?: (name: string, refNames?: readonly string[]) => boolean;
  /** The values of the rules with `unique`, chosen and reserved before planning (lib/sync/unique/resolve.ts). */
  unique?: UniqueAssignments;
}

export interface ExportPagePlan {
  changes: DocChange[];
  /** Objects whose outbound rules failed: reported, nothing sent. */
  errors: RunObjectError[];
  /** Rows (and links) that change without a change in the target: pending marks, cancellations, objects left. */
  quietRows: CsObject[];
  /** Link changes with those rows: the mesh object linked again (a return in its grace) or unlinked (left). */
  quietLinks: LinkChange[];
  /** Objects left as they are by a deprovisioning `none` (unlinked, nothing sent). */
  left: number;
  /**
   * When the target's rules read the clock (now()): for each object evaluated, the next instant its results here
   * can change (undefined: none). Objects whose rules failed are not listed. Empty when no rule reads the clock.
   */
  due: Map<string, number | undefined>;
}

/** A change to one mesh object's link to the target (applied to the object as stored when it is written). */
export interface LinkChange {
  id: string;
  /** The anchor to link (null: unlink). */
  anchor: string | null;
  /** Whether the link is a provisioned one (the engine added the object there); absent: as it is. */
  provisioned?: boolean;
}

/** The values the outbound rules give `doc` in the target (throws a rule's failure). */
export function outboundValues(
  input: Pick<ExportPlanInput, 'rules' | 'relations' | 'unique'>,
  doc: MeshObject,
  meshValues = attributeValues(doc),
  clock?: EvaluationClock,
): Record<string, AttributeValue> {
  const { rules, relations } = input;
  const values: Record<string, AttributeValue> = {};
  // The scope beyond source and object: `related`, and the engine's clock under a symbol no script can name
  // (lib/expression/dateValue.ts).
  const extra = { related: relations.relatedOf(doc), ...(clock ? { [CLOCK]: clock } : {}) };
  for (const fr of rules.outbound) {
    if (!fr.rule.targetAttribute || values[fr.rule.targetAttribute] !== undefined) continue;
    const name = fr.rule.sourceAttribute ?? '';
    const source = relations.types.has(name) ? relations.valueOf(doc, name) : (meshValues[name] ?? null);
    // An absent source value is not evaluated (unless the rule says so): the attribute is left out of an
    // add and cleared by an update.
    values[fr.rule.targetAttribute] =
      isEmptyValue(source) && !fr.rule.evaluateWhenAbsent
        ? null
        : fr.rule.unique
          ? assignedValue(input.unique, fr, doc, { source, object: meshValues, related: extra.related })
          : ruleValue(fr, source, meshValues, extra);
  }
  return values;
}

/** Whether two values of a target attribute are the same (DN-valued attributes compared as DNs). */
export function sameTargetValue(
  dnAttributes: ReadonlySet<string> | ((name: string) => boolean),
  name: string,
  a: AttributeValue | undefined,
  b: AttributeValue | undefined,
): boolean {
  if (sameValue(a, b)) return true;
  const dn = typeof dnAttributes === 'function' ? dnAttributes(name) : dnAttributes.has(name);
  return dn && sameValue(a, b, { dn: true });
}

/**
 * Plan one page of an export. For each object: out of scope (the provisioning condition), deprovisioned by the
 * condition (`onConditionFalse`), an add (no object in the target), or an update of what differs from what the
 * target shows. Every add and update carries the object's whole intended state (`change.state`) and what the
 * target shows (`change.previous`), so a connector whose statement names every column binds each from the
 * object's current values, never null for a value the change does not touch.
 */
export function planExport(input: ExportPlanInput): ExportPagePlan {
  const { connectorId: cid, at, settings, condition, rows, waiting } = input;
  const now = at.toISOString();
  const out: ExportPagePlan = { changes: [], errors: [], quietRows: [], quietLinks: [], left: 0, due: new Map() };
  // Rules that read the clock are given the run's instant and say when their results change (docs/dated-changes.md).
  const timed = !!condition?.usesNow || input.rules.outbound.some((r) => r.script?.usesNow);
  let clock: EvaluationClock | undefined;
  const inScope = (values: Record<string, AttributeValue>) =>
    !condition || truthyValue(condition.evaluate(clock ? { source: values, object: values, [CLOCK]: clock } : { source: values, object: values }));
  for (const doc of input.docs) {
    const meshValues = attributeValues(doc);
    if (timed) clock = { now: at.getTime() };
    const anchor = doc.links[cid] ?? waiting.get(doc.id);
    const prev = anchor ? rows.get(anchor) : undefined;
    const isAdd = !anchor || !prev || prev.deleted;
    const marker = isAdd ? undefined : prev!.deprovisioned;
    // Back inside its grace (not linked here, found by its pending deprovisioning).
    const restored = !isAdd && !doc.links[cid];
    let values: Record<string, AttributeValue>;
    try {
      // Scope first: the outbound rules run only for objects in the target (joined there) or about to be
      // provisioned (the provisioning condition holds); an object out of scope is not looked at further.
      if (isAdd && !inScope(meshValues)) {
        if (clock) out.due.set(doc.id, clock.due);
        continue;
      }
      // onConditionFalse: a provisioned object whose condition stopped holding is deprovisioned.
      if (!isAdd && settings.onConditionFalse && !inScope(meshValues)) {
        if (clock) out.due.set(doc.id, clock.due);
        conditionFalse(input, out, doc, anchor!, prev!, now);
        continue;
      }
      values = outboundValues(input, doc, meshValues, clock);
      if (clock) out.due.set(doc.id, clock.due);
    } catch (err) {
      out.errors.push({ object: doc.anchorValue, message: ruleFailureMessage(err, 'The outbound rules could not be applied') });
      continue;
    }
    if (isAdd) {
      out.changes.push({ change: { kind: 'add', objectType: input.objectType, attributes: values, state: values }, doc, prev, values });
      continue;
    }
    const shown = shownOf(prev!);
    const isDn = (k: string) => input.dnAttributes.has(k) || !!input.dnValued?.(k, prev!.refNames);
    const diff: Record<string, AttributeValue> = {};
    for (const [k, v] of Object.entries(values)) if (!isWriteOnlySecret(k) && !sameTargetValue(isDn, k, shown[k], v)) diff[k] = v;
    // A write-only secret goes with an update only when the target says passwordOnUpdate (then with every update).
    if (Object.keys(diff).length && input.passwordOnUpdate)
      for (const [k, v] of Object.entries(values)) if (isWriteOnlySecret(k) && !isEmptyValue(v)) diff[k] = v;
    // A disabled object linked again (a rehire, the condition holding again) is enabled: AD's accountDisabled
    // false, the other disable attributes given their flow's value or the value they had before.
    if (marker?.state === 'disabled') Object.assign(diff, enableValues(marker, values));
    const tag = marker ? ('clear' as const) : undefined;
    if (Object.keys(diff).length) {
      const change: ExportChange = {
        kind: 'update',
        anchor: anchor!,
        objectType: prev!.objectType,
        attributes: diff,
        previous: shown,
        state: withoutWriteOnlySecrets({ ...values, ...diff }),
      };
      out.changes.push({ change, doc, prev, values: diff, ...(tag ? { tag } : {}) });
    } else if (marker || restored) {
      const row: CsObject = { ...prev!, meshId: doc.id, updatedOn: now };
      delete row.deprovisioned;
      out.quietRows.push(row);
      if (restored) out.quietLinks.push({ id: doc.id, anchor: anchor!, ...(prev!.provisioned ? { provisioned: true } : {}) });
    }
  }
  return out;
}

/** A linked object whose provisioning condition stopped holding (`onConditionFalse`): its deprovisioning. */
function conditionFalse(input: ExportPlanInput, out: ExportPagePlan, doc: MeshObject, anchor: string, prev: CsObject, now: string): void {
  const { settings, at } = input;
  const marker = prev.deprovisioned;
  if (marker && marker.state !== 'pending') return; // already disabled or left: not updated while out of scope
  if (settings.graceDays > 0 && !(marker?.state === 'pending' && isDue(marker.due, at))) {
    if (!marker)
      out.quietRows.push({ ...prev, deprovisioned: { state: 'pending', reason: 'condition', at: now, due: dueAt(at, settings.graceDays) }, updatedOn: now });
    return;
  }
  if (settings.action === 'delete') {
    out.changes.push({ change: { kind: 'delete', anchor, objectType: prev.objectType, attributes: {} }, doc, prev, values: {}, tag: 'delete' });
  } else if (settings.action === 'disable') {
    const d = disableValues(settings, prev);
    out.changes.push({
      change: { kind: 'update', anchor, objectType: prev.objectType, attributes: d.attributes, previous: shownOf(prev) },
      doc,
      prev,
      values: d.attributes,
      tag: 'disable',
      disabled: { written: Object.keys(d.attributes), previous: d.previous },
    });
  } else {
    out.left++;
    out.quietRows.push({ ...prev, meshId: null, deprovisioned: { state: 'none', reason: 'condition', at: now }, updatedOn: now });
    out.quietLinks.push({ id: doc.id, anchor: null, provisioned: false });
  }
}
