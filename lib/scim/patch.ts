import { badRequest } from './errors';
import { matches, parsePatchPath, type AttrPath, type Filter } from './filter';
import { coerceValue, normalizeResource, type Json } from './resource';
import { PATCH_OP, type ResourceTypeDef } from './schema';

/**
 * The PATCH engine (RFC 7644 section 3.5.2) on a resource's stored form, as SCIM clients send it: `op` in
 * any case (`Replace`), `add`/`replace` without a path (the value is an object of attributes, whose keys may be
 * paths themselves: `name.givenName`, `urn:...:User:department`), paths with value filters
 * (`emails[type eq "work"].value`, `members[value eq "id"]`), members added as objects or bare id strings and
 * removed by filter or by a value list. Pure: returns the new stored form, never touches storage.
 */
export function applyPatch(rt: ResourceTypeDef, current: Json, body: unknown): Json {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw badRequest('The PATCH body must be a JSON object.', 'invalidSyntax');
  const b = body as Json;
  const schemas = b.schemas;
  if (schemas !== undefined && !(Array.isArray(schemas) && schemas.some((x) => typeof x === 'string' && x.toLowerCase() === PATCH_OP.toLowerCase()))) {
    throw badRequest(`A PATCH body's schemas must name ${PATCH_OP}.`, 'invalidSyntax');
  }
  const opsKey = Object.keys(b).find((k) => k.toLowerCase() === 'operations');
  const ops = opsKey ? b[opsKey] : undefined;
  if (!Array.isArray(ops) || !ops.length) throw badRequest('A PATCH body needs a non-empty Operations list.', 'invalidSyntax');
  let doc: Json = structuredClone(current);
  for (const raw of ops) {
    if (!raw || typeof raw !== 'object') throw badRequest('Each PATCH operation must be an object.', 'invalidSyntax');
    const op = lowerKeys(raw as Json);
    const kind = typeof op.op === 'string' ? op.op.toLowerCase() : '';
    if (kind !== 'add' && kind !== 'replace' && kind !== 'remove') throw badRequest(`Unknown PATCH op '${String(op.op)}'.`, 'invalidSyntax');
    const path = typeof op.path === 'string' && op.path.trim() ? op.path.trim() : undefined;
    if (!path) {
      if (kind === 'remove') throw badRequest('A remove operation needs a path.', 'noTarget');
      if (!op.value || typeof op.value !== 'object' || Array.isArray(op.value))
        throw badRequest(`An ${kind} without a path takes an object value.`, 'invalidValue');
      for (const [k, v] of Object.entries(op.value as Json)) {
        if (k.toLowerCase() === 'schemas') continue;
        if (k.toLowerCase().startsWith('urn:') && v && typeof v === 'object' && !Array.isArray(v) && isExtensionKey(rt, k)) {
          for (const [sk, sv] of Object.entries(v as Json)) doc = applyOne(rt, doc, kind, `${k}:${sk}`, sv);
        } else doc = applyOne(rt, doc, kind, k, v);
      }
    } else doc = applyOne(rt, doc, kind, path, op.value);
  }
  // Required attributes stay required (a remove of userName is refused).
  normalizeResource(rt, doc);
  return doc;
}

function isExtensionKey(rt: ResourceTypeDef, key: string): boolean {
  return rt.extensions.some((x) => x.id.toLowerCase() === key.toLowerCase());
}

function lowerKeys(o: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(o)) out[k.toLowerCase()] = v;
  return out;
}

