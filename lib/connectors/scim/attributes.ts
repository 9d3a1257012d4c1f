import type { AttributeValue, ScalarValue } from '../../core/values';
import type { ConnectorSchema } from '../sdk';

/**
 * SCIM resources (RFC 7643) as flat attributes a rule can name, both ways. One mapping for both SCIM connector
 * types: `scim_inbound` (what clients pushed to the service) and `scim` (a SCIM server the service reads and
 * provisions), so a rule reads `givenName` or `department` the same way from either.
 *
 * - Core: `userName`, `externalId`, `displayName`, `nickName`, `title`, `userType`, `preferredLanguage`, `locale`,
 *   `timezone`, `active`; `name.*` as `givenName`, `familyName`, `middleName`, `formattedName`.
 * - Typed multi-valued: `email` (the primary email, else the `work` one, else the first), `emails` (every email,
 *   read only), `phoneNumber` (the primary or first non-mobile number), `mobile` (type `mobile`).
 * - Enterprise extension: `employeeNumber`, `department`, `costCenter`, `organization`, `division`, `manager`
 *   (the manager's id: a reference to a User).
 * - Groups: `displayName`, `externalId`, `members` (the members' ids: references).
 * - `id` (the anchor), read only.
 */
export const ENTERPRISE_USER = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const CORE_GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

export type ScimResourceType = 'User' | 'Group';
export type Json = Record<string, unknown>;

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : null);
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

function multiValues(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.map((i) => (i && typeof i === 'object' ? str((i as Json).value) : typeof i === 'string' ? i : null)).filter((v): v is string => v !== null);
}

function preferred(list: unknown, type?: string): string | null {
  if (!Array.isArray(list)) return null;
  const items = list.filter((i): i is Json => !!i && typeof i === 'object');
  const hit = items.find((i) => i.primary === true) ?? (type ? items.find((i) => String(i.type).toLowerCase() === type) : undefined) ?? items[0];
  return hit ? str(hit.value) : null;
}

/**
 * One writable single-valued attribute: where it lives in a SCIM resource and the PATCH path that writes it.
 * `typed`: an element of a multi-valued attribute chosen by its `type` (`emails[type eq "work"].value`).
 */
interface Field {
  name: string;
  kind: 'string' | 'boolean';
  /** Property path in the resource (the extension's URN is one segment). */
  at: string[];
  typed?: { list: string; type: string };
}

const USER_FIELDS: Field[] = [
  ...['userName', 'externalId', 'displayName', 'nickName', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone'].map((name): Field => ({
    name,
    kind: 'string',
    at: [name],
  })),
  { name: 'active', kind: 'boolean', at: ['active'] },
  { name: 'givenName', kind: 'string', at: ['name', 'givenName'] },
  { name: 'familyName', kind: 'string', at: ['name', 'familyName'] },
  { name: 'middleName', kind: 'string', at: ['name', 'middleName'] },
  { name: 'formattedName', kind: 'string', at: ['name', 'formatted'] },
  { name: 'email', kind: 'string', at: [], typed: { list: 'emails', type: 'work' } },
  { name: 'phoneNumber', kind: 'string', at: [], typed: { list: 'phoneNumbers', type: 'work' } },
  { name: 'mobile', kind: 'string', at: [], typed: { list: 'phoneNumbers', type: 'mobile' } },
  ...['employeeNumber', 'department', 'costCenter', 'organization', 'division'].map((name): Field => ({ name, kind: 'string', at: [ENTERPRISE_USER, name] })),
  { name: 'manager', kind: 'string', at: [ENTERPRISE_USER, 'manager', 'value'] },
];

const GROUP_FIELDS: Field[] = [
  { name: 'displayName', kind: 'string', at: ['displayName'] },
  { name: 'externalId', kind: 'string', at: ['externalId'] },
];

/** The writable single-valued attributes of a resource type, by lower-case name. */
const FIELDS: Record<ScimResourceType, Map<string, Field>> = {
  User: new Map(USER_FIELDS.map((f) => [f.name.toLowerCase(), f])),
  Group: new Map(GROUP_FIELDS.map((f) => [f.name.toLowerCase(), f])),
};

