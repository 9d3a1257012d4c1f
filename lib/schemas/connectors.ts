import { Type, type Static } from '@sinclair/typebox';
import { CONNECTOR_TYPES, connectorTypeConfig } from '../connectors/registry';
import { defineSchema } from '../core/validation/ajv';
import { DisplayName, Guid, Nullable, Timestamp } from '../core/validation/schemas';

/**
 * Request and response schemas of `/connectors`. `config` is validated in a second step by the schema of
 * the connector's type (LdapConnectorConfig, ActiveDirectoryConnectorConfig, SqlConnectorConfig,
 * CustomConnectorConfig), with errors reported under `/config/...`.
 */
const ConnectorType = Type.Union(
  CONNECTOR_TYPES.map((t) => Type.Literal(t)),
  {
    description:
      'active_directory and ldap: directory connector; sql: SQL connector; custom: an implementation registered in code; scim_inbound: what SCIM clients push to the SCIM endpoint; scim: a SCIM 2.0 server the service reads and provisions (docs/scim.md).',
  },
);
const ConfigObject = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const CreateConnectorRequest = defineSchema(
  Type.Object(
    {
      name: DisplayName({ description: 'Unique, case-insensitive.' }),
      type: ConnectorType,
      config: ConfigObject('Validated by the configuration schema of `type`. Secret fields are encrypted at rest and never returned.'),
    },
    { $id: 'CreateConnectorRequest', additionalProperties: false },
  ),
);
export type CreateConnectorRequest = Static<typeof CreateConnectorRequest>;

export const UpdateConnectorRequest = defineSchema(
  Type.Object(
    {
      name: DisplayName({ description: 'Unique, case-insensitive.' }),
      type: Type.Optional(Type.String({ description: 'May be sent; must equal the stored type (the type cannot change: 400).' })),
      config: ConfigObject('The whole configuration (replaces the stored one). A secret sent as `********` keeps the stored value.'),
    },
    { $id: 'UpdateConnectorRequest', additionalProperties: false },
  ),
);
export type UpdateConnectorRequest = Static<typeof UpdateConnectorRequest>;

const ConnectorStatus = Type.Union([Type.Literal('active'), Type.Literal('disabled'), Type.Literal('error')], {
  description: 'error: the last run failed to connect.',
});

const listItemFields = {
  id: Guid(),
  name: Type.String(),
  type: Type.String(),
  status: ConnectorStatus,
  lastSync: Nullable(Timestamp({ description: 'When the last run completed; null before the first.' })),
};

export const ConnectorListItem = Type.Object(
  { ...listItemFields, updatedOn: Timestamp({ description: 'When its configuration last changed (the console lists it as "Updated").' }) },
  { additionalProperties: false },
);

export const Connector = defineSchema(
  Type.Object(
    {
      ...listItemFields,
      config: ConfigObject('The configuration with every secret replaced by `********`.'),
      instanceId: Nullable(Type.String({ description: 'The engine instance the connector is assigned to.' })),
      fullSyncRequired: Type.Boolean({
        description:
          'The rules of this connector changed since its last full import or FullSync: a FullSync (POST /connectors/{id}/import with runType FullSync) brings the objects a delta does not read in line.',
      }),
      createdOn: Timestamp(),
      updatedOn: Timestamp(),
    },
    { $id: 'Connector', additionalProperties: false },
  ),
);
export type Connector = Static<typeof Connector>;

export const ConnectorList = defineSchema(
  Type.Object({ connectors: Type.Array(ConnectorListItem), total: Type.Integer({ minimum: 0 }) }, { $id: 'ConnectorList', additionalProperties: false }),
);

export const ConnectionTestResult = defineSchema(
  Type.Object(
    {
      ok: Type.Boolean({ description: 'false when the test failed: a failed test is still a 200.' }),
      message: Type.String({
        description: 'What was reached, or `<code>: what failed` (a connector error code such as authentication_failed); never a secret.',
      }),
      durationMs: Type.Integer({ minimum: 0, description: 'How long the test took, in milliseconds.' }),
    },
    { $id: 'ConnectionTestResult', additionalProperties: false },
  ),
);

// The per-type configuration schemas are registered with the one Ajv instance at load, like every other.
for (const t of CONNECTOR_TYPES) defineSchema(connectorTypeConfig(t).configSchema);
