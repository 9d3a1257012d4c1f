import type { AttributeValue } from '../connectors/sdk';
import { CLOCK, compileExpression } from '../expression';
import { engineNow } from '../core/clock';
import { sameValue, type MeshObject } from '../mesh/model';
import type { StoredConnector } from '../storage/connectors';
import type { Rule } from '../storage/rules';
import type { CsObject } from '../sync/model';
import { referencePolicy } from '../sync/references';
import { ruleValue, type CompiledRule } from '../sync/rules';
import { readStagedAdd } from '../sync/export/stagedAdds';

/** The state of a value an outbound flow writes to a target, as explain and the person view show it. */
export type ExportState = 'confirmed' | 'pendingExport' | 'awaitingConfirmation';

/**
 * The state of one outbound flow's value for the object's row in the target (`row`, already read; undefined:
 * none): `pendingExport` when the next export would send it, `awaitingConfirmation`, `confirmed`; null when
 * no value would be sent (the provisioning condition does not hold, or the rule fails).
 */
export async function flowState(
  doc: MeshObject,
  connector: StoredConnector,
  rule: Rule,
  target: string,
  values: Record<string, AttributeValue>,
  row: CsObject | undefined,
): Promise<{ value: AttributeValue; state: ExportState } | null> {
  if (row?.pendingExport && target in row.pendingExport.attributes) return { value: row.pendingExport.attributes[target], state: 'pendingExport' };
  if (row?.exported && target in row.exported) return { value: row.exported[target], state: 'awaitingConfirmation' };
  if (!row || row.deleted) {
    const staged = await readStagedAdd(connector.id, doc.id);
    if (staged && target in staged.pendingExport.attributes) return { value: staged.pendingExport.attributes[target], state: 'pendingExport' };
  }
  let expected: AttributeValue;
  try {
    const compiled: CompiledRule = { rule, script: rule.transformScript ? compileExpression(rule.transformScript) : null };
    // Rules that read the clock see the engine's now (docs/dated-changes.md).
    expected = ruleValue(compiled, values[rule.sourceAttribute ?? ''] ?? null, values, { [CLOCK]: { now: engineNow().getTime() } });
  } catch {
    return null;
  }
  if (!row || row.deleted) {
    // Not in the target yet: the next export adds it when the provisioning condition holds.
    const condition = connector.config.provisioningCondition;
    if (typeof condition === 'string') {
      try {
        const v = compileExpression(condition).evaluate({ source: values, object: values, [CLOCK]: { now: engineNow().getTime() } });
        if (!(typeof v === 'string' ? v !== '' && !/^(false|0|no)$/i.test(v) : !!v)) return null;
      } catch {
        return null;
      }
    }
    return { value: expected, state: 'pendingExport' };
  }
  if (row.unconfirmed?.includes(target)) return { value: expected, state: 'awaitingConfirmation' };
  // A directory's DN-valued attribute is confirmed when it names the same entry, however the directory spells it.
  const dn = referencePolicy(connector.id, connector.type, connector.config, []).dnValued(target, row.refNames);
  return sameValue(expected, row.attributes[target] ?? null, { dn })
    ? { value: row.attributes[target] ?? null, state: 'confirmed' }
    : { value: expected, state: 'pendingExport' };
}