/** A SCIM resource's flat attributes and references (`manager`, `members`), as connectors read them. */
export function flattenResource(
  type: ScimResourceType,
  id: string,
  d: Json,
): { attributes: Record<string, AttributeValue>; references: Record<string, string[]> } {
  const attributes: Record<string, AttributeValue> = { id, externalId: str(d.externalId), displayName: str(d.displayName) };
  const references: Record<string, string[]> = {};
  if (type === 'User') {
    const name = obj(d.name);
    const ent = obj(d[ENTERPRISE_USER]);
    const phones = Array.isArray(d.phoneNumbers) ? (d.phoneNumbers as Json[]) : [];
    Object.assign(attributes, {
      userName: str(d.userName),
      givenName: str(name.givenName),
      familyName: str(name.familyName),
      middleName: str(name.middleName),
      formattedName: str(name.formatted),
      nickName: str(d.nickName),
      title: str(d.title),
      userType: str(d.userType),
      preferredLanguage: str(d.preferredLanguage),
      locale: str(d.locale),
      timezone: str(d.timezone),
      active: typeof d.active === 'boolean' ? d.active : null,
      email: preferred(d.emails, 'work'),
      emails: multiValues(d.emails),
      phoneNumber: preferred(phones.filter((p) => String(obj(p).type).toLowerCase() !== 'mobile')),
      mobile: str(obj(phones.find((p) => String(obj(p).type).toLowerCase() === 'mobile')).value),
      employeeNumber: str(ent.employeeNumber),
      department: str(ent.department),
      costCenter: str(ent.costCenter),
      organization: str(ent.organization),
      division: str(ent.division),
    });
    const manager = typeof ent.manager === 'string' ? str(ent.manager) : str(obj(ent.manager).value);
    attributes.manager = manager;
    if (manager) references.manager = [manager];
  } else {
    const members = multiValues(d.members);
    attributes.members = members;
    if (members.length) references.members = members;
  }
  return { attributes, references };
}

/** What both SCIM connector types expose: Users and Groups with the attributes of {@link flattenResource}. */
export const SCIM_CONNECTOR_SCHEMA: ConnectorSchema = {
  objectTypes: [
    {
      name: 'User',
      anchorAttribute: 'id',
      attributes: [
        { name: 'id', type: 'string', multiValued: false },
        ...USER_FIELDS.filter((f) => f.name !== 'manager').map((f) => ({
          name: f.name,
          type: f.kind,
          multiValued: false,
          ...(f.name === 'userName' ? { required: true } : {}),
        })),
        { name: 'emails', type: 'string', multiValued: true },
        { name: 'manager', type: 'string', multiValued: false, reference: { objectType: 'User', resolveBy: 'anchor' } },
      ],
    },
    {
      name: 'Group',
      anchorAttribute: 'id',
      attributes: [
        { name: 'id', type: 'string', multiValued: false },
        { name: 'externalId', type: 'string', multiValued: false },
        { name: 'displayName', type: 'string', multiValued: false, required: true },
        { name: 'members', type: 'string', multiValued: true, reference: { objectType: 'User', resolveBy: 'anchor' } },
      ],
    },
  ],
};

// ---------------------------------------------------------------------------------------------------------
// Writing

/** An attribute an export cannot write: the message names it and says why. */
export class UnwritableAttributeError extends Error {}

/**
 * The multi-valued attributes an export writes by value: a group's `members` (ids), a user's `emails` (the
 * addresses besides the work one, written with type `other`; the work address is `email`).
 */
interface ValueList {
  list: string;
  type?: string;
}
const LISTS: Record<ScimResourceType, Map<string, ValueList>> = {
  User: new Map([['emails', { list: 'emails', type: 'other' }]]),
  Group: new Map([['members', { list: 'members' }]]),
};

/** Adds and removes of single values of multi-valued attributes, by attribute name (ExportChange's). */
export type ValueChanges = Readonly<Record<string, readonly ScalarValue[]>>;

