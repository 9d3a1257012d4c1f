import type { AttributeValue, ScalarValue } from '../sdk';

/** One value from a driver as a connector value (dates as ISO text, binary as base64, JSON as text). */
export function toScalar(v: unknown): ScalarValue {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (Buffer.isBuffer(v)) return v.toString('base64');
  return JSON.stringify(v);
}

/** A driver value as an attribute value (an array, from a multi-value lookup, element by element). */
export function toAttribute(v: unknown): AttributeValue {
  if (Array.isArray(v)) return v.map(toScalar);
  return toScalar(v);
}

/** The text form of an anchor or key value ('' when absent). */
export function keyText(v: unknown): string {
  const s = toScalar(v);
  return s === null ? '' : String(s);
}
