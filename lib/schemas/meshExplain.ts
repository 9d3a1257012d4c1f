import { Type } from '@sinclair/typebox';
import { defineSchema } from '../core/validation/ajv';
import { Guid, Nullable, Timestamp } from '../core/validation/schemas';

/** Schemas of explain (`/mesh/objects/{id}/attributes/{name}/explain`) and history (`/mesh/objects/{id}/history`). */
const Scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);
const Value = Type.Union([Scalar, Type.Array(Scalar)]);

/** An outbound flow or computed attribute with `unique` (docs/unique-values.md): the value held, the candidate that won, the ones skipped and why. */
const UniqueExplanationSchema = Type.Object(
  {
    pool: Type.String({ description: 'Where the value is reserved: connector/<id>/<attribute>, targets/<ids> or mesh/<attribute>.' }),
    value: Nullable(Type.String()),
    candidate: Nullable(Type.Integer({ description: "The winning candidate's index in the rule's list." })),
    counter: Nullable(Type.Integer()),
    reservedOn: Nullable(Timestamp()),
    skipped: Type.Array(
      Type.Object(
        {
          candidate: Type.Integer(),
          counter: Type.Optional(Type.Integer()),
          value: Nullable(Type.String()),
          reason: Type.String(),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const Candidate = Type.Object(
  {
    connectorId: Nullable(Guid({ description: 'The contributing connector; null for a value computed by a MeshComposerRule.' })),
    connectorName: Nullable(Type.String()),
    csObjectId: Nullable(Guid({ description: "The contributing connector-space object (the connector's object joined to this mesh object)." })),
    sourceAttribute: Nullable(Type.String()),
    value: Value,
    ruleId: Guid(),
    ruleType: Nullable(Type.String({ description: 'FlowRule or MeshComposerRule; null when the rule no longer exists.' })),
    confidence: Type.Integer(),
    priority: Type.Integer(),
    updatedOn: Timestamp({ description: 'When this value was contributed (an unchanged value keeps its time).' }),
    runId: Nullable(Guid({ description: 'The run that contributed this value; null for values contributed before runs were recorded.' })),
    outcome: Type.Union(['won', 'lowerConfidence', 'lowerPriority', 'older', 'ruleDisabled'].map((o) => Type.Literal(o))),
  },
  { additionalProperties: false },
);

export const AttributeExplanation = defineSchema(
  Type.Object(
    {
      meshObjectId: Guid(),
      attribute: Type.String(),
      value: Value,
      winner: Nullable(Candidate),
      candidates: Type.Array(Candidate),
      composedBy: Nullable(
        Type.Object(
          {
            ruleId: Guid(),
            inputs: Type.Array(Type.String()),
            unique: Type.Optional(UniqueExplanationSchema),
          },
          { additionalProperties: false },
        ),
      ),
      pending: Type.Optional(
        Type.Array(
          Type.Object(
            {
              connectorId: Guid(),
              connectorName: Nullable(Type.String()),
              ruleId: Guid(),
              value: Value,
              effectiveFrom: Timestamp({ description: 'When the value takes effect (its rule names effectiveFromAttribute; docs/dated-changes.md).' }),
            },
            { additionalProperties: false },
          ),
          { description: 'Future-dated values of the linked source objects that wait for their date (present only when there are some).' },
        ),
      ),
      exports: Type.Array(
        Type.Object(
          {
            connectorId: Guid(),
            connectorName: Type.String(),
            targetAttribute: Type.String(),
            value: Value,
            state: Type.Union([Type.Literal('confirmed'), Type.Literal('pendingExport'), Type.Literal('awaitingConfirmation')]),
            unique: Type.Optional(UniqueExplanationSchema),
          },
          { additionalProperties: false },
        ),
      ),
      relationship: Type.Optional(
        Type.Object(
          {
            type: Type.String(),
            targets: Type.Array(
              Type.Object(
                {
                  meshObjectId: Guid(),
                  displayName: Type.String(),
                  anchorValue: Type.String(),
                  objectType: Type.String(),
                  sources: Type.Array(
                    Type.Object(
                      {
                        connectorId: Nullable(Guid()),
                        connectorName: Nullable(Type.String()),
                        csObjectId: Nullable(Guid()),
                        sourceAttribute: Nullable(Type.String()),
                        value: Value,
                        ruleId: Nullable(Guid()),
                        ruleName: Nullable(Type.String()),
                        ruleType: Nullable(Type.String()),
                        matchedBy: Nullable(Type.String({ description: "How the value names the related object: 'dn', 'anchor' or a mesh attribute." })),
                      },
                      { additionalProperties: false },
                    ),
                  ),
                },
                { additionalProperties: false },
              ),
            ),
            pending: Type.Array(
              Type.Object({ value: Type.String(), matchedBy: Nullable(Type.String()), connectorId: Nullable(Guid()) }, { additionalProperties: false }),
              { description: 'References that name no mesh object yet (they resolve when it arrives).' },
            ),
          },
          { additionalProperties: false, description: 'Present when the name is a relationship type of the object.' },
        ),
      ),
    },
    { $id: 'AttributeExplanation', additionalProperties: false },
  ),
);

export const MeshHistoryPage = defineSchema(
  Type.Object(
    {
      items: Type.Array(
        Type.Object(
          {
            timestamp: Timestamp(),
            runId: Guid(),
            connectorId: Guid(),
            operation: Type.Union([Type.Literal('Created'), Type.Literal('Updated'), Type.Literal('Deleted'), Type.Literal('Restored')]),
            changes: Type.Array(Type.Object({ attribute: Type.String(), old: Value, new: Value }, { additionalProperties: false })),
          },
          { additionalProperties: false },
        ),
      ),
      totalCount: Type.Integer({ minimum: 0 }),
    },
    { $id: 'MeshHistoryPage', additionalProperties: false, description: 'Newest first; totalCount counts every entry of the object.' },
  ),
);
