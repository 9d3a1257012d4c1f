import { Type, type Static } from '@sinclair/typebox';
import { ConnectorPolicyFields, Continuous, Dictionary } from '../../core/validation/schemas';
import type { FieldError } from '../../core/errors';

/**
 * Configuration of the directory connector (types `ldap` and `active_directory`), per the contract's
 * directory table. `bindPassword` is secret (`x-secret`): encrypted at rest and never returned.
 * Type-dependent defaults (port, objectClasses, anchorAttribute) are filled by `directoryDefaults`; the `ldap`
 * anchor's default depends on the server and is decided by the connection test when the connector is saved.
 */
function directorySchema(type: 'ldap' | 'active_directory') {
  const isAd = type === 'active_directory';
  return Type.Object(
    adOnly(isAd, {
      host: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\s/]+$', description: 'Server host name or address.' }),
      port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: '636 with ldaps, else 389.' })),
      baseDN: Type.String({ minLength: 1, maxLength: 2048 }),
      bindDN: Type.String({ minLength: 1, maxLength: 2048 }),
      bindPassword: Type.String({
        minLength: 1,
        maxLength: 1024,
        'x-secret': true,
        writeOnly: true,
        description: 'Secret: never returned; `********` in a PUT keeps the stored value.',
      }),
      security: Type.Optional(Type.Union([Type.Literal('ldaps'), Type.Literal('starttls'), Type.Literal('none')], { default: 'ldaps' })),
      allowInsecure: Type.Optional(Type.Boolean({ description: 'Required (true) to use security `none`.' })),
      caCertificate: Type.Optional(
        Type.String({ minLength: 1, maxLength: 65536, pattern: '-----BEGIN CERTIFICATE-----', description: 'PEM; default: the system trust store.' }),
      ),
      timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600, default: 30 })),
      pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, default: 1000 })),
      containers: Type.Optional(
        Type.Object(
          {
            include: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { maxItems: 500 })),
            exclude: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { maxItems: 500 })),
          },
          { additionalProperties: false },
        ),
      ),
      objectClasses: Type.Optional(
        Dictionary(Type.String({ minLength: 1, maxLength: 256 }), {
          description: isAd ? 'Default: user -> User, group -> Group.' : 'Default: inetOrgPerson -> User, groupOfNames -> Group.',
          maxProperties: 100,
        }),
      ),
      attributes: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 2000, description: 'Default: all user attributes.' })),
      attributesFromRules: Type.Optional(
        Type.Boolean({
          default: false,
          description:
            'With no `attributes` list: read only the attributes the connector\'s rules use, with the anchor, objectClass and the reference attributes (docs/connector-ldap.md, "What an import reads").',
        }),
      ),
      anchorAttribute: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 256,
          description: isAd
            ? 'Default: objectGUID.'
            : 'Default: nsUniqueId on 389 Directory Server (known from the root DSE), else entryUUID; decided when the connector is created and kept.',
        }),
      ),
      deltaStrategy: Type.Optional(
        Type.Union(
          [Type.Literal('auto'), Type.Literal('changelog'), Type.Literal('accesslog'), Type.Literal('usn'), Type.Literal('dirsync'), Type.Literal('timestamp')],
          { default: 'auto' },
        ),
      ),
      exportDnTemplate: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'An expression giving the DN of an object to add.' })),
      objectType: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
      ...ConnectorPolicyFields(),
      continuous: Type.Optional(Continuous()),
      createContainers: Type.Optional(
        Type.Boolean({
          default: false,
          description: 'Create the missing OU= parents of an added or moved entry (in order, from the top) instead of failing it.',
        }),
      ),
      passwordOnUpdate: Type.Optional(
        Type.Boolean({
          default: false,
          description:
            'An outbound flow to a password the directory never shows (unicodePwd, userPassword) is written when the object is created; true: also with every update of the object.',
        }),
      ),
      memberRangeSize: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 1_000_000,
          default: 1500,
          description:
            "Active Directory only: how many values of a group's `member` one read asks for (ranged retrieval: `member;range=0-1499`, then `member;range=1500-2999`, ... until the domain controller answers a range ending in `*`). A domain controller answers at most its MaxValRange (1500 by default on Windows) per read.",
        }),
      ),
      mustChangePassword: Type.Optional(
        Type.Boolean({
          default: true,
          description:
            'Active Directory: an account given a password (unicodePwd) must change it at first logon (pwdLastSet 0), unless a flow writes pwdLastSet.',
        }),
      ),
    }),
    { $id: isAd ? 'ActiveDirectoryConnectorConfig' : 'LdapConnectorConfig', additionalProperties: false },
  );
}

/** The `active_directory`-only fields, left out of the `ldap` schema (which then refuses them). */
function adOnly<T extends { memberRangeSize?: unknown }>(isAd: boolean, properties: T): T {
  if (!isAd) delete properties.memberRangeSize;
  return properties;
}

export const LdapConfigSchema = directorySchema('ldap');
export const ActiveDirectoryConfigSchema = directorySchema('active_directory');

export type DirectoryConfig = Static<typeof LdapConfigSchema>;

/** Fill the defaults that depend on the type or on another field. */
export function directoryDefaults(type: 'ldap' | 'active_directory', config: DirectoryConfig): DirectoryConfig {
  const isAd = type === 'active_directory';
  return {
    ...config,
    port: config.port ?? (config.security === 'ldaps' || config.security === undefined ? 636 : 389),
    objectClasses: config.objectClasses ?? (isAd ? { user: 'User', group: 'Group' } : { inetOrgPerson: 'User', groupOfNames: 'Group' }),
    // ldap: left out, the default depends on the server (anchor.ts): decided by the connection test on save.
    ...(config.anchorAttribute !== undefined || isAd ? { anchorAttribute: config.anchorAttribute ?? 'objectGUID' } : {}),
  };
}

/** Attributes that hold an entry's DN: never an anchor (a rename or move changes them). */
export const DN_ATTRIBUTES = new Set(['dn', 'distinguishedname', 'entrydn']);

/**
 * Rules a JSON schema does not say well: `security: none` needs `allowInsecure: true`; the anchor is never
 * the DN.
 */
export function directoryChecks(config: DirectoryConfig): FieldError[] {
  const errors: FieldError[] = [];
  if (config.security === 'none' && config.allowInsecure !== true) {
    errors.push({ path: '/allowInsecure', message: "must be true to use security 'none' (the bind password would travel in clear text)" });
  }
  if (config.anchorAttribute && DN_ATTRIBUTES.has(config.anchorAttribute.toLowerCase())) {
    errors.push({
      path: '/anchorAttribute',
      message: 'must not be the DN (a rename or move changes it): use entryUUID, objectGUID or another immutable attribute',
    });
  }
  return errors;
}

/** The fields that are expressions (their syntax is checked at create/update). */
export const DIRECTORY_EXPRESSIONS = ['exportDnTemplate', 'provisioningCondition'] as const;
