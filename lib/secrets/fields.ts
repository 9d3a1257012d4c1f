import { isSecretAttribute } from '../core/secretAttributes';
import type { TSchema } from '@sinclair/typebox';

/** The placeholder that stands for a secret in responses, and that a PUT sends to keep the stored value. */
export const SECRET_PLACEHOLDER = '********';

/** A path into a config object, as property names. */
export type FieldPath = string[];

/**
 * Every path in `config` whose value the schema marks `x-secret` (a property, or any value of a dictionary
 * whose `additionalProperties` is marked), and the values of secret attributes (lib/core/secretAttributes.ts) in
 * a dictionary marked `x-attribute-values`. Only string values count: a validated config has no others there.
 */
export function secretPaths(schema: TSchema | Record<string, unknown>, config: unknown, prefix: FieldPath = []): FieldPath[] {
  if (!isPlainObject(config)) return [];
  const s = schema as { properties?: Record<string, Record<string, unknown>>; additionalProperties?: unknown };
  const out: FieldPath[] = [];
  for (const [key, value] of Object.entries(config)) {
    const sub =
      s.properties && Object.prototype.hasOwnProperty.call(s.properties, key)
        ? s.properties[key]
        : isPlainObject(s.additionalProperties)
          ? s.additionalProperties
          : undefined;
    if (!sub) continue;
    if (sub['x-secret'] === true) {
      if (typeof value === 'string') out.push([...prefix, key]);
    } else if (sub['x-attribute-values'] === true && isPlainObject(value)) {
      // Attribute name -> value: a secret attribute's value (a scrambled password) is a secret.
      for (const [name, v] of Object.entries(value)) if (typeof v === 'string' && isSecretAttribute(name)) out.push([...prefix, key, name]);
    } else if (isPlainObject(value)) {
      out.push(...secretPaths(sub, value, [...prefix, key]));
    }
  }
  return out;
}

export function getPath(obj: unknown, path: FieldPath): unknown {
  let cur: unknown = obj;
  for (const key of path) {
    if (!isPlainObject(cur) || !Object.prototype.hasOwnProperty.call(cur, key)) return undefined;
    cur = cur[key];
  }
  return cur;
}

/** Set `value` at `path` in a copy-on-write fashion: returns a new object, `obj` is not changed. */
export function setPath(obj: Record<string, unknown>, path: FieldPath, value: unknown): Record<string, unknown> {
  const [head, ...rest] = path;
  const copy: Record<string, unknown> = { ...obj };
  Object.defineProperty(copy, head, {
    value: rest.length ? setPath(isPlainObject(obj[head]) ? obj[head] : {}, rest, value) : value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return copy;
}

/** Remove the value at `path` (copy-on-write). */
export function deletePath(obj: Record<string, unknown>, path: FieldPath): Record<string, unknown> {
  const [head, ...rest] = path;
  if (!Object.prototype.hasOwnProperty.call(obj, head)) return obj;
  const copy: Record<string, unknown> = { ...obj };
  if (rest.length && isPlainObject(obj[head])) copy[head] = deletePath(obj[head], rest);
  else delete copy[head];
  return copy;
}

export function pointer(path: FieldPath): string {
  return '/' + path.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Every path the schema marks `x-endpoint: true` (fields that say where or as whom a connector connects: a
 * host, a port, a user, the TLS trust), following `properties` only. Paths are prefixed with `prefix`.
 */
export function endpointPaths(schema: TSchema | Record<string, unknown>, prefix: FieldPath = []): FieldPath[] {
  const s = schema as { properties?: Record<string, Record<string, unknown>> };
  const out: FieldPath[] = [];
  for (const [key, sub] of Object.entries(s.properties ?? {})) {
    if (sub['x-endpoint'] === true) out.push([...prefix, key]);
    else if (isPlainObject(sub.properties)) out.push(...endpointPaths(sub, [...prefix, key]));
  }
  return out;
}

/**
 * The paths among `paths` whose value differs between two configurations (absent and `undefined` are the same;
 * objects compare by content, whatever the key order).
 */
export function changedPaths(before: Record<string, unknown>, after: Record<string, unknown>, paths: FieldPath[]): FieldPath[] {
  const seen = new Set<string>();
  const out: FieldPath[] = [];
  for (const path of paths) {
    const key = pointer(path);
    if (seen.has(key)) continue;
    seen.add(key);
    if (stable(getPath(before, path)) !== stable(getPath(after, path))) out.push(path);
  }
  return out;
}

function stable(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (isPlainObject(v)) {
    return `{${Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}
