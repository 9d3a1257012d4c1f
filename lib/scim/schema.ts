/**
 * The SCIM 2.0 resource schemas this server speaks (RFC 7643): User, the enterprise User extension and Group,
 * as attribute definitions that drive everything else: input normalisation (attribute names in any case,
 * `"True"` strings as booleans), filters (case-exactness, date comparison), PATCH paths and the `/Schemas`
 * discovery document.
 */
export const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const CORE_GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_USER = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const BULK_REQUEST = 'urn:ietf:params:scim:api:messages:2.0:BulkRequest';
export const BULK_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:BulkResponse';
export const SPC_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
export const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
export const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

export type AttrType = 'string' | 'boolean' | 'decimal' | 'integer' | 'dateTime' | 'reference' | 'complex' | 'binary';

export interface AttrDef {
  name: string;
  type: AttrType;
  multiValued?: boolean;
  caseExact?: boolean;
  required?: boolean;
  mutability?: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned?: 'always' | 'default' | 'never' | 'request';
  uniqueness?: 'none' | 'server' | 'global';
  description?: string;
  subAttributes?: AttrDef[];
  referenceTypes?: string[];
  /** Other names clients send for this sub-attribute (a member's `displayName` for `display`). */
  aliases?: string[];
}

export interface SchemaDef {
  id: string;
  name: string;
  description: string;
  attributes: AttrDef[];
}

export type ResourceTypeName = 'User' | 'Group';

export interface ResourceTypeDef {
  name: ResourceTypeName;
  endpoint: '/Users' | '/Groups';
  schema: SchemaDef;
  extensions: SchemaDef[];
}

const s = (name: string, extra: Partial<AttrDef> = {}): AttrDef => ({ name, type: 'string', ...extra });
const b = (name: string, extra: Partial<AttrDef> = {}): AttrDef => ({ name, type: 'boolean', ...extra });
const multi = (name: string, subs: AttrDef[], extra: Partial<AttrDef> = {}): AttrDef => ({
  name,
  type: 'complex',
  multiValued: true,
  subAttributes: subs,
  ...extra,
});
/** The sub-attributes of the usual multi-valued attributes (emails, phoneNumbers...). */
const valueTypePrimary = (): AttrDef[] => [s('value'), s('display'), s('type'), b('primary')];

export const USER_SCHEMA: SchemaDef = {
  id: CORE_USER,
  name: 'User',
  description: 'User Account',
  attributes: [
    s('userName', { required: true, uniqueness: 'server', description: 'Unique identifier for the User, typically used to sign in.' }),
    {
      name: 'name',
      type: 'complex',
      subAttributes: [s('formatted'), s('familyName'), s('givenName'), s('middleName'), s('honorificPrefix'), s('honorificSuffix')],
    },
    s('displayName'),
    s('nickName'),
    { name: 'profileUrl', type: 'reference', referenceTypes: ['external'] },
    s('title'),
    s('userType'),
    s('preferredLanguage'),
    s('locale'),
    s('timezone'),
    b('active'),
    s('password', { mutability: 'writeOnly', returned: 'never' }),
    multi('emails', valueTypePrimary()),
    multi('phoneNumbers', valueTypePrimary()),
    multi('ims', valueTypePrimary()),
    multi('photos', [{ name: 'value', type: 'reference', referenceTypes: ['external'] }, s('display'), s('type'), b('primary')]),
    multi('addresses', [s('formatted'), s('streetAddress'), s('locality'), s('region'), s('postalCode'), s('country'), s('type'), b('primary')]),
    multi('groups', [s('value'), { name: '$ref', type: 'reference', referenceTypes: ['Group'] }, s('display'), s('type')], { mutability: 'readOnly' }),
    multi('entitlements', valueTypePrimary()),
    multi('roles', valueTypePrimary()),
    multi('x509Certificates', [{ name: 'value', type: 'binary' }, s('display'), s('type'), b('primary')]),
  ],
};

export const ENTERPRISE_SCHEMA: SchemaDef = {
  id: ENTERPRISE_USER,
  name: 'EnterpriseUser',
  description: 'Enterprise User',
  attributes: [
    s('employeeNumber'),
    s('costCenter'),
    s('organization'),
    s('division'),
    s('department'),
    {
      name: 'manager',
      type: 'complex',
      subAttributes: [s('value'), { name: '$ref', type: 'reference', referenceTypes: ['User'] }, s('displayName', { mutability: 'readOnly' })],
    },
  ],
};

