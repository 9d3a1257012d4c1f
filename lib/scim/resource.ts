import { badRequest } from './errors';
import { COMMON_ATTRIBUTES, findAttr, findExtension, splitSchemaPrefix, type AttrDef, type ResourceTypeDef } from './schema';

/**
 * What a SCIM client sends, made canonical: attribute names take the schema's spelling whatever case they
 * came in (`Primary`, `Department`), `"True"`/`"false"` strings become booleans, a bare string where a complex
 * value is expected becomes `{ value }` (a group member or a manager sent as an id), nulls are dropped,
 * attributes no schema defines are ignored (RFC 7644 3.3: the server may ignore them), read-only attributes
 * (`id`, `meta`, `groups`) are never taken from the client. An extension a schema of this server does not know,
 * sent as a URN-keyed object (Entra's inbound `...:extension:csv:1.0:User`), is kept as it came.
 */
export type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

export function coerceValue(def: AttrDef, value: unknown, where: string): unknown {
  if (value === null || value === undefined) return undefined;
  if (def.multiValued) {
    const items = Array.isArray(value) ? value : [value];
    const out = items.map((v) => coerceSingle(def, v, where)).filter((v) => v !== undefined);
    return out;
  }
  if (Array.isArray(value)) {
    if (value.length === 1) return coerceSingle(def, value[0], where);
    throw badRequest(`'${where}' takes a single value.`);
  }
  return coerceSingle(def, value, where);
}