function applyOne(rt: ResourceTypeDef, doc: Json, kind: 'add' | 'replace' | 'remove', rawPath: string, value: unknown): Json {
  if (rawPath.toLowerCase() === 'externalid') {
    if (kind === 'remove' || value === null) delete doc.externalId;
    else doc.externalId = String(value);
    return doc;
  }
  if (rawPath.toLowerCase() === 'id' || rawPath.toLowerCase().startsWith('meta')) return doc;
  const { path, filter } = parsePatchPath(rt, rawPath);
  if (path.def.mutability === 'readOnly') throw badRequest(`The attribute '${path.attr}' is read-only.`, 'mutability');
  const holder = holderOf(doc, path, kind !== 'remove');
  if (!holder) return doc;
  if (filter) return applyFiltered(doc, holder, path, filter, kind, value);
  const where = path.sub ? `${path.attr}.${path.sub}` : path.attr;

  if (kind === 'remove') {
    if (!path.sub) {
      if (path.def.multiValued && value !== undefined && value !== null) {
        // Remove the listed values (`members` with a value list, as some clients send it).
        const drop = (Array.isArray(value) ? value : [value]).map((v) => String(v && typeof v === 'object' ? (v as Json).value : v).toLowerCase());
        const list = Array.isArray(holder[path.attr]) ? (holder[path.attr] as Json[]) : [];
        holder[path.attr] = list.filter((item) => !drop.includes(String(item.value).toLowerCase()));
      } else delete holder[path.attr];
    } else {
      const target = holder[path.attr];
      if (Array.isArray(target)) target.forEach((item) => item && typeof item === 'object' && delete (item as Json)[path.sub!]);
      else if (target && typeof target === 'object') delete (target as Json)[path.sub];
    }
    cleanup(doc, path);
    return doc;
  }

  if (value === null || value === undefined) {
    if (kind === 'replace') {
      // Replace with null clears the attribute (what clients mean by it).
      return applyOne(rt, doc, 'remove', rawPath, undefined);
    }
    throw badRequest(`An add of '${where}' needs a value.`, 'invalidValue');
  }

  if (path.sub) {
    const c = coerceValue(path.subDef!, value, where);
    const target = holder[path.attr];
    if (path.def.multiValued) {
      const list = Array.isArray(target) ? (target as Json[]) : [];
      if (!list.length) list.push({});
      for (const item of list) item[path.sub] = c;
      holder[path.attr] = list;
    } else holder[path.attr] = { ...(target && typeof target === 'object' ? (target as Json) : {}), [path.sub]: c };
    return doc;
  }

  const c = coerceValue(path.def, value, where);
  if (path.def.multiValued) {
    const incoming = (c as Json[]) ?? [];
    if (kind === 'replace') holder[path.attr] = incoming;
    else {
      const list = Array.isArray(holder[path.attr]) ? (holder[path.attr] as Json[]) : [];
      for (const item of incoming) {
        const same = list.findIndex(
          (x) => x.value !== undefined && item.value !== undefined && String(x.value).toLowerCase() === String(item.value).toLowerCase(),
        );
        if (same >= 0) list[same] = { ...list[same], ...item };
        else list.push(item);
      }
      holder[path.attr] = list;
    }
  } else if (path.def.type === 'complex' && c && typeof c === 'object') {
    const before = holder[path.attr];
    holder[path.attr] = { ...(before && typeof before === 'object' ? (before as Json) : {}), ...(c as Json) };
  } else holder[path.attr] = c;
  return doc;
}

function applyFiltered(doc: Json, holder: Json, path: AttrPath, filter: Filter, kind: 'add' | 'replace' | 'remove', value: unknown): Json {
  const list = Array.isArray(holder[path.attr]) ? (holder[path.attr] as Json[]) : [];
  const hit = list.map((item) => item && typeof item === 'object' && matches(filter, item));
  if (kind === 'remove') {
    if (path.sub) list.forEach((item, i) => hit[i] && delete item[path.sub!]);
    else holder[path.attr] = list.filter((_, i) => !hit[i]);
    cleanup(doc, path);
    return doc;
  }
  const where = `${path.attr}[...]${path.sub ? '.' + path.sub : ''}`;
  if (!hit.some(Boolean)) {
    // Entra replaces `emails[type eq "work"].value` on a user that has no work email yet: the element is
    // created from the filter's equalities (RFC 7644 would answer noTarget; clients expect it to land).
    const seed = equalities(filter);
    if (!seed) throw badRequest(`No value of '${path.attr}' matches the path's filter.`, 'noTarget');
    const item: Json = { ...seed };
    if (path.sub) item[path.sub] = coerceValue(path.subDef!, value, where);
    else Object.assign(item, coerceValue({ ...path.def, multiValued: false }, value, where) as Json);
    list.push(item);
    holder[path.attr] = list;
    return doc;
  }
  list.forEach((item, i) => {
    if (!hit[i]) return;
    if (path.sub) item[path.sub] = coerceValue(path.subDef!, value, where);
    else Object.assign(item, coerceValue({ ...path.def, multiValued: false }, value, where) as Json);
  });
  holder[path.attr] = list;
  return doc;
}

/** `type eq "work" and primary eq true` as `{ type: 'work', primary: true }`; undefined for anything else. */
function equalities(f: Filter): Json | undefined {
  if (f.op === 'eq' && !f.path.sub) return { [f.path.attr]: f.value };
  if (f.op === 'and') {
    const l = equalities(f.left);
    const r = equalities(f.right);
    return l && r ? { ...l, ...r } : undefined;
  }
  return undefined;
}

function holderOf(doc: Json, path: AttrPath, create: boolean): Json | undefined {
  if (!path.extension) return doc;
  const existing = doc[path.extension];
  if (existing && typeof existing === 'object') return existing as Json;
  if (!create) return undefined;
  const h: Json = {};
  doc[path.extension] = h;
  return h;
}

/** Drop an emptied extension object or complex value, so a removed attribute is absent, not `{}`. */
function cleanup(doc: Json, path: AttrPath): void {
  const holder = path.extension ? (doc[path.extension] as Json | undefined) : doc;
  if (!holder) return;
  const v = holder[path.attr];
  if (v && typeof v === 'object' && !Array.isArray(v) && !Object.keys(v).length) delete holder[path.attr];
  if (path.extension && !Object.keys(holder).length) delete doc[path.extension];
}
