import { Type, type Static } from '@sinclair/typebox';
import { INSTANCE_ID_PATTERN } from '../instances/config';
import { defineSchema } from '../core/validation/ajv';
import { DisplayName, Guid, Timestamp } from '../core/validation/schemas';

/**
 * Schemas of `/instances` and `/connectors/{id}/instance`. Instance ids are the runtime's
 * `WEBSITE_INSTANCE_ID`: a GUID under the local runtime, 64 hex digits on Azure; the API shows them lower-case.
 */
const InstanceId = (options: Record<string, unknown> = {}) =>
  Type.String({ pattern: INSTANCE_ID_PATTERN, description: 'An engine instance id (GUID under the local runtime, hex on Azure).', ...options });

export const EngineInstanceSchema = defineSchema(
  Type.Object(
    {
      id: InstanceId(),
      name: Type.String({ description: 'Unique, case-insensitive.' }),
      status: Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('offline')], {
        description: 'offline: no heartbeat for Engine__OfflineAfterSeconds (default 60); else paused when paused; else active.',
      }),
      lastHeartbeat: Timestamp(),
      connectorIds: Type.Array(Guid(), { description: 'Connectors assigned to the instance.' }),
    },
    { $id: 'EngineInstance', additionalProperties: false },
  ),
);
export type EngineInstanceBody = Static<typeof EngineInstanceSchema>;

export const EngineInstanceList = defineSchema(
  Type.Object(
    { items: Type.Array(Type.Ref('EngineInstance')), totalCount: Type.Integer({ minimum: 0 }) },
    { $id: 'EngineInstanceList', additionalProperties: false },
  ),
);

/** Pause and resume take no body; an empty object is accepted, anything in it is a 400. */
export const InstanceActionRequest = defineSchema(Type.Object({}, { $id: 'InstanceActionRequest', additionalProperties: false }));

export const RenameInstanceRequest = defineSchema(
  Type.Object(
    { name: DisplayName({ description: 'The new name: 1..256 characters, unique case-insensitively (409 when taken).' }) },
    { $id: 'RenameInstanceRequest', additionalProperties: false },
  ),
);
export type RenameInstanceRequest = Static<typeof RenameInstanceRequest>;

export const AssignConnectorRequest = defineSchema(
  Type.Object(
    { instanceId: InstanceId({ description: 'A registered engine instance (an unknown one is a 400 on /instanceId).' }) },
    { $id: 'AssignConnectorRequest', additionalProperties: false },
  ),
);
export type AssignConnectorRequest = Static<typeof AssignConnectorRequest>;

export const ConnectorAssignment = defineSchema(
  Type.Object(
    {
      connectorId: Guid(),
      instanceId: InstanceId(),
      instanceName: Type.String(),
      assignedOn: Timestamp({ description: 'When the connector was assigned to this instance.' }),
    },
    { $id: 'ConnectorAssignment', additionalProperties: false },
  ),
);
