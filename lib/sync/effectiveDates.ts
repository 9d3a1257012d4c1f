import type { AttributeValue } from '../connectors/sdk';
import { toEpochMs } from '../expression';
import type { CompiledRule } from './rules';

/**
 * Future-dated values (docs/dated-changes.md, "Future-dated values"): an inbound FlowRule with
 * `effectiveFromAttribute` gives its value only from the date that attribute of the source object holds. Before
 * it, the connector's previous contribution to the attribute stays (the new value waits in the connector space,
 * as imported) and the plan says when it takes effect; the due timer applies it then.
 */

/** The instant a source value takes effect: its date (ISO 8601, UTC unless it names a zone; the first of several). */
export function effectiveAt(value: AttributeValue | undefined): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === null || v === undefined || v === '' || typeof v === 'boolean') return undefined;
  return toEpochMs(v);
}

/** A value that waits for its date: the rule, the attribute, the value and when it takes effect. */
export interface PendingValue {
  ruleId: string;
  attribute: string;
  value: AttributeValue;
  at: number;
}

/** The values of `flows` on `attrs` that are not in effect at `now` (`values`: inboundValues' result). */
export function pendingValues(
  values: Record<string, { v: AttributeValue; rule: CompiledRule }>,
  attrs: Record<string, AttributeValue>,
  now: number,
): PendingValue[] {
  const out: PendingValue[] = [];
  for (const [attribute, { v, rule }] of Object.entries(values)) {
    const from = rule.rule.effectiveFromAttribute;
    if (!from) continue;
    const at = effectiveAt(attrs[from]);
    if (at !== undefined && at > now) out.push({ ruleId: rule.rule.ruleId, attribute, value: v, at });
  }
  return out;
}

/**
 * Takes the values not in effect at `now` out of an import's inbound values and keeps the connector's previous
 * contributions to their attributes (`keep`). Returns the earliest date one takes effect (undefined: none).
 */
export function deferFutureValues(
  inbound: { values: Record<string, { v: AttributeValue; rule: CompiledRule }>; failed: Set<string> },
  attrs: Record<string, AttributeValue>,
  now: number,
): number | undefined {
  let due: number | undefined;
  for (const p of pendingValues(inbound.values, attrs, now)) {
    delete inbound.values[p.attribute];
    inbound.failed.add(p.attribute);
    if (due === undefined || p.at < due) due = p.at;
  }
  return due;
}
