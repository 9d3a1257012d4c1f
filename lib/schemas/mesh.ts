import { Type } from '@sinclair/typebox';
import { OPERATORS, VALUE_OPERATORS, type Operator } from '../mesh/query';
import { defineSchema } from '../core/validation/ajv';
import { AttributeName, Dictionary, Guid, Nullable, Timestamp } from '../core/validation/schemas';

/** Schemas of `/mesh/objects` (list, advanced search, detail). Semantics: docs/mesh-queries.md. */
const Count = () => Type.Integer({ minimum: 0 });
const Scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);

const identity = {
  meshObjectId: Guid(),
  objectType: Type.String({ description: 'For example User.' }),
  anchorValue: Type.String({ description: "The object's anchor value (its unique key)." }),
  createdOn: Timestamp(),
  updatedOn: Timestamp(),
};

/** Live (`active`) or a tombstone (`deleted`, with when it was deleted and when it is purged). */
const lifecycle = {
  state: Type.Union([Type.Literal('active'), Type.Literal('deleted')], {
    description: 'active: a live object. deleted: a tombstone (lost its last contributor), kept until purgeOn; it can be restored.',
  }),
  deletedOn: Type.Optional(Timestamp({ description: 'deleted only: when the object lost its last contributor.' })),
  purgeOn: Type.Optional(Timestamp({ description: 'deleted only: when the tombstone is purged (then the object is gone for good).' })),
};

export const MeshObjectListItem = defineSchema(
  Type.Object(
    {
      ...identity,
      ...lifecycle,
      attributeValues: Dictionary(Type.Union([Scalar, Type.Array(Scalar)]), {
        description: 'Attribute name -> consolidated value (an array for a multi-valued attribute).',
      }),
    },
    { $id: 'MeshObjectListItem', additionalProperties: false },
  ),
);

export const MeshObjectList = defineSchema(
  Type.Object(
    {
      items: Type.Array(Type.Ref('MeshObjectListItem')),
      totalCount: Count(),
      skip: Count(),
      take: Count(),
    },
    {
      $id: 'MeshObjectList',
      additionalProperties: false,
      description: 'Ordered by anchorValue (case-insensitive), then meshObjectId. totalCount counts every match.',
    },
  ),
);

export const MeshObjectDetail = defineSchema(
  Type.Object(
    {
      ...identity,
      ...lifecycle,
      attributes: Type.Array(
        Type.Object(
          {
            attributeName: Type.String(),
            attributeValue: Type.String({ description: 'One value as a string; a multi-valued attribute has one entry per value.' }),
            source: Nullable(Guid({ description: 'The connector the value came from; null for a value computed by a MeshComposerRule.' })),
            confidence: Type.Integer(),
            updatedOn: Timestamp(),
          },
          { additionalProperties: false },
        ),
      ),
      relationships: Type.Array(
        Type.Object(
          {
            relationshipType: Type.String(),
            targetMeshObjectId: Guid(),
            targetAnchorValue: Type.String(),
            targetObjectType: Type.String(),
            targetDisplayName: Type.Optional(Type.String({ description: "The related object's display name (its anchor when it shows none)." })),
          },
          { additionalProperties: false },
        ),
      ),
      displayName: Type.Optional(
        Type.String({ description: 'The first of the display attributes of the object type that has a value (Mesh:DisplayAttributes), else the anchor.' }),
      ),
      incomingRelationships: Type.Optional(
        Type.Array(
          Type.Object(
            {
              type: Type.String({ description: 'The relationship type, e.g. manager (a direct report) or member (a group).' }),
              fromMeshObjectId: Guid(),
              fromDisplayName: Type.String(),
              fromAnchorValue: Type.String(),
              fromObjectType: Type.String(),
            },
            { additionalProperties: false },
          ),
          { description: 'The objects whose relationships name this one, ordered by type then display name.' },
        ),
      ),
      connectorObjects: Type.Optional(
        Type.Array(
          Type.Object(
            {
              connectorId: Guid(),
              connectorName: Type.String(),
              csObjectId: Guid(),
              anchor: Nullable(Type.String({ description: 'Null for an add the target has not made yet.' })),
              dn: Nullable(Type.String()),
              state: Type.Union(['joined', 'pendingExport', 'awaitingConfirmation', 'error', 'scheduledDeprovision'].map((s) => Type.Literal(s))),
              pendingOperation: Type.Optional(Type.Union(['Add', 'Update', 'Delete', 'Rename'].map((s) => Type.Literal(s)))),
              error: Type.Optional(Type.String()),
              dueOn: Type.Optional(Timestamp({ description: 'scheduledDeprovision only: when the deprovisioning is due.' })),
            },
            { additionalProperties: false },
          ),
          { description: "The object's connector-space objects, one per connector it is linked to or staged in, ordered by connector name." },
        ),
      ),
    },
    { $id: 'MeshObject', additionalProperties: false },
  ),
);

export const MeshCriterionSchema = Type.Object(
  {
    attributeName: AttributeName({ description: 'A mesh attribute name (case-insensitive).' }),
    operator: Type.Unsafe<Operator>({
      type: 'string',
      enum: [...OPERATORS],
      description: 'Lower case. equals, contains, startswith, endswith compare case-insensitively and need value.',
    }),
    value: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  },
  {
    additionalProperties: false,
    if: { type: 'object', properties: { operator: { type: 'string', enum: [...VALUE_OPERATORS] } }, required: ['operator'] },
    then: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] },
  },
);

export const MeshSearchRequest = defineSchema(
  Type.Object(
    {
      objectType: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
      anchorSearch: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Case-insensitive substring of the anchor value.' })),
      criteria: Type.Array(MeshCriterionSchema, { maxItems: 50, default: [], description: 'Combined with AND.' }),
      skip: Type.Integer({ minimum: 0, default: 0 }),
      take: Type.Integer({ minimum: 0, maximum: 200, default: 50 }),
    },
    { $id: 'MeshSearchRequest', additionalProperties: false },
  ),
);
