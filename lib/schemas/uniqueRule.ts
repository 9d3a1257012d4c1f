import { Type } from '@sinclair/typebox';
import { AttributeName } from '../core/validation/schemas';

/**
 * The `unique` object of an outbound FlowRule (docs/unique-values.md): candidates tried in order, checked in a
 * scope, reserved for the object for life. Embedded in the rule schemas (no `$id`). What the schema cannot say
 * (each candidate parses, the connectors exist, counter.from <= counter.to) is checked by lib/api/uniqueRules.ts.
 */
const Candidate = Type.String({
  minLength: 1,
  maxLength: 4096,
  description: "An expression; it reads what the rule's transformScript reads (`source`, `object`, `related`) and `counter`.",
});

export const UniqueRuleSchema = Type.Object(
  {
    candidates: Type.Array(Candidate, { minItems: 1, maxItems: 20, description: 'Tried in order; one that reads `counter` is tried for each counter value.' }),
    scope: Type.Optional(
      Type.Union([Type.Literal('connector'), Type.Literal('targets'), Type.Literal('mesh')], {
        description: 'Where the value must be unique: this connector (default), every connector of connectorIds, or a mesh attribute.',
      }),
    ),
    connectorIds: Type.Optional(
      Type.Array(Type.String(), {
        minItems: 1,
        maxItems: 50,
        description: "scope targets: the connectors (GUIDs) that share the values; the rule's own connector is added.",
      }),
    ),
    meshAttribute: Type.Optional(
      AttributeName({ description: 'scope mesh: the mesh attribute no other object may hold the value in (default the target attribute).' }),
    ),
    counter: Type.Optional(
      Type.Object(
        {
          from: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 2 }),
          to: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 99 }),
        },
        { additionalProperties: false, description: 'The values of `counter` (default 2..99; at most 1000 values).' },
      ),
    ),
    caseSensitive: Type.Optional(Type.Boolean({ description: 'Default false: JSmith and jsmith are the same value.' })),
    keepOnRename: Type.Optional(Type.Boolean({ description: 'Default true: the value is kept for the object for life, whatever its inputs become.' })),
    quarantineDays: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 3650, description: 'Default 90: days a released value stays unavailable after its object is purged.' }),
    ),
  },
  { additionalProperties: false },
);
