/**
 * The values every room speaks of: what a connector reads, what the mesh holds, what an export writes. They sit
 * at the bottom of the house so that the mesh, the plans and the expression language name them without reaching
 * up into the connectors.
 */

/** One value of an attribute. Dates travel as ISO 8601 strings, binary values as canonical strings. */
export type ScalarValue = string | number | boolean | null;

/** An attribute value: a scalar, or an array of scalars for a multi-valued attribute. */
export type AttributeValue = ScalarValue | ScalarValue[];

/** True when `v` is a valid {@link AttributeValue} (for connectors that read loosely typed data, like JSON). */
export function isAttributeValue(v: unknown): v is AttributeValue {
  if (Array.isArray(v)) return v.every(isScalar);
  return isScalar(v);
}

function isScalar(v: unknown): v is ScalarValue {
  return v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

/** The values of an attribute as an array (null/absent: empty). */
export function valuesOf(v: AttributeValue | undefined): ScalarValue[] {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v.filter((x) => x !== null) : [v];
}
