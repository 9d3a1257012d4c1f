import { Type } from '@sinclair/typebox';
import { defineSchema } from '../core/validation/ajv';
import { Guid, Nullable, Timestamp } from '../core/validation/schemas';

/** Response schemas of `GET /leavers` (docs/leavers.md). */
export const Leaver = defineSchema(
  Type.Object(
    {
      meshObjectId: Guid(),
      displayName: Type.String(),
      objectType: Type.String(),
      connectorId: Guid({ description: 'The target connector.' }),
      connectorName: Nullable(Type.String({ description: 'null: the connector was deleted since.' })),
      anchor: Type.String({ description: "The object's anchor in the target." }),
      sourceConnectorId: Nullable(Guid({ description: 'The connector whose run saw the leave; null: an export saw it (a provisioning condition).' })),
      sourceConnectorName: Nullable(Type.String()),
      operation: Type.Union([Type.Literal('delete'), Type.Literal('disable')]),
      reason: Type.Union([Type.Literal('gone'), Type.Literal('condition')], {
        description: 'gone: the mesh object was deleted; condition: its provisioning condition stopped holding.',
      }),
      state: Type.Union([Type.Literal('pending'), Type.Literal('late'), Type.Literal('done')], {
        description: 'done: confirmed; late: not confirmed and past deadlineOn (computed at the request); pending: otherwise.',
      }),
      late: Type.Boolean({ description: 'Late now, or confirmed after its deadline.' }),
      seenOn: Timestamp(),
      seenRunId: Nullable(Guid()),
      dueOn: Nullable(Timestamp({ description: "The end of the target's grace (deprovisioning.graceDays); null: none." })),
      deadlineOn: Timestamp({ description: 'dueOn (else seenOn) plus the target\u2019s deprovisioning.deadlineMinutes.' }),
      sentOn: Nullable(Timestamp()),
      sentRunId: Nullable(Guid()),
      confirmedOn: Nullable(Timestamp()),
      confirmedRunId: Nullable(Guid()),
      seconds: Nullable(Type.Number({ minimum: 0, description: 'From seenOn (or dueOn, when later) to confirmedOn.' })),
    },
    { $id: 'Leaver', additionalProperties: false },
  ),
);

export const LeaverList = defineSchema(
  Type.Object(
    { items: Type.Array(Type.Ref('Leaver')), totalCount: Type.Integer({ minimum: 0 }) },
    { $id: 'LeaverList', additionalProperties: false, description: 'Newest first (by seenOn).' },
  ),
);