function field(type: ScimResourceType, name: string): Field {
  const f = FIELDS[type].get(name.toLowerCase());
  if (f) return f;
  const writable = [...[...FIELDS[type].values()].map((x) => x.name), ...LISTS[type].keys()];
  throw new UnwritableAttributeError(
    name.toLowerCase() === 'id'
      ? `The attribute 'id' of a SCIM ${type} is read only: the server assigns it.`
      : `The SCIM connector does not write the attribute '${name}' of a ${type}; it writes: ${writable.join(', ')}.`,
  );
}

const listOf = (type: ScimResourceType, name: string): ValueList | undefined => LISTS[type].get(name.toLowerCase());

/** A value as the SCIM attribute's type wants it (flows may give `"true"` for a boolean, a number for a string). */
function scimValue(f: Field, v: AttributeValue | undefined): string | boolean | null {
  const one = Array.isArray(v) ? (v.find((x) => x !== null) ?? null) : (v ?? null);
  if (one === null || one === '') return null;
  if (f.kind === 'boolean') {
    if (typeof one === 'boolean') return one;
    const s = String(one).toLowerCase();
    if (s === 'true' || s === '1') return true;
    if (s === 'false' || s === '0') return false;
    throw new UnwritableAttributeError(`The attribute '${f.name}' is a boolean; '${String(one)}' is neither true nor false.`);
  }
  return String(one);
}

function values(v: AttributeValue | undefined | readonly ScalarValue[]): string[] {
  return (Array.isArray(v) ? v : v === null || v === undefined ? [] : [v]).filter((x): x is string | number | boolean => x !== null && x !== '').map(String);
}

const entry = (l: ValueList, value: string): Json => (l.type ? { value, type: l.type } : { value });

/** Set one field in a resource (the resource is the caller's own copy). */
function setField(r: Json, f: Field, value: string | boolean | null): void {
  if (f.typed) {
    const list = Array.isArray(r[f.typed.list]) ? (r[f.typed.list] as Json[]).filter((i) => i && typeof i === 'object') : [];
    const i = list.findIndex((e) => String(e.type).toLowerCase() === f.typed!.type);
    if (value === null) {
      if (i >= 0) list.splice(i, 1);
    } else if (i >= 0) list[i] = { ...list[i], value };
    else list.unshift({ value, type: f.typed.type, ...(list.some((e) => e.primary === true) ? {} : { primary: true }) });
    if (list.length) r[f.typed.list] = list;
    else delete r[f.typed.list];
    return;
  }
  let cur = r;
  for (const key of f.at.slice(0, -1)) {
    if (!cur[key] || typeof cur[key] !== 'object') {
      if (value === null) return;
      cur[key] = {};
    }
    cur = cur[key] as Json;
  }
  const last = f.at[f.at.length - 1];
  if (value === null) delete cur[last];
  else cur[last] = value;
}

/**
 * Write a value list: `whole` replaces the values the list holds (for `emails`, those besides the work one), then
 * `adds` and `removes` change single values. The work email (an `email` field) is never touched here.
 */
function setList(r: Json, l: ValueList, whole: string[] | undefined, adds: string[], removes: string[]): void {
  const items = (Array.isArray(r[l.list]) ? (r[l.list] as unknown[]) : []).map((i) => (i && typeof i === 'object' ? (i as Json) : { value: i }));
  const kept = l.type ? items.filter((i) => String(i.type).toLowerCase() === 'work') : [];
  let own = l.type ? items.filter((i) => String(i.type).toLowerCase() !== 'work') : items;
  if (whole) own = whole.filter((v) => !kept.some((k) => String(k.value) === v)).map((v) => entry(l, v));
  const gone = new Set(removes);
  own = own.filter((i) => !gone.has(String(i.value)));
  for (const a of adds) if (![...kept, ...own].some((i) => String(i.value) === a)) own.push(entry(l, a));
  const all = [...kept, ...own];
  if (all.length || l.list === 'members') r[l.list] = all;
  else delete r[l.list];
}

/**
 * `resource` with the flat `attributes` written into it (a new object: `resource` is not changed), and single
 * values of `members` or `emails` added and removed. For an add (from `{}`) and for a replace (PUT) of the resource
 * read from the server. Throws {@link UnwritableAttributeError} for an attribute the mapping does not write.
 */