export const GROUP_SCHEMA: SchemaDef = {
  id: CORE_GROUP,
  name: 'Group',
  description: 'Group',
  attributes: [
    s('displayName', { required: true }),
    multi('members', [
      s('value', { mutability: 'immutable' }),
      { name: '$ref', type: 'reference', referenceTypes: ['User', 'Group'], mutability: 'immutable' },
      s('display', { aliases: ['displayName'] }),
      s('type', { mutability: 'immutable' }),
    ]),
  ],
};

export const RESOURCE_TYPES: Record<ResourceTypeName, ResourceTypeDef> = {
  User: { name: 'User', endpoint: '/Users', schema: USER_SCHEMA, extensions: [ENTERPRISE_SCHEMA] },
  Group: { name: 'Group', endpoint: '/Groups', schema: GROUP_SCHEMA, extensions: [] },
};

/** Attributes every resource has (RFC 7643 section 3.1), found by filters and `attributes` too. */
export const COMMON_ATTRIBUTES: AttrDef[] = [
  s('id', { caseExact: true, mutability: 'readOnly', returned: 'always' }),
  s('externalId', { caseExact: true }),
  {
    name: 'meta',
    type: 'complex',
    mutability: 'readOnly',
    subAttributes: [s('resourceType'), { name: 'created', type: 'dateTime' }, { name: 'lastModified', type: 'dateTime' }, s('location'), s('version')],
  },
];

const eq = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The definition named `name` (any case; aliases too) among `defs`. */
export function findAttr(defs: readonly AttrDef[] | undefined, name: string): AttrDef | undefined {
  if (!defs) return undefined;
  return defs.find((d) => eq(d.name, name)) ?? defs.find((d) => d.aliases?.some((a) => eq(a, name)));
}

/** The extension schema of `rt` whose URN is `urn` (any case). */
export function findExtension(rt: ResourceTypeDef, urn: string): SchemaDef | undefined {
  return rt.extensions.find((x) => eq(x.id, urn));
}

/** The schema (core or an extension) a URN prefix of a path names, with the rest of the path. */
export function splitSchemaPrefix(rt: ResourceTypeDef, path: string): { schema: SchemaDef; rest: string } {
  for (const sc of [rt.schema, ...rt.extensions]) {
    if (path.length >= sc.id.length && eq(path.slice(0, sc.id.length), sc.id)) {
      const rest = path.slice(sc.id.length);
      if (rest === '') return { schema: sc, rest: '' };
      if (rest[0] === ':' || rest[0] === '.') return { schema: sc, rest: rest.slice(1) };
    }
  }
  return { schema: rt.schema, rest: path };
}

/** Discovery: the `/Schemas` resources. */
export function schemaResource(sc: SchemaDef, baseUrl: string): Record<string, unknown> {
  const attr = (d: AttrDef): Record<string, unknown> => ({
    name: d.name,
    type: d.type,
    multiValued: !!d.multiValued,
    description: d.description ?? '',
    required: !!d.required,
    caseExact: !!d.caseExact,
    mutability: d.mutability ?? 'readWrite',
    returned: d.returned ?? 'default',
    uniqueness: d.uniqueness ?? 'none',
    ...(d.referenceTypes ? { referenceTypes: d.referenceTypes } : {}),
    ...(d.subAttributes ? { subAttributes: d.subAttributes.map(attr) } : {}),
  });
  return {
    schemas: [SCHEMA_SCHEMA],
    id: sc.id,
    name: sc.name,
    description: sc.description,
    attributes: sc.attributes.map(attr),
    meta: { resourceType: 'Schema', location: `${baseUrl}/Schemas/${sc.id}` },
  };
}

export function resourceTypeResource(rt: ResourceTypeDef, baseUrl: string): Record<string, unknown> {
  return {
    schemas: [RESOURCE_TYPE_SCHEMA],
    id: rt.name,
    name: rt.name,
    endpoint: rt.endpoint,
    description: rt.schema.description,
    schema: rt.schema.id,
    schemaExtensions: rt.extensions.map((x) => ({ schema: x.id, required: false })),
    meta: { resourceType: 'ResourceType', location: `${baseUrl}/ResourceTypes/${rt.name}` },
  };
}

export const MAX_BULK_OPERATIONS = 50;
export const MAX_BULK_PAYLOAD = 1024 * 1024;
export const MAX_RESULTS = 1000;

export function serviceProviderConfig(baseUrl: string, documentationUri?: string): Record<string, unknown> {
  return {
    schemas: [SPC_SCHEMA],
    ...(documentationUri ? { documentationUri } : {}),
    patch: { supported: true },
    bulk: { supported: true, maxOperations: MAX_BULK_OPERATIONS, maxPayloadSize: MAX_BULK_PAYLOAD },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: true },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description: 'A bearer token from the configured authority carrying the SCIM role value.',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${baseUrl}/ServiceProviderConfig` },
  };
}
