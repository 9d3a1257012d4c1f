import { Type } from '@sinclair/typebox';
import { defineSchema } from '../core/validation/ajv';
import { Guid, Nullable, ProblemDetailsSchema, Timestamp } from '../core/validation/schemas';

/** Response schemas of `/license`, `/audit` and `/health`, and the problem+json body of every error. */
export const ProblemDetails = defineSchema(ProblemDetailsSchema);

export const License = defineSchema(
  Type.Object(
    {
      licensedTo: Nullable(Type.String()),
      edition: Nullable(Type.String()),
      expiresOn: Nullable(Timestamp()),
      limits: Type.Object(
        { connectors: Nullable(Type.Integer({ minimum: 0 })), meshObjects: Nullable(Type.Integer({ minimum: 0 })) },
        { additionalProperties: false, description: 'null: no limit.' },
      ),
    },
    { $id: 'License', additionalProperties: false, description: 'From the License:* settings; unset values are null.' },
  ),
);

export const AuditRecord = defineSchema(
  Type.Object(
    {
      auditId: Guid(),
      timestamp: Timestamp(),
      action: Type.String({
        description:
          'create, update, delete, trigger, pause, resume, rename, remove, assign, unassign, cancel, fail, retry, sync, apply, approve, reject, restore, read (SCIM reads).',
      }),
      targetType: Type.String({ description: 'connector, rule, instance, run, connectorSpaceObject, meshObject, configChange, scimResource.' }),
      targetId: Type.String(),
      actorUpn: Nullable(Type.String({ description: 'upn, else preferred_username (tokens); the principal (Negotiate); system for background work.' })),
      actorSid: Nullable(Type.String({ description: 'oid (tokens); the SID (Negotiate) where known.' })),
      scheme: Nullable(Type.String({ description: 'Bearer or Negotiate.' })),
      actorKey: Type.Optional(
        Type.String({
          description:
            "The principal (one person or application whatever the scheme): upn:<upn>, else oid:, sid:, krb:; app:<application id> for an app-only token; schedule:<name> or system for the engine's own work.",
        }),
      ),
      actorKind: Type.Optional(Type.String({ description: 'person, application or system.' })),
      outcome: Type.String({ description: 'success or failure (a refused approval: failure, with the reason in details).' }),
      details: Type.Optional(
        Type.String({
          description:
            'What the action was about when the target alone does not say: the reasons of an approve or reject of a run that exceeded a threshold, the plan an apply applies.',
        }),
      ),
    },
    { $id: 'AuditRecord', additionalProperties: false },
  ),
);

export const AuditList = defineSchema(
  Type.Object(
    { items: Type.Array(Type.Ref('AuditRecord')), totalCount: Type.Integer({ minimum: 0 }) },
    { $id: 'AuditList', additionalProperties: false, description: 'Newest first.' },
  ),
);

export const Health = defineSchema(
  Type.Object(
    {
      status: Type.Union([Type.Literal('healthy'), Type.Literal('unhealthy')]),
      instance: Type.String({ description: 'Engine:InstanceName, else the host name.' }),
      storage: Type.Union([Type.Literal('ok'), Type.Literal('unreachable')]),
      warnings: Type.Optional(
        Type.Array(Type.String(), {
          minItems: 1,
          description: 'Present only when there is a warning: the embedded storage (Azurite run by npm start) nearing its heap or data limit.',
        }),
      ),
    },
    { $id: 'Health', additionalProperties: false, description: '200 when storage answers, else 503 with storage unreachable.' },
  ),
);