function coerceSingle(def: AttrDef, value: unknown, where: string): unknown {
  if (value === null || value === undefined) return undefined;
  switch (def.type) {
    case 'complex': {
      if (!isObject(value)) {
        if (typeof value === 'string' || typeof value === 'number') {
          if (findAttr(def.subAttributes, 'value')) return { value: String(value) };
        }
        throw badRequest(`'${where}' takes an object.`);
      }
      const out: Json = {};
      for (const [k, v] of Object.entries(value)) {
        const sub = findAttr(def.subAttributes, k);
        if (!sub) continue;
        const c = coerceValue(sub, v, `${where}.${sub.name}`);
        if (c !== undefined && out[sub.name] === undefined) out[sub.name] = c;
      }
      return Object.keys(out).length ? out : undefined;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (typeof value === 'string' && /^(true|false)$/i.test(value.trim())) return value.trim().toLowerCase() === 'true';
      throw badRequest(`'${where}' takes a boolean, not ${JSON.stringify(value)}.`);
    case 'integer':
    case 'decimal': {
      const n = typeof value === 'number' ? value : Number(value);
      if (Number.isNaN(n)) throw badRequest(`'${where}' takes a number.`);
      return def.type === 'integer' ? Math.trunc(n) : n;
    }
    default:
      if (typeof value === 'string') return value;
      if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      throw badRequest(`'${where}' takes a string.`);
  }
}

/**
 * The stored form of a resource body (POST, PUT, a Bulk operation's data): canonical attributes of the core
 * schema at the top, each extension under its URN. Throws 400 `invalidValue` when a required attribute is
 * missing.
 */
export function normalizeResource(rt: ResourceTypeDef, body: unknown): Json {
  if (!isObject(body)) throw badRequest('The request body must be a JSON object.', 'invalidSyntax');
  const out: Json = {};
  for (const [key, value] of Object.entries(body)) {
    const lower = key.toLowerCase();
    if (lower === 'schemas' || lower === 'id' || lower === 'meta') continue;
    if (lower === 'externalid') {
      if (value !== null && value !== undefined) out.externalId = String(value);
      continue;
    }
    if (lower.startsWith('urn:')) {
      const ext = findExtension(rt, key);
      if (ext) {
        if (!isObject(value)) continue;
        const x: Json = {};
        for (const [k, v] of Object.entries(value)) {
          const def = findAttr(ext.attributes, k);
          if (!def || def.mutability === 'readOnly') continue;
          const c = coerceValue(def, v, `${ext.id}:${def.name}`);
          if (c !== undefined) x[def.name] = c;
        }
        if (Object.keys(x).length) out[ext.id] = x;
        continue;
      }
      const { schema, rest } = splitSchemaPrefix(rt, key);
      if (schema.id === rt.schema.id && rest === key) {
        // An extension this server does not define: kept as sent (an object only).
        if (isObject(value)) out[key] = value;
        continue;
      }
      // `urn:...:User:department` as a key: one attribute of a known schema.
      setPathValue(rt, out, key, value);
      continue;
    }
    const def = findAttr(rt.schema.attributes, key);
    if (!def || def.mutability === 'readOnly') continue;
    const c = coerceValue(def, value, def.name);
    if (c !== undefined) out[def.name] = c;
  }
  for (const def of rt.schema.attributes) {
    if (def.required && (out[def.name] === undefined || out[def.name] === '')) {
      throw badRequest(`The attribute '${def.name}' is required.`, 'invalidValue');
    }
  }
  return out;
}

function setPathValue(rt: ResourceTypeDef, out: Json, key: string, value: unknown): void {
  const { schema, rest } = splitSchemaPrefix(rt, key);
  const [name, sub] = rest.split('.');
  const def = findAttr(schema.attributes, name);
  if (!def || def.mutability === 'readOnly') return;
  const holder: Json = schema.id === rt.schema.id ? out : ((out[schema.id] as Json | undefined) ?? (out[schema.id] = {}));
  if (sub === undefined) {
    const c = coerceValue(def, value, def.name);
    if (c !== undefined) holder[def.name] = c;
    return;
  }
  const subDef = findAttr(def.subAttributes, sub);
  if (!subDef) return;
  const c = coerceValue(subDef, value, `${def.name}.${subDef.name}`);
  if (c === undefined) return;
  const current = isObject(holder[def.name]) ? (holder[def.name] as Json) : {};
  holder[def.name] = { ...current, [subDef.name]: c };
}

// ---------------------------------------------------------------------------------------------------------
// attributes / excludedAttributes

export interface Projection {
  attributes?: string[][];
  excluded?: string[][];
}

/**
 * `attributes` and `excludedAttributes` as lists of canonical paths (`['emails']`, `['name', 'givenName']`,
 * `['urn:...:User', 'department']`). A value filter in an item (`emails[type eq "work"]`) selects the
 * attribute: the filter itself is not applied to the returned values.
 */
export function parseProjection(rt: ResourceTypeDef, attributes: string | null, excluded: string | null): Projection {
  const parse = (list: string | null): string[][] | undefined => {
    if (!list) return undefined;
    const out: string[][] = [];
    for (const rawItem of list.split(',')) {
      const item = rawItem.replace(/\[.*?\]/g, '').trim();
      if (!item) continue;
      const ext = findExtension(rt, item);
      if (ext) {
        out.push([ext.id]);
        continue;
      }
      const { schema, rest } = splitSchemaPrefix(rt, item);
      const [name, sub] = rest.split('.');
      const def = findAttr(schema.attributes, name) ?? (schema.id === rt.schema.id ? findAttr(COMMON_ATTRIBUTES, name) : undefined);
      if (!def) continue;
      const prefix = schema.id === rt.schema.id ? [] : [schema.id];
      const subDef = sub ? findAttr(def.subAttributes, sub) : undefined;
      out.push([...prefix, def.name, ...(subDef ? [subDef.name] : [])]);
    }
    return out;
  };
  return { attributes: parse(attributes), excluded: parse(excluded) };
}

const ALWAYS = new Set(['id', 'schemas']);

/** Apply a projection to a full SCIM representation. */
export function project(resource: Json, p: Projection): Json {
  if (p.attributes && p.attributes.length) {
    const out: Json = {};
    for (const k of ALWAYS) if (resource[k] !== undefined) out[k] = resource[k];
    for (const path of p.attributes) copyPath(resource, out, path);
    return out;
  }
  if (p.excluded && p.excluded.length) {
    const out: Json = structuredClone(resource);
    for (const path of p.excluded) {
      if (ALWAYS.has(path[0]) && path.length === 1) continue;
      removePath(out, path);
    }
    return out;
  }
  return resource;
}

function copyPath(from: Json, to: Json, path: string[]): void {
  const [head, ...rest] = path;
  const v = from[head];
  if (v === undefined) return;
  if (!rest.length) {
    to[head] = v;
    return;
  }
  if (Array.isArray(v)) {
    const current = Array.isArray(to[head]) ? (to[head] as Json[]) : v.map(() => ({}) as Json);
    v.forEach((item, i) => {
      if (isObject(item)) copyPath(item, current[i], rest);
    });
    to[head] = current;
  } else if (isObject(v)) {
    const current = isObject(to[head]) ? (to[head] as Json) : {};
    copyPath(v, current, rest);
    to[head] = current;
  }
}

function removePath(obj: Json, path: string[]): void {
  const [head, ...rest] = path;
  if (!rest.length) {
    delete obj[head];
    return;
  }
  const v = obj[head];
  if (Array.isArray(v)) v.forEach((item) => isObject(item) && removePath(item, rest));
  else if (isObject(v)) removePath(v, rest);
}