export function writeAttributes(
  type: ScimResourceType,
  resource: Json,
  attributes: Record<string, AttributeValue>,
  adds: ValueChanges = {},
  removes: ValueChanges = {},
): Json {
  const r = structuredClone(resource);
  delete r.meta;
  const schemas = new Set(Array.isArray(r.schemas) ? (r.schemas as string[]) : [type === 'User' ? CORE_USER : CORE_GROUP]);
  const wholeLists = new Map<ValueList, string[]>();
  for (const [name, v] of Object.entries(attributes)) {
    const l = listOf(type, name);
    if (l) {
      wholeLists.set(l, values(v));
      continue;
    }
    const f = field(type, name);
    setField(r, f, scimValue(f, v));
    if (f.at[0] === ENTERPRISE_USER && r[ENTERPRISE_USER]) schemas.add(ENTERPRISE_USER);
  }
  for (const l of LISTS[type].values()) {
    const add = values(adds[l.list]);
    const remove = values(removes[l.list]);
    if (wholeLists.has(l) || add.length || remove.length) setList(r, l, wholeLists.get(l), add, remove);
  }
  r.schemas = [...schemas];
  return r;
}

export interface PatchOperation {
  op: 'add' | 'replace' | 'remove';
  path?: string;
  value?: unknown;
}

/** The PATCH path of a field: `name.givenName`, `emails[type eq "work"].value`, `urn:...:User:department`. */
function patchPath(f: Field): string {
  if (f.typed) return `${f.typed.list}[type eq "${f.typed.type}"].value`;
  if (f.at[0] === ENTERPRISE_USER) return `${ENTERPRISE_USER}:${f.at[1]}`;
  return f.at.join('.');
}

const quoted = (v: string) => `"${v.replace(/["\\]/g, '\\$&')}"`;

/**
 * Whether an update must be a read-modify-write (GET, then PUT) rather than a PATCH: a user's `emails` given
 * whole means "these addresses besides the work one", which no PATCH path says portably.
 */
export function needsReplace(type: ScimResourceType, attributes: Record<string, AttributeValue>): boolean {
  return type === 'User' && Object.keys(attributes).some((k) => listOf(type, k) !== undefined);
}

/**
 * The PATCH operations (RFC 7644 3.5.2) of an update: `replace` for each value given, `remove` for each cleared
 * one; single values of `members` (or `emails`) by `add` and by `remove` with a value filter
 * (`members[value eq "<id>"]`), or a `replace` of a group's whole member list when the change gives it whole.
 * The manager is written as `{ "value": "<id>" }`. A user's whole `emails` is not a PATCH ({@link needsReplace}).
 */
export function patchOperations(
  type: ScimResourceType,
  attributes: Record<string, AttributeValue>,
  adds: ValueChanges = {},
  removes: ValueChanges = {},
): PatchOperation[] {
  const ops: PatchOperation[] = [];
  for (const [name, v] of Object.entries(attributes)) {
    const l = listOf(type, name);
    if (l) {
      if (needsReplace(type, { [name]: v })) throw new Error(`${name} is written by a replace (needsReplace)`);
      ops.push({ op: 'replace', path: l.list, value: values(v).map((x) => entry(l, x)) });
      continue;
    }
    const f = field(type, name);
    const value = scimValue(f, v);
    const path = f.name === 'manager' ? `${ENTERPRISE_USER}:manager` : patchPath(f);
    if (value === null) ops.push({ op: 'remove', path });
    else ops.push({ op: 'replace', path, value: f.name === 'manager' ? { value } : value });
  }
  for (const l of LISTS[type].values()) {
    const add = values(adds[l.list]);
    if (add.length) ops.push({ op: 'add', path: l.list, value: add.map((x) => entry(l, x)) });
    for (const x of values(removes[l.list])) ops.push({ op: 'remove', path: `${l.list}[value eq ${quoted(x)}]` });
  }
  return ops;
}

/** The filter that finds the resource an add collided with: `userName eq "..."` (Users), `displayName eq "..."` (Groups). */
export function collisionFilter(type: ScimResourceType, resource: Json): string | undefined {
  const key = type === 'User' ? 'userName' : 'displayName';
  const v = str(resource[key]);
  return v === null ? undefined : `${key} eq ${quoted(v)}`;
}
